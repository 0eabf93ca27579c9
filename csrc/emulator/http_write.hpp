// Writing HTTP/1.1 responses: status lines and chunked-body framing, for the emulator.
#pragma once
#include <string>
#include <string_view>

namespace pytps {

const char* reason_phrase(int status);

// "HTTP/1.1 <status> <reason>\r\n"
void append_status_line(std::string& out, int status);

// One chunk of a chunked body: size in hex, CRLF, payload, CRLF.
void append_chunk(std::string& out, std::string_view payload);

}  // namespace pytps
