// Fuzzes exact token counting (core/bpe_encoding.h) with both rank files, loaded once
// through the TokenizerRegistry from the build's data directory. Input: raw bytes as
// text (any bytes: invalid UTF-8 is valid input). Properties checked, for o200k_base and
// cl100k_base, all of which hold for byte-level BPE:
//  - Count(text) equals the number of ids Encode(text) returns;
//  - every token covers at least one byte: count <= byte length, and count > 0 when the
//    text is not empty;
//  - both calls are deterministic (a second call gives the same count and ids);
//  - encoding is lossless: the bytes of the ids, concatenated, are the text (every
//    single byte is a token of both rank files, so nothing is dropped or replaced).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/tokenizers.h"
#include "core/bpe_encoding.h"
#include "fuzz/fuzz_check.h"

namespace {

using missy::BpeEncoding;

struct Encodings {
  std::shared_ptr<const missy::TokenCounter> o200k;
  std::shared_ptr<const missy::TokenCounter> cl100k;
};

Encodings* loaded = nullptr;

std::shared_ptr<const missy::TokenCounter> LoadOrDie(const missy::TokenizerRegistry& registry,
                                                     std::string_view name) {
  auto counter = registry.Get(name);
  MISSY_FUZZ_CHECK(counter.ok(),
                   "cannot load " + std::string(name) + ": " + counter.status().message());
  MISSY_FUZZ_CHECK(dynamic_cast<const BpeEncoding*>(counter->get()) != nullptr,
                   std::string(name) + " is not an exact BPE encoding");
  return *counter;
}

void CheckEncoding(const BpeEncoding& bpe, std::string_view text) {
  const std::string name = bpe.Name();
  const int64_t count = bpe.Count(text);
  const std::vector<uint32_t> ids = bpe.Encode(text);
  MISSY_FUZZ_CHECK(
      count == static_cast<int64_t>(ids.size()),
      name + ": Count " + std::to_string(count) + " != Encode size " + std::to_string(ids.size()));
  MISSY_FUZZ_CHECK(count <= static_cast<int64_t>(text.size()),
                   name + ": " + std::to_string(count) + " tokens for " +
                       std::to_string(text.size()) + " bytes");
  MISSY_FUZZ_CHECK(text.empty() || count > 0, name + ": no tokens for non-empty text");
  MISSY_FUZZ_CHECK(bpe.Count(text) == count, name + ": Count is not deterministic");
  MISSY_FUZZ_CHECK(bpe.Encode(text) == ids, name + ": Encode is not deterministic");

  std::string decoded;
  decoded.reserve(text.size());
  for (uint32_t id : ids) {
    std::optional<std::string_view> bytes = bpe.TokenBytes(id);
    MISSY_FUZZ_CHECK(bytes.has_value() && !bytes->empty(),
                     name + ": Encode returned id " + std::to_string(id) + " with no bytes");
    decoded.append(*bytes);
  }
  MISSY_FUZZ_CHECK(decoded == text, name + ": decoding the ids does not give the text back");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  const missy::TokenizerRegistry registry;  // the build's MISSY_DATA_DIR
  loaded = new Encodings{LoadOrDie(registry, "o200k_base"), LoadOrDie(registry, "cl100k_base")};
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckEncoding(static_cast<const BpeEncoding&>(*loaded->o200k), text);
  CheckEncoding(static_cast<const BpeEncoding&>(*loaded->cl100k), text);
  return 0;
}
