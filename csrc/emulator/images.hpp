// Image parts of chat requests: their size read from the encoded bytes' header (PNG, JPEG) and
// counted to prompt tokens by OpenAI's published tile rule for detail "high" (docs/emulator.md,
// "Images"), so that prefill time, and so TTFT, grows with the image as on real servers.
#pragma once
#include <cstdint>
#include <string_view>

namespace pytps {

struct ImageSize {
    int64_t width = 0;
    int64_t height = 0;
};

// The width and height of a base64-encoded PNG or JPEG (a data: URI or the bare base64), or
// {0, 0} when the bytes are neither.
ImageSize image_size_of(std::string_view encoded);

// OpenAI's rule: fit within 2048 x 2048, then scale the shorter side down to 768; tokens =
// 85 + 170 x the 512-pixel tiles that cover the result. An image of unknown size counts 85.
int64_t image_tokens(ImageSize size);

// Whether a string value is an image: a data:image/ URI, or (`bare_ok`: under Anthropic's
// source.data or Ollama's images) base64 that decodes to a PNG or JPEG header.
bool looks_like_image(std::string_view s, bool bare_ok);

}  // namespace pytps
