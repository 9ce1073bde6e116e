// SummaryService: the summary tree of a session, and the seams the summarizer uses.
//  - LoadUncovered: what a summarization job works on (a snapshot of seqs: the
//    messages after the last summarized one, and the summaries not yet condensed).
//  - Commit: stores a summary atomically with its coverage (and its audit event); a
//    message appended meanwhile is neither lost nor covered twice, since coverage is
//    the snapshot's seq range.
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/message.h"
#include "core/session.h"
#include "daemon/service/service_deps.h"
#include "storage/records.h"

namespace missy {

struct UncoveredHistory {
  Session session;
  int64_t covered_through_seq = 0;         // highest seq a leaf summary covers (0: none)
  std::vector<StoredMessage> messages;     // seq > covered_through_seq, in order
  std::vector<SummaryRecord> uncondensed;  // summaries without a parent, oldest first
};

struct SummaryExpansion {
  SummaryRecord summary;
  std::vector<SummaryRecord> children;  // a condensed summary's inputs
  std::vector<StoredMessage> messages;  // the messages it covers
};

class SummaryService {
 public:
  explicit SummaryService(const ServiceDeps& deps) : deps_(deps) {}

  Result<std::vector<SummaryRecord>> List(const std::string& session_id);
  Result<SummaryExpansion> Expand(const std::string& summary_id);

  Result<UncoveredHistory> LoadUncovered(const std::string& session_id);
  void Commit(SummaryRecord summary, Done<SummaryRecord> done);

 private:
  ServiceDeps deps_;
};

}  // namespace missy
