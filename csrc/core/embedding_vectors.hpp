// An OpenAI-style embeddings body with its vectors counted instead of read (issue 42).
//
// pytps reads an embeddings response only to judge it (pytps.measure.bodies): one vector per
// input, every vector the same non-empty length, no NaN or infinity. Parsing the body into Python
// objects made a float object per component (384 per input for a small model), most of an
// embeddings request's client CPU. empty_float_vectors() hands back the body with each
// data[i].embedding that is a non-empty array of JSON float literals emptied to [] (every other
// byte kept as it is), and the number of components of each one it emptied: the caller parses
// the small text and takes those counts as the vectors' lengths.
//
// A vector is emptied only when what Python's json.loads makes of it is certain: every element
// a number literal with a fraction or an exponent (a float, never an int) whose magnitude is
// below 10^308 by its digits and exponent (so it reads as a finite double). The whole body must
// be strict RFC 8259 JSON (pytps::json::JsonReader validates it), a top-level object with one
// "data" key at most, each element of data an object with one "embedding" key at most (keys
// compared decoded). Anything else: false, nothing emptied, and the caller parses the body whole.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pytps {

struct CountedVector {
    size_t element;     // its index in the body's "data" array
    size_t components;  // its number of elements (>= 1)
};

// true: out holds the body with the vectors in `counted` emptied (at least one). false: the body
// is not of that shape, or no vector in it could be emptied (out and counted are then cleared).
bool empty_float_vectors(std::string_view body, std::string& out, std::vector<CountedVector>& counted);

}  // namespace pytps
