// Errors thrown by the core. The bindings translate each to the class of the same
// name in pytps.errors.
#pragma once
#include <stdexcept>
#include <string>

namespace pytps {

// The byte stream breaks the protocol in a way that cannot be recovered locally
// (for example a line longer than the parser's bound).
class ProtocolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace pytps
