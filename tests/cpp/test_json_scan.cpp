// Known-answer tests of pytps::json::JsonReader (C++ only, no binding): compiled and run by
// tests/core/test_json_scan.py. Prints one line per failed check and exits non-zero.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/json_scan.hpp"

using pytps::json::JsonReader;
using pytps::json::Type;

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        ++checks;                                                                \
        if (!(cond)) {                                                           \
            ++failures;                                                          \
            std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
        }                                                                        \
    } while (0)

static bool valid(std::string_view text) {
    JsonReader r(text);
    return r.skip_value() && r.finish();
}

// The decoded value of a top-level JSON string, or "<fail>".
static std::string str(std::string_view text) {
    JsonReader r(text);
    std::string out;
    if (!r.read_string(out) || !r.finish()) return "<fail>";
    return out;
}

static bool dbl(std::string_view text, double& out) {
    JsonReader r(text);
    return r.read_double(out) && r.finish();
}

static void test_strings() {
    CHECK(str(R"("abc")") == "abc");
    CHECK(str(R"("")") == "");
    CHECK(str(R"("\"\\\/\b\f\n\r\t")") == "\"\\/\b\f\n\r\t");
    CHECK(str(R"("\u00e9\u4E2D")") == "\xc3\xa9\xe4\xb8\xad");
    CHECK(str(R"("\u0000")") == std::string(1, '\0'));
    CHECK(str(R"("\ud83d\ude00")") == "\xf0\x9f\x98\x80");
    CHECK(str(R"("\ud800")") == "\xef\xbf\xbd");          // lone high surrogate
    CHECK(str(R"("\udc00x")") == "\xef\xbf\xbdx");        // lone low surrogate
    CHECK(str(R"("\ud800\u0041")") == "\xef\xbf\xbd" "A");  // high + non-surrogate
    CHECK(str(R"("\ud800\ud800\udc00")") == "\xef\xbf\xbd\xf0\x90\x80\x80");
    CHECK(str(R"("\udbff\udfff")") == "\xf4\x8f\xbf\xbf");
    CHECK(str("\"\xf0\x9f\x98\x80 \xc3\xa9\"") == "\xf0\x9f\x98\x80 \xc3\xa9");
    // Invalid UTF-8: one U+FFFD per maximal subpart (Python's decode(errors="replace")).
    CHECK(str("\"\xff\"") == "\xef\xbf\xbd");
    CHECK(str("\"\xe2\x82\"") == "\xef\xbf\xbd");
    CHECK(str("\"\xed\xa0\x80\"") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    CHECK(str("\"\xc0\xaf\"") == "\xef\xbf\xbd\xef\xbf\xbd");
    CHECK(str("\"\xf4\x90\x80\x80\"") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    CHECK(str("\"ab\xf0\x9f\x98\"") == "ab\xef\xbf\xbd");
    CHECK(str("\"\x7f\"") == "\x7f");
    // Rejected.
    CHECK(str("\"a\nb\"") == "<fail>");
    CHECK(str("\"\x01\"") == "<fail>");
    CHECK(str(R"("\x")") == "<fail>");
    CHECK(str(R"("\u12")") == "<fail>");
    CHECK(str(R"("\u12G4")") == "<fail>");
    CHECK(str(R"("\ud800\u12G4")") == "<fail>");
    CHECK(str(R"("abc)") == "<fail>");
    CHECK(str(R"("abc\")") == "<fail>");
    CHECK(str(R"('a')") == "<fail>");
    // A long string crosses the 8-byte fast path in every alignment.
    for (size_t pad = 0; pad < 17; ++pad) {
        const std::string body = std::string(pad, 'x') + "\xc3\xa9\\n" + std::string(pad, 'y');
        CHECK(str("\"" + body + "\"") == std::string(pad, 'x') + "\xc3\xa9\n" + std::string(pad, 'y'));
        CHECK(!valid("\"" + std::string(pad, 'x') + "\x1f\""));
    }
}

static void test_numbers() {
    int64_t i = 7;
    double d = 7;
    {
        JsonReader r("9223372036854775807");
        CHECK(r.read_int(i) && i == INT64_MAX && r.finish());
    }
    {
        JsonReader r("-9223372036854775808");
        CHECK(r.read_int(i) && i == INT64_MIN && r.finish());
    }
    {
        JsonReader r("-0");
        CHECK(r.read_int(i) && i == 0 && r.finish());
    }
    {
        // Too big for int64: read_int says no without failing, read_double reads it.
        JsonReader r("9223372036854775808");
        CHECK(!r.read_int(i) && !r.failed());
        CHECK(r.read_double(d) && d == 9223372036854775808.0 && r.finish());
    }
    {
        JsonReader r("1.5");
        CHECK(!r.read_int(i) && !r.failed() && r.offset() == 0);
        CHECK(r.read_double(d) && d == 1.5);
    }
    {
        JsonReader r("1e2");
        CHECK(!r.read_int(i) && !r.failed());
    }
    CHECK(dbl("-12.5E+2", d) && d == -1250.0);
    CHECK(dbl("1e-2", d) && d == 0.01);
    CHECK(dbl("4.9e-324", d) && d > 0 && d < 1e-323);  // smallest subnormal
    // Out of range: infinities for huge magnitudes, zero for tiny ones. Tiny numbers
    // used to become infinity (from_chars reports both as result_out_of_range).
    CHECK(dbl("1e400", d) && std::isinf(d) && d > 0);
    CHECK(dbl("-1e400", d) && std::isinf(d) && d < 0);
    CHECK(dbl("1e-400", d) && d == 0.0 && !std::signbit(d));
    CHECK(dbl("-1e-400", d) && d == 0.0 && std::signbit(d));
    CHECK(dbl("2.4e-324", d) && d == 0.0);
    CHECK(dbl("0.00000000000000000001e-310", d) && d == 0.0);
    CHECK(dbl("100000000000000000000e300", d) && std::isinf(d));
    CHECK(dbl("1000000000000000000000000000e-330", d) && d == 1e-303);
    CHECK(dbl("1e99999999999999999999999", d) && std::isinf(d));
    CHECK(dbl("1e-99999999999999999999999", d) && d == 0.0);
    CHECK(dbl("0e99999", d) && d == 0.0);
    for (const char* bad : {"01", "1.", ".5", "-", "+1", "1e", "1e+", "0x10", "NaN", "Infinity", "-Infinity", "1.e3",
                            "--1", "-a", "1e5.0"}) {
        CHECK(!valid(bad));
    }
}

static void test_literals_and_containers() {
    for (const char* ok : {"true", "false", "null", " \t\r\n1 \n", "{}", "[]", "[[],{}]", R"({"a":[1,{"b":null}]})",
                           R"([1,"x",true,false,null,-0.5e1])", R"({ "a" : 1 , "b" : [ ] })"}) {
        CHECK(valid(ok));
    }
    for (const char* bad : {"", " ", "tru", "nul", "True", "truex", "[1,]", R"({"a":1,})", R"({"a" 1})", "{1:2}",
                            "[1 2]", "[1", R"({"a":1)", "]", "}", "[,1]", "{,}", "1 2", R"({"a"})", R"({"a":})",
                            "[1]]", "/*c*/1", "[1,,2]", "\xef\xbb\xbf{}"}) {
        CHECK(!valid(bad));
    }
    // Nesting: kMaxDepth levels are fine, one more is an error (not a stack overflow).
    const int n = JsonReader::kMaxDepth;
    CHECK(valid(std::string(n, '[') + std::string(n, ']')));
    CHECK(!valid(std::string(n + 1, '[') + std::string(n + 1, ']')));
    CHECK(!valid(std::string(100000, '[')));
    {
        JsonReader r(R"([1, 2)");
        CHECK(!(r.skip_value() && r.finish()));
        CHECK(std::string(r.error()) == "unexpected end of input inside a container");
        CHECK(r.error_offset() == 5);
    }
}

static void test_pull_api() {
    // The recorder's use: one field out of a streamed chunk.
    const std::string chunk =
        R"({"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"H\u00e9 \"x\""},)"
        R"("finish_reason":null}],"usage":{"completion_tokens":3}})";
    JsonReader r(chunk);
    std::string content;
    int64_t tokens = -1;
    std::string_view key;
    CHECK(r.begin_object());
    while (r.next_key(key)) {
        if (key == "choices") {
            CHECK(r.begin_array());
            while (r.next_element()) {
                CHECK(r.begin_object());
                std::string_view k2;
                while (r.next_key(k2)) {
                    if (k2 == "delta") {
                        CHECK(r.begin_object());
                        std::string_view k3;
                        while (r.next_key(k3)) {
                            if (k3 == "content") CHECK(r.read_string(content));
                            else CHECK(r.skip_value());
                        }
                    } else {
                        CHECK(r.skip_value());
                    }
                }
            }
        } else if (key == "usage") {
            CHECK(r.begin_object());
            std::string_view k2;
            while (r.next_key(k2)) CHECK(k2 == "completion_tokens" && r.read_int(tokens));
        } else {
            CHECK(r.skip_value());
        }
    }
    CHECK(r.finish());
    CHECK(content == "H\xc3\xa9 \"x\"");
    CHECK(tokens == 3);

    // Keys: escapes decoded; invalid UTF-8 replaced (a raw invalid key used to be returned as is).
    JsonReader k(R"({"\u0061b":1,"c\ud83d\ude00":2,"x)" "\xfe" R"(y":3})");
    std::string_view key2;
    CHECK(k.begin_object() && k.next_key(key2) && key2 == "ab" && k.skip_value());
    CHECK(k.next_key(key2) && key2 == "c\xf0\x9f\x98\x80" && k.skip_value());
    CHECK(k.next_key(key2) && key2 == "x\xef\xbf\xbdy" && k.skip_value());
    CHECK(!k.next_key(key2) && !k.failed() && k.finish());

    // A typed read of the wrong type returns false and neither fails nor moves the reader.
    JsonReader w(R"(["s", 1, true, null])");
    std::string s;
    int64_t i;
    bool b;
    CHECK(w.begin_array() && w.next_element());
    CHECK(!w.read_int(i) && !w.read_bool(b) && !w.read_null() && !w.failed());
    CHECK(w.read_string(s) && s == "s" && w.next_element());
    CHECK(!w.read_string(s) && !w.read_null() && !w.failed() && w.read_int(i) && i == 1);
    CHECK(w.next_element() && w.peek() == Type::Bool && w.read_bool(b) && b);
    CHECK(w.next_element() && w.read_null() && !w.next_element() && w.finish());

    std::string_view raw;
    JsonReader rr(R"("a\nb")");
    CHECK(rr.read_raw_string(raw) && raw == "a\\nb" && rr.finish());
}

static void test_sanitize() {
    std::string out;
    pytps::json::append_utf8_sanitized(out, "a\xff" "b\xe2\x82" "c\xf0\x9f\x98\x80\xed\xbf\xbf");
    CHECK(out == "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

int main() {
    test_strings();
    test_numbers();
    test_literals_and_containers();
    test_pull_api();
    test_sanitize();
    std::printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
