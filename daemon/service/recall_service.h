// RecallService: gives the model back what summaries replaced (DESIGN.md §5, "lossless is
// usable"). A recall answers either
//  - a query: full-text search over this session's own stored messages and summaries
//    (never other sessions, never memory items), the most relevant first; or
//  - a summary id (one the context named in its header): the messages it covers, in
//    order, paged by after_seq;
// with the originals, bounded to max_tokens. One message larger than the whole limit is
// returned middle-out truncated rather than not at all. `text` is a ready rendering for
// a tool result (the missy_recall tool, docs/API.md). Reads only; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/message.h"
#include "core/session.h"
#include "core/status.h"
#include "daemon/service/service_deps.h"
#include "storage/records.h"

namespace missy {

struct RecallRequest {
  std::string session_id;
  std::string query;  // exactly one of query and summary_id
  std::string summary_id;
  int64_t max_tokens = 4000;
  int64_t after_seq = 0;  // summary_id paging: only messages after this seq
};

struct RecalledMessage {
  StoredMessage message;
  bool truncated = false;  // content cut middle-out to fit max_tokens
};

struct RecallOutcome {
  std::vector<RecalledMessage> messages;  // seq order
  std::vector<SummaryRecord> summaries;   // query hits among the session's summaries
  int64_t tokens = 0;                     // of what is returned
  bool truncated = false;                 // more matched than max_tokens allowed
  int64_t next_after_seq = 0;             // summary_id paging: pass it back (0: no more)
  std::string text;                       // the answer rendered for a tool result
};

class RecallService {
 public:
  static constexpr int64_t kMaxTokensLimit = 100000;
  static constexpr int kMaxQueryHits = 40;

  explicit RecallService(const ServiceDeps& deps) : deps_(deps) {}

  // Runs on a worker (it reads SQLite and may wait for the search index); `done` is
  // called there.
  void Recall(RecallRequest request, Done<RecallOutcome> done);

  // Synchronous form (tests, workers).
  Result<RecallOutcome> RecallNow(const RecallRequest& request);

 private:
  Result<RecallOutcome> BySummary(const RecallRequest& request, const Session& session);
  Result<RecallOutcome> ByQuery(const RecallRequest& request, const Session& session);

  ServiceDeps deps_;
};

}  // namespace missy
