// ParseCache: an agent resends its whole conversation every turn, and a turn adds a few
// messages at the end (and moves its cache marker). The cache keeps the last requests'
// bytes, where each message of their list lies, and their parsed messages; a request
// whose leading bytes equal a kept one's is parsed from the first message that differs:
// the messages before it are taken as they were parsed last time. The result equals a
// parse of the whole body (same messages, hashes, fields); any doubt (a change before the
// list, a list that cannot be scanned, a parse error) falls back to the whole parse, so
// errors name the same fields as before.
//
// Anthropic Messages and Chat Completions (one list element per message); a Responses
// body is always parsed whole (its items are grouped into messages).
//
// Bounded: at most kMaxEntries requests and kMaxBytes of memory, counted as kMemoryPerByte
// times their bodies' size (the body, its messages as JSON values and as engine
// messages), least recently used first out. Thread-safe: an entry is
// taken out while a request uses it, so two requests never share one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "daemon/net/server.h"
#include "daemon/proxy/wire.h"

namespace missy::proxy {

// A request as parsed, with where its messages lie in its body.
struct ParsedBody {
  ParsedRequest request;
  size_t list_open = std::string_view::npos;   // offset of the message list's '['
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) of each list element
  size_t reused = 0;  // messages taken from the previous parse (0: parsed whole)
};

// Where the message list of `parsed` closes (its ']') in `text`, the body it was parsed
// from; npos when not known.
size_t ListCloseOf(std::string_view text, const ParsedBody& parsed);

// Where the top-level member `key`'s array opens in a JSON object's text, and the
// [begin, end) of each of its elements. False when the text cannot be scanned (not an
// object, no such array, malformed). Exposed for tests.
bool ScanList(std::string_view text, std::string_view key, size_t& list_open,
              std::vector<std::pair<size_t, size_t>>& spans);

// Compares a request body, as it arrives, with the kept bodies of its API (ParseCache::
// Watch): the compare of megabytes runs while the agent's sender refills the socket, not
// after. Holds the bodies it compares with (a kept body it holds stays out of the pool).
class PrefixWatch final : public BodyWatch {
 public:
  explicit PrefixWatch(std::vector<std::shared_ptr<const std::string>> kept);
  void Arrived(size_t offset, std::string_view bytes) override;
  // How many leading bytes `kept` shares with what arrived (nullopt: not one it watched).
  // Meant once every byte arrived (net gives the request a watch only then).
  std::optional<size_t> Common(const std::string* kept) const;

 private:
  struct Candidate {
    std::shared_ptr<const std::string> body;
    size_t same = 0;
    bool diverged = false;
  };
  std::vector<Candidate> candidates_;
};

class ParseCache {
 public:
  using FullParse = Result<ParsedRequest> (*)(std::string_view);
  static constexpr size_t kMaxEntries = 16;
  static constexpr size_t kMaxBytes = size_t{128} << 20;
  static constexpr size_t kMemoryPerByte = 4;

  // Parses `body` with `parse` (the codec's whole parse), reusing the kept request of
  // the same API whose bytes match `body` longest. `watch`: a PrefixWatch from Watch that
  // saw all of `body` arrive (its compares are used; it is let go before the kept body
  // goes back to the pool), or null.
  Result<ParsedBody> Parse(Api api, std::string_view body, FullParse parse,
                           std::shared_ptr<BodyWatch> watch = nullptr);
  // A watch comparing a body of `api` with the requests kept now; null when none is.
  std::shared_ptr<PrefixWatch> Watch(Api api) const;
  // Keeps a request that was parsed from `body` for the next turn of its conversation.
  void Keep(std::string body, ParsedBody parsed);

  size_t entries() const;

 private:
  struct Entry {
    std::shared_ptr<std::string> body;  // shared with the watches of bodies arriving
    ParsedBody parsed;
  };
  // Takes out the kept entry of `api` with the longest common prefix with `body`, among
  // those whose first history message is in it; `same` is set to that prefix's length.
  bool TakeBest(Api api, std::string_view body, const PrefixWatch* watch, Entry& out,
                size_t& same);

  mutable std::mutex mu_;
  std::list<Entry> entries_;  // most recently kept first
  size_t bytes_ = 0;  // EstimatedBytes of the kept entries
};

}  // namespace missy::proxy
