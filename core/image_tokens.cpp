#include "core/image_tokens.h"

#include <algorithm>
#include <cmath>

namespace missy {
namespace {

// Enough of an encoding for its size: a JPEG's frame header may follow a large EXIF block.
constexpr size_t kMaxDecodedBytes = 64 * 1024;

uint32_t Be16(std::string_view b, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) << 8 |
         static_cast<unsigned char>(b[at + 1]);
}
uint32_t Be32(std::string_view b, size_t at) { return Be16(b, at) << 16 | Be16(b, at + 2); }
uint32_t Le16(std::string_view b, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8 |
         static_cast<unsigned char>(b[at]);
}
uint32_t Le24(std::string_view b, size_t at) {
  return Le16(b, at) | static_cast<uint32_t>(static_cast<unsigned char>(b[at + 2])) << 16;
}

std::optional<ImageSize> Sized(uint32_t width, uint32_t height) {
  if (width == 0 || height == 0) return std::nullopt;
  return ImageSize{width, height};
}

// A JPEG's size: the first start-of-frame segment (SOF0..SOF15 but DHT, JPG and DAC).
std::optional<ImageSize> JpegSize(std::string_view b) {
  size_t p = 2;
  while (p + 4 <= b.size()) {
    if (static_cast<unsigned char>(b[p]) != 0xFF) return std::nullopt;
    const unsigned char marker = static_cast<unsigned char>(b[p + 1]);
    if (marker == 0xFF) {  // fill byte
      ++p;
      continue;
    }
    if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
      p += 2;  // no length
      continue;
    }
    const size_t length = Be16(b, p + 2);
    const bool frame =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (frame) {
      if (p + 9 > b.size()) return std::nullopt;
      return Sized(Be16(b, p + 7), Be16(b, p + 5));
    }
    if (length < 2) return std::nullopt;
    p += 2 + length;
  }
  return std::nullopt;
}

std::optional<ImageSize> WebpSize(std::string_view b) {
  if (b.size() < 30) return std::nullopt;
  const std::string_view chunk = b.substr(12, 4);
  if (chunk == "VP8X") return Sized(Le24(b, 24) + 1, Le24(b, 27) + 1);
  if (chunk == "VP8 ") return Sized(Le16(b, 26) & 0x3FFF, Le16(b, 28) & 0x3FFF);
  if (chunk == "VP8L" && static_cast<unsigned char>(b[20]) == 0x2F) {
    const uint32_t bits = Le16(b, 21) | static_cast<uint32_t>(Le16(b, 23)) << 16;
    return Sized((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1);
  }
  return std::nullopt;
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

// The first bytes `b64` encodes, at most `max` (standard or URL-safe alphabet, white
// space skipped); stops at padding or at the first character outside the alphabet.
std::string DecodePrefix(std::string_view b64, size_t max) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : b64) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;  // wrapped lines
    const int v = Base64Value(c);
    if (v < 0 || out.size() >= max) break;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A marker's width or height: 1 to 10 digits (a PNG's are 32-bit); -1 otherwise.
int64_t Dimension(std::string_view digits) {
  if (digits.empty() || digits.size() > 10) return -1;
  int64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

std::optional<ImageSize> ImageSizeOf(std::string_view b) {
  if (b.size() >= 24 && b.substr(0, 8) == "\x89PNG\r\n\x1a\n" && b.substr(12, 4) == "IHDR") {
    return Sized(Be32(b, 16), Be32(b, 20));
  }
  if (b.size() >= 10 && (b.substr(0, 6) == "GIF87a" || b.substr(0, 6) == "GIF89a")) {
    return Sized(Le16(b, 6), Le16(b, 8));
  }
  if (b.size() >= 4 && static_cast<unsigned char>(b[0]) == 0xFF &&
      static_cast<unsigned char>(b[1]) == 0xD8) {
    return JpegSize(b);
  }
  if (b.size() >= 16 && b.substr(0, 4) == "RIFF" && b.substr(8, 4) == "WEBP") return WebpSize(b);
  return std::nullopt;
}

std::optional<ImageSize> DataUrlImageSize(std::string_view url) {
  if (!url.starts_with("data:")) return std::nullopt;
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos ||
      url.substr(0, comma).find(";base64") == std::string_view::npos) {
    return std::nullopt;
  }
  return Base64ImageSize(url.substr(comma + 1));
}

std::optional<ImageSize> Base64ImageSize(std::string_view b64) {
  // A PNG, GIF or WebP header is in its first 30 bytes; only a JPEG needs more.
  const std::string head = DecodePrefix(b64, 32);
  if (std::optional<ImageSize> size = ImageSizeOf(head)) return size;
  if (head.size() < 2 || static_cast<unsigned char>(head[0]) != 0xFF ||
      static_cast<unsigned char>(head[1]) != 0xD8) {
    return std::nullopt;
  }
  return ImageSizeOf(DecodePrefix(b64, kMaxDecodedBytes));
}

int64_t AnthropicImageTokens(ImageSize size) {
  double w = static_cast<double>(size.width), h = static_cast<double>(size.height);
  const double scale = std::min({1.0, 1568.0 / std::max(w, h), std::sqrt(1'150'000.0 / (w * h))});
  w = std::max(1.0, std::floor(w * scale));  // a side is never scaled below a pixel
  h = std::max(1.0, std::floor(h * scale));
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(w * h / 750.0)));
}

int64_t OpenAiImageTokens(ImageSize size, std::string_view detail) {
  if (detail == "low") return 85;
  double w = static_cast<double>(size.width), h = static_cast<double>(size.height);
  const double fit = std::min(1.0, 2048.0 / std::max(w, h));
  w *= fit;
  h *= fit;
  const double shortest = std::min(1.0, 768.0 / std::min(w, h));
  w = std::max(1.0, std::floor(w * shortest));
  h = std::max(1.0, std::floor(h * shortest));
  const int64_t tiles =
      CeilDiv(static_cast<int64_t>(w), 512) * CeilDiv(static_cast<int64_t>(h), 512);
  return 85 + 170 * tiles;
}

std::string ImageMarker(std::string_view api_and_type, std::optional<ImageSize> size) {
  std::string out(api_and_type);
  if (size) out += ";" + std::to_string(size->width) + "x" + std::to_string(size->height);
  return out;
}

int64_t ImagePartTokens(const ContentPart& part, int64_t unknown) {
  const std::string& url = part.image_url;
  if (part.detail == "low") return 85;
  if (url.starts_with("data:")) {
    const std::optional<ImageSize> size = DataUrlImageSize(url);
    return size ? OpenAiImageTokens(*size, part.detail) : unknown;
  }
  // A marker "<api>:<type>;<width>x<height>" (not a URL, which may hold ';' too).
  if (!url.starts_with("anthropic:") && !url.starts_with("openai:")) return unknown;
  const size_t semi = url.find(';');
  if (semi == std::string::npos) return unknown;
  const std::string_view dims = std::string_view(url).substr(semi + 1);
  const size_t x = dims.find('x');
  if (x == std::string_view::npos) return unknown;
  const int64_t w = Dimension(dims.substr(0, x)), h = Dimension(dims.substr(x + 1));
  if (w <= 0 || h <= 0) return unknown;
  return url.starts_with("anthropic:") ? AnthropicImageTokens({w, h})
                                       : OpenAiImageTokens({w, h}, part.detail);
}

}  // namespace missy
