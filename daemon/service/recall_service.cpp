#include "daemon/service/recall_service.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "core/session.h"
#include "core/truncation.h"
#include "daemon/service/counting.h"
#include "storage/search.h"
#include "storage/stores.h"

namespace missy {

namespace {

// "[seq 12 · assistant]" then the text, and each tool call as "→ name(arguments)".
std::string RenderMessage(const RecalledMessage& r) {
  const Message& m = r.message.message;
  std::string out = "[seq " + std::to_string(r.message.seq) + " · " + std::string(RoleName(m.role));
  if (m.role == Role::kTool && !m.tool_call_id.empty()) out += " for " + m.tool_call_id;
  out += r.truncated ? ", truncated]\n" : "]\n";
  out += m.PlainText();
  for (const ToolCall& c : m.tool_calls) {
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += "→ " + c.name + "(" + c.arguments + ")";
  }
  return out;
}

std::string RenderSummary(const SummaryRecord& s) {
  return "[summary " + s.id + " · depth " + std::to_string(s.depth) + ", seqs " +
         std::to_string(s.first_seq) + "-" + std::to_string(s.last_seq) + "]\n" + s.content;
}

void Render(RecallOutcome& out, const std::string& what) {
  if (out.messages.empty() && out.summaries.empty()) {
    out.text = "Nothing in this session's history matches " + what + ".";
    return;
  }
  for (const SummaryRecord& s : out.summaries) out.text += RenderSummary(s) + "\n\n";
  for (const RecalledMessage& m : out.messages) out.text += RenderMessage(m) + "\n\n";
  if (out.next_after_seq > 0) {
    out.text += "[more: recall again with after_seq " + std::to_string(out.next_after_seq) + "]";
  } else if (out.truncated) {
    out.text += "[more matched than max_tokens allows: narrow the query]";
  }
  while (!out.text.empty() && out.text.back() == '\n') out.text.pop_back();
}

// Adds `m` when it fits the budget left; the first item is cut to fit rather than left out.
bool Take(RecallOutcome& out, StoredMessage m, int64_t max_tokens,
          const MessageTokenCounter& counter) {
  if (out.tokens + m.tokens <= max_tokens) {
    out.tokens += m.tokens;
    out.messages.push_back({std::move(m), false});
    return true;
  }
  if (!out.messages.empty() || !out.summaries.empty()) return false;
  TruncatedText cut = TruncateMiddleOut(m.message.PlainText(), max_tokens, counter);
  m.message.content_form = ContentForm::kString;
  m.message.text = std::move(cut.text);
  m.message.parts.clear();
  m.tokens = cut.tokens;
  out.tokens += m.tokens;
  out.messages.push_back({std::move(m), true});
  return true;
}

}  // namespace

void RecallService::Recall(RecallRequest request, Done<RecallOutcome> done) {
  RunOnWorker(deps_, [this, request = std::move(request), done = std::move(done)] {
    done(RecallNow(request));
  });
}

Result<RecallOutcome> RecallService::RecallNow(const RecallRequest& request) {
  if (request.query.empty() == request.summary_id.empty()) {
    return Status::InvalidArgument("give exactly one of query and summary_id",
                                   request.query.empty() ? "query" : "summary_id");
  }
  if (request.max_tokens < 1 || request.max_tokens > kMaxTokensLimit) {
    return Status::InvalidArgument("must be 1.." + std::to_string(kMaxTokensLimit), "max_tokens");
  }
  Result<Session> session = deps_.stores->sessions.Get(request.session_id);
  if (!session.ok()) {
    if (session.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("session '" + request.session_id + "' not found");
    }
    return session.status();
  }
  return request.query.empty() ? BySummary(request, *session) : ByQuery(request, *session);
}

Result<RecallOutcome> RecallService::BySummary(const RecallRequest& request,
                                               const Session& session) {
  Result<SummaryRecord> summary = deps_.stores->summaries.Get(request.summary_id);
  if (!summary.ok() || summary->session_id != session.id) {
    if (summary.ok() || summary.status().code() == StatusCode::kNotFound) {
      return Status::NotFound(
          "summary '" + request.summary_id + "' not found in session '" + session.id + "'",
          "summary_id");
    }
    return summary.status();
  }
  const auto cfg = deps_.config->Get();
  const MessageTokenCounter counter = CounterFor(*cfg, deps_.tokenizers, session);
  RecallOutcome out;
  const int64_t first = std::max(summary->first_seq, request.after_seq + 1);
  // Read in pages: a summary may cover thousands of messages, the answer holds few.
  int64_t next = first;
  while (next <= summary->last_seq) {
    const int64_t last = std::min(summary->last_seq, next + 63);
    Result<std::vector<StoredMessage>> rows =
        deps_.stores->messages.LoadRange(session.id, next, last);
    if (!rows.ok()) return rows.status();
    for (StoredMessage& m : *rows) {
      const int64_t seq = m.seq;
      if (!Take(out, std::move(m), request.max_tokens, counter)) {
        out.truncated = true;
        out.next_after_seq = out.messages.back().message.seq;
        Render(out, "summary " + request.summary_id);
        return out;
      }
      if (out.messages.back().truncated && seq < summary->last_seq) {
        out.truncated = true;
        out.next_after_seq = seq;
        Render(out, "summary " + request.summary_id);
        return out;
      }
    }
    next = last + 1;
  }
  Render(out, "summary " + request.summary_id);
  return out;
}

Result<RecallOutcome> RecallService::ByQuery(const RecallRequest& request, const Session& session) {
  SearchOptions search;
  search.query = request.query;
  search.session_id = session.id;
  search.memory = false;
  search.max_results = kMaxQueryHits;
  search.wait_for_index = true;
  Result<std::vector<MemoryHit>> hits = missy::Search(*deps_.db, search);
  if (!hits.ok()) return hits.status();

  // Message hits are "session:seq"; keep the rank order for the budget.
  std::vector<int64_t> seqs;
  std::vector<std::string> summary_ids;
  for (const MemoryHit& h : *hits) {
    if (h.source == "summary") {
      summary_ids.push_back(h.id);
    } else if (h.source == "message") {
      const size_t colon = h.id.rfind(':');
      int64_t seq = 0;
      const char* begin = h.id.data() + colon + 1;
      if (colon != std::string::npos &&
          std::from_chars(begin, h.id.data() + h.id.size(), seq).ec == std::errc()) {
        if (seq > request.after_seq) seqs.push_back(seq);
      }
    }
  }
  Result<std::vector<StoredMessage>> rows = deps_.stores->messages.Load(session.id, seqs);
  if (!rows.ok()) return rows.status();
  std::unordered_map<int64_t, StoredMessage*> by_seq;
  for (StoredMessage& m : *rows) by_seq[m.seq] = &m;

  const auto cfg = deps_.config->Get();
  const MessageTokenCounter counter = CounterFor(*cfg, deps_.tokenizers, session);
  RecallOutcome out;
  // Summaries first (they point at whole ranges), then messages, each in rank order.
  for (const std::string& id : summary_ids) {
    Result<SummaryRecord> s = deps_.stores->summaries.Get(id);
    if (!s.ok()) continue;  // removed meanwhile
    if (out.tokens + s->tokens > request.max_tokens) {
      out.truncated = true;
      continue;
    }
    out.tokens += s->tokens;
    out.summaries.push_back(std::move(*s));
  }
  for (int64_t seq : seqs) {
    auto it = by_seq.find(seq);
    if (it == by_seq.end()) continue;
    if (!Take(out, std::move(*it->second), request.max_tokens, counter)) out.truncated = true;
  }
  std::sort(out.messages.begin(), out.messages.end(),
            [](const RecalledMessage& a, const RecalledMessage& b) {
              return a.message.seq < b.message.seq;
            });
  Render(out, "\"" + request.query + "\"");
  return out;
}

}  // namespace missy
