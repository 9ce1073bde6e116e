// Image costs (core/image_tokens.h): the size read from each format's header, the
// providers' published rules at their documented examples, and a message's count.
#include "core/image_tokens.h"

#include <gtest/gtest.h>

#include <string>

#include "core/token_counter.h"

namespace missy {
namespace {

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string Png(uint32_t w, uint32_t h) {
  return std::string("\x89PNG\r\n\x1a\n", 8) + Be32(13) + "IHDR" + Be32(w) + Be32(h) +
         std::string("\x08\x06\x00\x00\x00", 5);
}

std::string Base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n = static_cast<unsigned char>(bytes[i]) << 16 |
                       static_cast<unsigned char>(bytes[i + 1]) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out.push_back(k[(n >> s) & 63]);
  }
  if (i < bytes.size()) {  // the last one or two bytes, padded
    uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out.push_back(k[(n >> 18) & 63]);
    out.push_back(k[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? k[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

TEST(ImageTokens, ReadsTheSizeFromEachFormatsHeader) {
  std::optional<ImageSize> s = ImageSizeOf(Png(1280, 800));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->width, 1280);
  EXPECT_EQ(s->height, 800);

  s = ImageSizeOf(std::string("GIF89a\x40\x01\xF0\x00", 10));  // 320 x 240, little-endian
  ASSERT_TRUE(s);
  EXPECT_EQ(s->width, 320);
  EXPECT_EQ(s->height, 240);

  // A JPEG: SOI, an APP1 segment of 20 bytes to skip, then SOF0 (height 600, width 900).
  const std::string jpeg = std::string("\xFF\xD8\xFF\xE1\x00\x14", 6) + std::string(18, 'x') +
                           std::string("\xFF\xC0\x00\x11\x08\x02\x58\x03\x84\x03", 10);
  s = ImageSizeOf(jpeg);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->width, 900);
  EXPECT_EQ(s->height, 600);

  // WebP, extended (VP8X): width - 1 and height - 1 in 24 bits each.
  std::string webp = "RIFF" + std::string(4, '\0') + "WEBPVP8X" + std::string(8, '\0');
  webp += std::string("\x7F\x07\x00\x37\x04\x00", 6);  // 1919 + 1, 1079 + 1
  s = ImageSizeOf(webp);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->width, 1920);
  EXPECT_EQ(s->height, 1080);

  EXPECT_FALSE(ImageSizeOf("not an image"));
  EXPECT_FALSE(ImageSizeOf(Png(1280, 800).substr(0, 20)));  // ends too early
  EXPECT_FALSE(ImageSizeOf(jpeg.substr(0, 24)));            // before its frame header
  EXPECT_FALSE(ImageSizeOf(Png(0, 800)));                   // no pixels
}

TEST(ImageTokens, ReadsTheSizeOfABase64DataUrl) {
  std::optional<ImageSize> s = DataUrlImageSize("data:image/png;base64," + Base64(Png(640, 480)));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->width, 640);
  EXPECT_EQ(s->height, 480);
  // A JPEG whose frame header lies past the first 32 bytes (after an EXIF block).
  const std::string jpeg = std::string("\xFF\xD8\xFF\xE1\x01\x02", 6) + std::string(256, 'x') +
                           std::string("\xFF\xC0\x00\x11\x08\x02\x58\x03\x84\x03", 10);
  s = Base64ImageSize(Base64(jpeg));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->width, 900);
  EXPECT_EQ(s->height, 600);
  EXPECT_FALSE(DataUrlImageSize("https://example.com/a.png"));
  EXPECT_FALSE(DataUrlImageSize("data:image/png," + Png(640, 480)));  // not base64
  EXPECT_FALSE(DataUrlImageSize("data:image/png;base64,!!!!"));
  // Base64 wrapped in lines of 76 characters, as some encoders write it.
  std::string wrapped = Base64(Png(640, 480));
  wrapped.insert(20, "\r\n");
  s = DataUrlImageSize("data:image/png;base64," + wrapped);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->width, 640);
}

TEST(ImageTokens, FollowTheProvidersRulesAtTheirExamples) {
  // OpenAI's examples: 1024 x 1024 high detail is 765; 2048 x 4096 is 1105; low is 85.
  EXPECT_EQ(OpenAiImageTokens({1024, 1024}, "high"), 765);
  EXPECT_EQ(OpenAiImageTokens({2048, 4096}, "auto"), 1105);
  EXPECT_EQ(OpenAiImageTokens({2048, 4096}, "low"), 85);
  EXPECT_EQ(OpenAiImageTokens({100, 100}, ""), 85 + 170);
  // Anthropic: width x height / 750; 1000 x 1000 is about 1,334; a 4000 x 3000 photo is
  // scaled to about 1.15 megapixels first (1238 x 928), and a 200 x 200 icon is 54.
  EXPECT_EQ(AnthropicImageTokens({1000, 1000}), 1334);
  EXPECT_EQ(AnthropicImageTokens({4000, 3000}), 1532);
  EXPECT_EQ(AnthropicImageTokens({200, 200}), 54);
  EXPECT_EQ(AnthropicImageTokens({20000, 100}), 15);  // the long edge to 1568 px: 1568 x 7
  // A side never scales below a pixel: a 4000 x 1 strip is one tile, not none.
  EXPECT_EQ(OpenAiImageTokens({4000, 1}, "high"), 85 + 170 * 4);
  EXPECT_EQ(AnthropicImageTokens({4000, 1}), 3);
}

TEST(ImageTokens, APartCostsByItsDataUrlOrMarkerElseTheFixedCost) {
  ContentPart part;
  part.kind = ContentPart::Kind::kImage;
  part.image_url = "data:image/png;base64," + Base64(Png(1024, 1024));
  EXPECT_EQ(ImagePartTokens(part, 999), 765);
  part.detail = "low";
  EXPECT_EQ(ImagePartTokens(part, 999), 85);
  part.detail.clear();
  part.image_url = ImageMarker("anthropic:image", ImageSize{1000, 1000});
  EXPECT_EQ(part.image_url, "anthropic:image;1000x1000");
  EXPECT_EQ(ImagePartTokens(part, 999), 1334);
  part.image_url = ImageMarker("openai:input_image", ImageSize{2048, 4096});
  EXPECT_EQ(ImagePartTokens(part, 999), 1105);
  for (const char* unknown :
       {"anthropic:document", "https://example.com/a;1x1", "x;5x5", "openai:input_image;0x5",
        "anthropic:image;12x", "data:image/png;base64,AAAA"}) {
    part.image_url = unknown;
    EXPECT_EQ(ImagePartTokens(part, 999), 999) << unknown;
  }

  // A message: its text, then each image by its size.
  Message m;
  m.role = Role::kUser;
  m.content_form = ContentForm::kParts;
  m.parts.push_back({ContentPart::Kind::kText, "look", {}, {}});
  ContentPart a;
  a.kind = ContentPart::Kind::kImage;
  a.image_url = "data:image/png;base64," + Base64(Png(100, 100));
  m.parts.push_back(a);
  const MessageTokenCounter counter(std::make_shared<HeuristicTokenCounter>());
  Message text_only = m;
  text_only.parts.pop_back();
  EXPECT_EQ(counter.CountMessage(m) - counter.CountMessage(text_only), 85 + 170);
  EXPECT_EQ(counter.CountImages(m), 85 + 170);
}

}  // namespace
}  // namespace missy
