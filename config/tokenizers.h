// TokenizerRegistry: the one place that reads tokenizer rank files. Each exact encoding
// (o200k_base, cl100k_base) is read from `<data_dir>/<encoding>.tiktoken`, checked
// against its pinned sha256, and parsed once, on first use; every later Get returns the
// same shared, immutable counter. "heuristic" needs no file. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/token_counter.h"

namespace missy {

class BpeEncoding;

class TokenizerRegistry {
 public:
  // `data_dir` empty: DefaultDataDir().
  explicit TokenizerRegistry(std::string data_dir = {});
  ~TokenizerRegistry();
  TokenizerRegistry(const TokenizerRegistry&) = delete;
  TokenizerRegistry& operator=(const TokenizerRegistry&) = delete;

  // The build's data directory (the MISSY_DATA_DIR compile definition).
  static std::string DefaultDataDir();

  // "o200k_base", "cl100k_base" or "heuristic". Errors name the file:
  // NotFound (file missing or unreadable), Corruption (sha256 mismatch or malformed),
  // InvalidArgument (unknown encoding). A failed load is retried on the next call.
  Result<std::shared_ptr<const TokenCounter>> Get(std::string_view encoding) const;

  // Loads both exact encodings now (startup check); the first error, if any.
  Status LoadAll() const;

  const std::string& data_dir() const { return data_dir_; }
  // Where `encoding`'s rank file is expected.
  std::string RankFilePath(std::string_view encoding) const;

 private:
  struct Slot {
    std::mutex mu;
    std::shared_ptr<const BpeEncoding> encoding;
  };
  Result<std::shared_ptr<const BpeEncoding>> Load(std::string_view encoding) const;

  std::string data_dir_;
  mutable Slot o200k_;
  mutable Slot cl100k_;
  std::shared_ptr<const TokenCounter> heuristic_;
};

}  // namespace missy
