// What an image costs a model: its size read from the first bytes of its encoding (PNG,
// GIF, JPEG, WebP), then the provider's published rule. Anthropic: width × height / 750
// after scaling to at most 1568 px on the long edge and 1.15 megapixels. OpenAI (high or
// auto detail): scaled to fit 2048 × 2048, then the short side to at most 768, 85 tokens
// plus 170 per 512-px tile; low detail: 85. An image whose size cannot be read costs the
// configured fixed amount (context.image_tokens). Pure; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/message.h"

namespace missy {

struct ImageSize {
  int64_t width = 0;
  int64_t height = 0;
};

// The size an image's leading bytes give (PNG, GIF, JPEG, WebP); nullopt when they are not
// one of these or end too early.
std::optional<ImageSize> ImageSizeOf(std::string_view bytes);

// The size of the image a base64 text encodes (its first 32 bytes decoded, and up to
// 64 KiB for a JPEG, whose frame header may follow a large EXIF block), or in a base64
// `data:` URL.
std::optional<ImageSize> Base64ImageSize(std::string_view b64);
std::optional<ImageSize> DataUrlImageSize(std::string_view url);

int64_t AnthropicImageTokens(ImageSize size);
int64_t OpenAiImageTokens(ImageSize size, std::string_view detail);

// An engine image part that stands for an image kept elsewhere (the proxy's natives):
// "<api>:<type>" with ";<width>x<height>" when the size was read, e.g.
// "anthropic:image;1280x800". An "anthropic:" marker is counted by Anthropic's rule.
std::string ImageMarker(std::string_view api_and_type, std::optional<ImageSize> size);

// What an image part costs: by its data URL or its marker's size, else `unknown`.
int64_t ImagePartTokens(const ContentPart& part, int64_t unknown);

}  // namespace missy
