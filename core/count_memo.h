// CountMemo: the token counts of the last few large texts. The same long text is counted
// again and again — an agent's 20,000-token system prompt and tool definitions on every
// turn — and a count of 90 KB costs milliseconds. A hit is confirmed on the whole text
// (not a hash alone), so a count is never another text's.
//
// Bounded: texts of at least kMinBytes, at most kMaxEntries of them and kMaxBytes in all,
// the least recently used first out. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace missy {

class CountMemo {
 public:
  // An agent's system prompt alone is 10 to 20 KB (Claude Code's: 16 KB): it must fit.
  static constexpr size_t kMinBytes = 4 << 10;
  static constexpr size_t kMaxEntries = 64;
  static constexpr size_t kMaxBytes = 4 << 20;

  std::optional<int64_t> Find(std::string_view text) {
    if (text.size() < kMinBytes) return std::nullopt;
    const size_t hash = std::hash<std::string_view>()(text);
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->hash == hash && it->text == text) {
        entries_.splice(entries_.begin(), entries_, it);
        return it->count;
      }
    }
    return std::nullopt;
  }

  void Put(std::string_view text, int64_t count) {
    if (text.size() < kMinBytes || text.size() > kMaxBytes) return;
    const size_t hash = std::hash<std::string_view>()(text);
    std::lock_guard<std::mutex> lock(mu_);
    entries_.push_front(Entry{hash, std::string(text), count});
    bytes_ += text.size();
    while (entries_.size() > kMaxEntries || bytes_ > kMaxBytes) {
      bytes_ -= entries_.back().text.size();
      entries_.pop_back();
    }
  }

 private:
  struct Entry {
    size_t hash;
    std::string text;
    int64_t count;
  };
  std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
  size_t bytes_ = 0;
};

}  // namespace missy
