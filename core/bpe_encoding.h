// Exact byte-pair encoding for OpenAI's `o200k_base` and `cl100k_base`, equal to
// tiktoken's `encode_ordinary`: special-token strings such as "<|endoftext|>" in the
// text are ordinary text. Built from the contents of a `.tiktoken` rank file (the
// caller reads the file; core does no I/O). Immutable after construction; Encode and
// Count are safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/token_counter.h"

namespace missy {

class BpeEncoding final : public TokenCounter {
 public:
  // `name` selects the pre-tokenizer split pattern ("o200k_base" or "cl100k_base");
  // `file_contents` is the rank file: one "<base64 token> <rank>" per line.
  // InvalidArgument for an unknown name, Corruption for a malformed rank file.
  static Result<std::shared_ptr<const BpeEncoding>> FromTiktoken(std::string_view name,
                                                                 std::string_view file_contents);

  // The encodings FromTiktoken knows.
  static bool IsKnownEncoding(std::string_view name);

  ~BpeEncoding() override;
  BpeEncoding(const BpeEncoding&) = delete;
  BpeEncoding& operator=(const BpeEncoding&) = delete;

  // Token ids of `text`. Invalid UTF-8 never fails: bytes that are not part of a valid
  // sequence are encoded on their own.
  std::vector<uint32_t> Encode(std::string_view text) const;
  // Number of tokens Encode would return, without building the vector.
  int64_t Count(std::string_view text) const override;
  std::string Name() const override { return name_; }

  // Number of mergeable tokens in the rank file.
  size_t vocab_size() const;
  // The bytes of token `id`, or nullopt if no token has that id.
  std::optional<std::string_view> TokenBytes(uint32_t id) const;

 private:
  class Impl;
  BpeEncoding(std::string name, std::unique_ptr<Impl> impl);

  std::string name_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace missy
