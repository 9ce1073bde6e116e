#include "storage/missy_import.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "core/message_extract.h"
#include "storage/json_strings.h"
#include "storage/memory_store.h"
#include "storage/message_store.h"
#include "storage/session_store.h"
#include "storage/sqlite.h"

namespace missy {
namespace {

namespace json = boost::json;
using sqlite::Connection;
using sqlite::Statement;

constexpr char kSource[] = "missy";

struct SourceSession {
  std::string id, name, provider, channel;
  int64_t created_ms = 0, updated_ms = 0;
};
struct SourceTurn {
  std::string id, session_id, role, content;
  int64_t time_ms = 0;
};
struct SourceSummary {
  std::string id, session_id, content, parent_id;
  int depth = 0;
  int64_t tokens = 0, start_ms = 0, end_ms = 0, descendants = 0, created_ms = 0;
  std::vector<std::string> turn_ids, summary_ids, files;
};
struct SourceLearning {
  std::string id, task_type, outcome, lesson;
  std::vector<std::string> approach;
  int64_t time_ms = 0;
};

int DaysFromCivil(int y, unsigned m, unsigned d) {  // Howard Hinnant's algorithm
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int>(doe) - 719468;
}

int64_t TimeOr(std::string_view text, int64_t fallback) {
  return ParseIsoTimestampMs(text).value_or(fallback);
}

bool HasTable(Connection& c, const char* name) {
  auto q = c.Prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
  if (!q.ok()) return false;
  q->Bind(1, name);
  auto row = q->Next();
  return row.ok() && *row;
}

struct Source {
  std::vector<SourceSession> sessions;
  std::vector<SourceTurn> turns;
  std::vector<SourceSummary> summaries;
  std::vector<SourceLearning> learnings;
};

Status ReadRows(Connection& c, const std::string& sql,
                const std::function<void(const Statement&)>& row) {
  auto q = c.Prepare(sql);
  if (!q.ok()) return q.status();
  const std::string what = "read Missy database " + c.path();
  for (;;) {
    MISSY_ASSIGN_NEXT(has_row, *q, what);
    if (!has_row) return Status::Ok();
    row(*q);
  }
}

Result<Source> ReadSource(const std::string& path, int64_t now_ms) {
  // mode=ro: never written. A WAL database in a directory we cannot write needs
  // immutable=1 to be readable at all, so that is the fallback.
  std::string uri = "file:" + path + "?mode=ro";
  auto conn = Connection::Open(uri, Connection::Mode::kReadOnly, /*uri=*/true);
  if (conn.ok() && !(*conn)->QueryInt("SELECT count(*) FROM sqlite_master").ok()) {
    conn = Connection::Open("file:" + path + "?mode=ro&immutable=1", Connection::Mode::kReadOnly,
                            /*uri=*/true);
  }
  if (!conn.ok()) return conn.status();
  Connection& c = **conn;
  auto check = c.QueryInt("SELECT count(*) FROM sqlite_master");
  if (!check.ok()) {
    return Status(check.status().code(),
                  "cannot read Missy database " + path + ": " + check.status().message());
  }
  if (!HasTable(c, "sessions") || !HasTable(c, "turns")) {
    return Status::InvalidArgument("'" + path +
                                   "' is not a Missy memory database (no sessions/turns tables)");
  }
  Source src;
  MISSY_RETURN_IF_ERROR(ReadRows(
      c,
      "SELECT session_id, coalesce(name, ''), coalesce(provider, ''), coalesce(channel, ''), "
      "coalesce(created_at, ''), coalesce(updated_at, '') FROM sessions ORDER BY created_at, rowid",
      [&](const Statement& s) {
        SourceSession x{s.Text(0), s.Text(1), s.Text(2), s.Text(3)};
        x.created_ms = TimeOr(s.Text(4), now_ms);
        x.updated_ms = TimeOr(s.Text(5), x.created_ms);
        src.sessions.push_back(std::move(x));
      }));
  MISSY_RETURN_IF_ERROR(
      ReadRows(c,
               "SELECT id, session_id, coalesce(role, ''), coalesce(content, ''), "
               "coalesce(timestamp, '') FROM turns ORDER BY session_id, timestamp, rowid",
               [&](const Statement& s) {
                 src.turns.push_back(SourceTurn{s.Text(0), s.Text(1), s.Text(2), s.Text(3),
                                                TimeOr(s.Text(4), now_ms)});
               }));
  if (HasTable(c, "summaries")) {
    MISSY_RETURN_IF_ERROR(ReadRows(
        c,
        "SELECT id, session_id, coalesce(content, ''), coalesce(parent_id, ''), coalesce(depth, "
        "0), "
        "coalesce(token_estimate, 0), coalesce(time_range_start, ''), coalesce(time_range_end, "
        "''), "
        "coalesce(descendant_count, 0), coalesce(created_at, ''), coalesce(source_turn_ids, '[]'), "
        "coalesce(source_summary_ids, '[]'), coalesce(file_refs, '[]') FROM summaries ORDER BY "
        "depth, rowid",
        [&](const Statement& s) {
          SourceSummary x;
          x.id = s.Text(0);
          x.session_id = s.Text(1);
          x.content = s.Text(2);
          x.parent_id = s.Text(3);
          x.depth = static_cast<int>(s.Int(4));
          x.tokens = s.Int(5);
          x.start_ms = TimeOr(s.Text(6), 0);
          x.end_ms = TimeOr(s.Text(7), 0);
          x.descendants = s.Int(8);
          x.created_ms = TimeOr(s.Text(9), now_ms);
          x.turn_ids = storage_json::StringsFromJson(s.Text(10));
          x.summary_ids = storage_json::StringsFromJson(s.Text(11));
          x.files = storage_json::StringsFromJson(s.Text(12));
          src.summaries.push_back(std::move(x));
        }));
  }
  if (HasTable(c, "learnings")) {
    MISSY_RETURN_IF_ERROR(
        ReadRows(c,
                 "SELECT id, coalesce(task_type, ''), coalesce(outcome, ''), coalesce(lesson, ''), "
                 "coalesce(approach, '[]'), coalesce(timestamp, '') FROM learnings ORDER BY rowid",
                 [&](const Statement& s) {
                   SourceLearning x;
                   x.id = s.Text(0);
                   x.task_type = s.Text(1);
                   x.outcome = s.Text(2);
                   x.lesson = s.Text(3);
                   x.approach = storage_json::StringsFromJson(s.Text(4));
                   if (x.approach.empty() && !s.Text(4).empty() && s.Text(4) != "[]") {
                     x.approach.push_back(s.Text(4));  // plain text approach
                   }
                   x.time_ms = TimeOr(s.Text(5), now_ms);
                   src.learnings.push_back(std::move(x));
                 }));
  }
  return src;
}

// The writer side: everything below runs inside one transaction on the writer.
class Importer {
 public:
  Importer(Database& db, Txn& txn, const Source& src, const MessageTokenCounter& counter)
      : sessions_(db), memory_(db), txn_(txn), c_(txn.conn()), src_(src), counter_(counter) {}

  Status Run(MissyImportReport& report) {
    for (const SourceSession& s : src_.sessions) MISSY_RETURN_IF_ERROR(ImportSession(s, report));
    for (const SourceTurn& t : src_.turns) MISSY_RETURN_IF_ERROR(ImportTurn(t, report));
    MISSY_RETURN_IF_ERROR(FlushSessionTotals());
    for (const SourceSummary& s : src_.summaries) MISSY_RETURN_IF_ERROR(ImportSummary(s, report));
    MISSY_RETURN_IF_ERROR(LinkSummaryParents());
    for (const SourceLearning& l : src_.learnings) MISSY_RETURN_IF_ERROR(ImportLearning(l, report));
    return Status::Ok();
  }

 private:
  // What an earlier import mapped `kind:source_id` to, if anything.
  Result<std::optional<std::string>> Mapped(std::string_view kind, std::string_view id) {
    auto q = c_.Prepare("SELECT target FROM imported WHERE source = ?1 AND source_id = ?2");
    if (!q.ok()) return q.status();
    q->Bind(1, std::string(kSource) + "." + std::string(kind)).Bind(2, id);
    MISSY_ASSIGN_NEXT(row, *q, "read import map");
    if (!row) return std::optional<std::string>();
    return std::optional<std::string>(q->Text(0));
  }

  Status Remember(std::string_view kind, std::string_view id, std::string_view target) {
    auto q = c_.Prepare("INSERT INTO imported (source, source_id, target) VALUES (?1, ?2, ?3)");
    if (!q.ok()) return q.status();
    q->Bind(1, std::string(kSource) + "." + std::string(kind)).Bind(2, id).Bind(3, target);
    return q->Run("write import map");
  }

  Result<bool> Exists(const char* sql, std::string_view id) {
    auto q = c_.Prepare(sql);
    if (!q.ok()) return q.status();
    q->Bind(1, id);
    return q->Next("check id");
  }

  // `id` itself when free in `sql`'s table, else "missy-" + id (+ a counter).
  Result<std::string> FreeId(const char* sql, const std::string& id) {
    std::string candidate = id.empty() ? "missy-import" : id;
    for (int i = 0;; ++i) {
      auto taken = Exists(sql, candidate);
      if (!taken.ok()) return taken.status();
      if (!*taken) return candidate;
      candidate = "missy-" + id;
      if (i > 0) {  // appended piecewise: GCC 12 warns (-Wrestrict) on "-" + to_string(i)
        candidate += '-';
        candidate += std::to_string(i);
      }
    }
  }

  Status ImportSession(const SourceSession& s, MissyImportReport& report) {
    auto mapped = Mapped("session", s.id);
    if (!mapped.ok()) return mapped.status();
    if (mapped->has_value()) {
      session_ids_[s.id] = **mapped;
      ++report.skipped;
      return Status::Ok();
    }
    auto id = FreeId("SELECT 1 FROM sessions WHERE id = ?1", s.id);
    if (!id.ok()) return id.status();
    json::object meta{{"imported_from", "missy"}, {"missy_session_id", s.id}};
    if (!s.name.empty()) meta["name"] = s.name;
    if (!s.channel.empty()) meta["channel"] = s.channel;
    if (!s.provider.empty()) meta["provider"] = s.provider;
    Session session;
    session.id = *id;
    session.metadata_json = json::serialize(meta);
    session.created_at_ms = s.created_ms;
    session.updated_at_ms = s.updated_ms;
    MISSY_RETURN_IF_ERROR(sessions_.Create(txn_, session));
    MISSY_RETURN_IF_ERROR(Remember("session", s.id, *id));
    session_ids_[s.id] = *id;
    ++report.sessions;
    return Status::Ok();
  }

  Result<int64_t> LastSeq(const std::string& session) {
    auto it = last_seq_.find(session);
    if (it != last_seq_.end()) return it->second;
    auto q = c_.Prepare("SELECT last_seq FROM sessions WHERE id = ?1");
    if (!q.ok()) return q.status();
    q->Bind(1, session);
    MISSY_ASSIGN_NEXT(row, *q, "read session");
    if (!row) return Status::NotFound("session '" + session + "' not found", "session_id");
    return last_seq_[session] = q->Int(0);
  }

  Status ImportTurn(const SourceTurn& t, MissyImportReport& report) {
    auto mapped = Mapped("turn", t.id);
    if (!mapped.ok()) return mapped.status();
    if (mapped->has_value()) {
      RememberTurnSeq(t.id, **mapped);
      ++report.skipped;
      return Status::Ok();
    }
    auto session = session_ids_.find(t.session_id);
    auto role = ParseRole(t.role);
    // Missy stores user and final assistant text; a tool turn has no call id to pair with.
    if (session == session_ids_.end() || !role || *role == Role::kTool) {
      ++report.skipped;
      return Status::Ok();
    }
    Message m;
    m.role = *role;
    m.text = t.content;
    const int64_t tokens = counter_.CountMessage(m);
    auto last = LastSeq(session->second);
    if (!last.ok()) return last.status();
    const int64_t seq = *last + 1;
    auto q = c_.Prepare(
        "INSERT INTO messages (session_id, seq, role, content, tool_calls, created_at_ms, tokens, "
        "flags, text) "
        "VALUES (?1, ?2, ?3, ?4, '[]', ?5, ?6, 0, ?7)");
    if (!q.ok()) return q.status();
    q->Bind(1, session->second)
        .Bind(2, seq)
        .Bind(3, RoleName(m.role))
        .Bind(4, ContentToJsonText(m))
        .Bind(5, t.time_ms)
        .Bind(6, tokens)
        .Bind(7, m.text);
    MISSY_RETURN_IF_ERROR(q->Run("import turn"));
    auto digest = c_.Prepare(MessageStore::kInsertDigestSql);
    if (!digest.ok()) return digest.status();
    const std::string extract = ExtractMessage(m);
    digest->Bind(1, c_.LastInsertRowId())
        .Bind(2, RoleName(m.role))
        .Bind(3, tokens)
        .Bind(4, t.time_ms)
        .BindBlobStaticOrNull(5, extract);
    MISSY_RETURN_IF_ERROR(digest->Run("import turn's digest"));
    last_seq_[session->second] = seq;
    Totals& totals = totals_[session->second];
    totals.count += 1;
    totals.tokens += tokens;
    totals.last_time = std::max(totals.last_time, t.time_ms);
    const std::string target = session->second + ":" + std::to_string(seq);
    MISSY_RETURN_IF_ERROR(Remember("turn", t.id, target));
    RememberTurnSeq(t.id, target);
    ++report.messages;
    return Status::Ok();
  }

  void RememberTurnSeq(const std::string& turn_id, const std::string& target) {
    size_t colon = target.rfind(':');
    if (colon == std::string::npos) return;
    turn_seq_[turn_id] = {target.substr(0, colon), std::atoll(target.c_str() + colon + 1)};
  }

  Status FlushSessionTotals() {
    auto q = c_.Prepare(
        "UPDATE sessions SET message_count = message_count + ?2, total_tokens = total_tokens + ?3, "
        "last_seq = ?4, updated_at_ms = max(updated_at_ms, ?5) WHERE id = ?1");
    if (!q.ok()) return q.status();
    for (const auto& [session, t] : totals_) {
      q->Bind(1, session)
          .Bind(2, t.count)
          .Bind(3, t.tokens)
          .Bind(4, last_seq_[session])
          .Bind(5, t.last_time);
      MISSY_RETURN_IF_ERROR(q->Run("update imported session"));
      q->Reset();
    }
    return Status::Ok();
  }

  Status ImportSummary(const SourceSummary& s, MissyImportReport& report) {
    auto mapped = Mapped("summary", s.id);
    if (!mapped.ok()) return mapped.status();
    if (mapped->has_value()) {
      summary_ids_[s.id] = **mapped;
      ++report.skipped;
      return Status::Ok();
    }
    auto session = session_ids_.find(s.session_id);
    if (session == session_ids_.end()) {
      ++report.skipped;
      return Status::Ok();
    }
    // The covered range: the turns' seqs (leaf) or the children's ranges (condensed).
    int64_t first = 0, last = 0;
    auto widen = [&](int64_t lo, int64_t hi) {
      if (lo <= 0) return;
      first = first == 0 ? lo : std::min(first, lo);
      last = std::max(last, hi);
    };
    for (const std::string& turn : s.turn_ids) {
      auto it = turn_seq_.find(turn);
      if (it != turn_seq_.end() && it->second.first == session->second)
        widen(it->second.second, it->second.second);
    }
    std::vector<std::string> children;
    for (const std::string& child : s.summary_ids) {
      auto it = summary_ids_.find(child);
      if (it == summary_ids_.end()) continue;
      children.push_back(it->second);
      auto range = summary_ranges_.find(it->second);
      if (range != summary_ranges_.end()) widen(range->second.first, range->second.second);
    }
    auto id = FreeId("SELECT 1 FROM summaries WHERE id = ?1", s.id.empty() ? "sum_missy" : s.id);
    if (!id.ok()) return id.status();
    json::object artifacts{{"files", json::value_from(s.files)},
                           {"commands", json::array()},
                           {"errors", json::array()}};
    auto q = c_.Prepare(
        "INSERT INTO summaries (id, session_id, depth, content, tokens, first_seq, last_seq, "
        "child_ids, "
        "start_ms, end_ms, descendant_count, artifacts, created_at_ms) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
    if (!q.ok()) return q.status();
    q->Bind(1, *id)
        .Bind(2, session->second)
        .Bind(3, s.depth)
        .Bind(4, s.content)
        .Bind(5, s.tokens)
        .Bind(6, first)
        .Bind(7, last)
        .Bind(8, storage_json::StringsToJson(children))
        .Bind(9, s.start_ms)
        .Bind(10, s.end_ms)
        .Bind(11, s.descendants)
        .Bind(12, json::serialize(artifacts))
        .Bind(13, s.created_ms);
    MISSY_RETURN_IF_ERROR(q->Run("import summary"));
    MISSY_RETURN_IF_ERROR(Remember("summary", s.id, *id));
    summary_ids_[s.id] = *id;
    summary_ranges_[*id] = {first, last};
    if (!s.parent_id.empty()) pending_parents_.emplace_back(*id, s.parent_id);
    ++report.summaries;
    return Status::Ok();
  }

  Status LinkSummaryParents() {
    auto q = c_.Prepare("UPDATE summaries SET parent_id = ?2 WHERE id = ?1");
    if (!q.ok()) return q.status();
    for (const auto& [child, source_parent] : pending_parents_) {
      auto parent = summary_ids_.find(source_parent);
      if (parent == summary_ids_.end())
        continue;  // parent missing in the source: stays uncondensed
      q->Bind(1, child).Bind(2, parent->second);
      MISSY_RETURN_IF_ERROR(q->Run("link imported summaries"));
      q->Reset();
    }
    return Status::Ok();
  }

  Status ImportLearning(const SourceLearning& l, MissyImportReport& report) {
    auto mapped = Mapped("learning", l.id);
    if (!mapped.ok()) return mapped.status();
    if (mapped->has_value() || l.lesson.empty()) {
      ++report.skipped;
      return Status::Ok();
    }
    auto id = FreeId("SELECT 1 FROM learnings WHERE id = ?1", l.id.empty() ? "lrn_missy" : l.id);
    if (!id.ok()) return id.status();
    LearningRecord learning;
    learning.id = *id;
    learning.task_type = l.task_type;
    learning.outcome = l.outcome;
    learning.lesson = l.lesson;
    learning.approach = l.approach;
    learning.created_at_ms = l.time_ms;
    MISSY_RETURN_IF_ERROR(memory_.AddLearning(txn_, learning).status());
    MISSY_RETURN_IF_ERROR(Remember("learning", l.id, *id));
    ++report.learnings;
    return Status::Ok();
  }

  struct Totals {
    int64_t count = 0, tokens = 0, last_time = 0;
  };

  SessionStore sessions_;
  MemoryStore memory_;
  Txn& txn_;
  Connection& c_;
  const Source& src_;
  const MessageTokenCounter& counter_;
  std::map<std::string, std::string> session_ids_;                   // Missy session id -> ours
  std::map<std::string, std::pair<std::string, int64_t>> turn_seq_;  // turn id -> (session, seq)
  std::map<std::string, int64_t> last_seq_;
  std::map<std::string, Totals> totals_;
  std::map<std::string, std::string> summary_ids_;  // Missy summary id -> ours
  std::map<std::string, std::pair<int64_t, int64_t>> summary_ranges_;
  std::vector<std::pair<std::string, std::string>>
      pending_parents_;  // (our child id, Missy parent id)
};

}  // namespace

std::optional<int64_t> ParseIsoTimestampMs(std::string_view text) {
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  auto num = [&](size_t pos, size_t len, int& out) {
    if (pos + len > text.size()) return false;
    auto r = std::from_chars(text.data() + pos, text.data() + pos + len, out);
    return r.ec == std::errc() && r.ptr == text.data() + pos + len;
  };
  int y, mo, d, h = 0, mi = 0, s = 0;
  if (text.size() >= 10 && text[4] == '-' && text[7] == '-' && num(0, 4, y) && num(5, 2, mo) &&
      num(8, 2, d)) {
    if (mo < 1 || mo > 12 || d < 1 || d > 31) return std::nullopt;
    size_t pos = 10;
    int64_t ms = 0, offset_min = 0;
    if (pos < text.size() && (text[pos] == 'T' || text[pos] == ' ')) {
      if (!num(pos + 1, 2, h) || text.size() < pos + 6 || text[pos + 3] != ':' ||
          !num(pos + 4, 2, mi)) {
        return std::nullopt;
      }
      pos += 6;
      if (pos < text.size() && text[pos] == ':') {
        if (!num(pos + 1, 2, s)) return std::nullopt;
        pos += 3;
      }
      if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
        ++pos;
        int64_t scale = 100;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
          ms += (text[pos] - '0') * scale;
          scale /= 10;
          ++pos;
        }
      }
      if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
        ++pos;
      } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
        int oh = 0, om = 0;
        const int sign = text[pos] == '-' ? -1 : 1;
        if (!num(pos + 1, 2, oh)) return std::nullopt;
        pos += 3;
        if (pos < text.size() && text[pos] == ':') ++pos;
        if (pos + 2 <= text.size() && num(pos, 2, om)) pos += 2;
        offset_min = sign * (oh * 60 + om);
      }
    }
    if (pos != text.size()) return std::nullopt;
    int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
    return ((days * 86400 + h * 3600 + mi * 60 + s) - offset_min * 60) * 1000 + ms;
  }
  // Epoch seconds, possibly fractional.
  char* end = nullptr;
  std::string copy(text);
  double secs = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  return static_cast<int64_t>(secs * 1000.0);
}

Result<MissyImportReport> ImportMissy(Database& db, const std::string& missy_db_path,
                                      const MessageTokenCounter* counter, int64_t now_ms) {
  auto src = ReadSource(missy_db_path, now_ms);
  if (!src.ok()) return src.status();
  std::optional<MessageTokenCounter> fallback;
  if (counter == nullptr) {
    fallback.emplace(std::make_shared<HeuristicTokenCounter>());
    counter = &*fallback;
  }
  MissyImportReport report;
  Status st = db.Write([&](Txn& txn) -> Status {
    report = MissyImportReport{};
    Importer importer(db, txn, *src, *counter);
    return importer.Run(report);
  });
  if (!st.ok()) return st;
  return report;
}

}  // namespace missy
