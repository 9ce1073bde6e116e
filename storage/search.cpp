#include "storage/search.h"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include "storage/fts_query.h"
#include "storage/sqlite.h"
#include "storage/text_indexer.h"

namespace missy {
namespace {

using sqlite::Connection;

constexpr size_t kMaxAllWordTerms = 12;
constexpr size_t kMaxAnyWordTerms = 8;
constexpr int64_t kCommonWordDocs = 5000;
constexpr int64_t kCommonWordShare = 20;     // a word in more than 1 message of 20 is common
constexpr int64_t kMinCommonWordDocs = 200;  // ... once it is in more than this many

// FTS5 reads the whole posting list of every word of a query, and ranks every row that
// matches, so a common word costs as much as the index is large and adds little to the
// ranking; snippet() then weighs every place of every word in each hit (with "the" in the
// query, 50 ms for eight hits of 9 KB). A word is common when it is in more than 1 message
// of kCommonWordShare (at least kMinCommonWordDocs, at most kCommonWordDocs messages). Both
// phases use the rarest words (by how many messages hold them; without document counts,
// i.e. no vocab table, the longest words):
//  - all words: those not common, at most kMaxAllWordTerms (the two rarest when every
//    word is common);
//  - any word: at most kMaxAnyWordTerms, dropping the common ones while at least two
//    words remain.
struct RankedTerms {
  std::vector<std::string> all_words;
  std::vector<std::string> any_word;
};

RankedTerms RankTerms(Connection& c, const std::vector<std::string>& terms) {
  std::vector<std::pair<int64_t, std::string>> ranked;
  bool have_counts = c.Exec(
                          "CREATE VIRTUAL TABLE IF NOT EXISTS temp.messages_vocab USING "
                          "fts5vocab(main, messages_fts, row)")
                         .ok();
  auto q = c.Prepare("SELECT doc FROM temp.messages_vocab WHERE term = ?1");
  have_counts = have_counts && q.ok();
  int64_t common = kCommonWordDocs;
  if (auto last = c.Prepare("SELECT coalesce(max(id), 0) FROM messages"); last.ok()) {
    if (auto row = last->Next(); row.ok() && *row) {  // ids grow by one: about the count
      common = std::clamp(last->Int(0) / kCommonWordShare, kMinCommonWordDocs, kCommonWordDocs);
    }
  }
  for (const std::string& t : terms) {
    int64_t docs = 0;
    if (have_counts) {
      std::string lower = t;
      for (char& ch : lower) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
      q->Bind(1, lower);
      auto row = q->Next();
      if (row.ok() && *row) docs = q->Int(0);
      q->Reset();
    } else {
      docs = -static_cast<int64_t>(t.size());  // longest first
    }
    ranked.emplace_back(docs, t);
  }
  // Words in no message come last: they cost nothing but may still match memory items
  // or summaries.
  auto key = [](int64_t docs) { return docs == 0 ? INT64_MAX : docs; };
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const auto& a, const auto& b) { return key(a.first) < key(b.first); });
  RankedTerms out;
  for (const auto& [docs, t] : ranked) {
    if (out.any_word.size() >= kMaxAnyWordTerms || (out.any_word.size() >= 2 && docs > common)) {
      break;
    }
    out.any_word.push_back(t);
  }
  for (const auto& [docs, t] : ranked) {
    if (out.all_words.size() < kMaxAllWordTerms && docs <= common) {
      out.all_words.push_back(t);
    }
  }
  for (size_t i = 0; out.all_words.empty() && i < ranked.size() && i < 2; ++i) {
    out.all_words.push_back(ranked[i].second);  // every word is common: the two rarest
  }
  return out;
}

// Runs the search on each selected source and appends the hits (score = -bm25).
Status SearchSources(Connection& c, const SearchOptions& o, const std::string& match,
                     const TextIndexer::PendingInTemp& pending, std::vector<MemoryHit>& hits) {
  const int64_t snippet_tokens = std::clamp(o.snippet_tokens, 1, 64);
  struct Source {
    bool enabled;
    const char* name;
    const char* sql;
  };
  const Source sources[] = {
      // ORDER BY rank (= bm25) lets FTS5 sort internally, so snippet() runs only for the
      // rows actually returned, not for every match.
      {o.memory, "memory",
       "SELECT m.id, m.text, memory_fts.rank FROM memory_fts JOIN memory_items m ON m.n = "
       "memory_fts.rowid WHERE memory_fts MATCH ?1 AND (?2 = '' OR m.session_id IS NULL OR "
       "m.session_id = ?2) AND (?3 = '' OR m.session_id IS NULL OR m.session_id <> ?3) "
       "ORDER BY memory_fts.rank LIMIT ?5"},
      {o.summaries, "summary",
       "SELECT s.id, snippet(summaries_fts, 0, '', '', '...', ?4), summaries_fts.rank "
       "FROM summaries_fts JOIN summaries s ON s.n = summaries_fts.rowid "
       "WHERE summaries_fts MATCH ?1 AND (?2 = '' OR s.session_id = ?2) AND (?3 = '' OR "
       "s.session_id <> ?3) ORDER BY summaries_fts.rank LIMIT ?5"},
      {o.messages, "message",
       "SELECT m.session_id || ':' || m.seq, snippet(messages_fts, 0, '', '', '...', ?4), "
       "messages_fts.rank FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
       "WHERE messages_fts MATCH ?1 AND (?2 = '' OR m.session_id = ?2) AND (?3 = '' OR "
       "m.session_id <> ?3) ORDER BY messages_fts.rank LIMIT ?5"},
      // Committed summaries and messages the index has not caught up with (see Search).
      {o.summaries && pending.summaries, "summary",
       "SELECT s.id, snippet(pending_summaries_fts, 0, '', '', '...', ?4), "
       "pending_summaries_fts.rank FROM temp.pending_summaries_fts JOIN summaries s ON s.n = "
       "pending_summaries_fts.rowid WHERE pending_summaries_fts MATCH ?1 AND (?2 = '' OR "
       "s.session_id = ?2) AND (?3 = '' OR s.session_id <> ?3) ORDER BY "
       "pending_summaries_fts.rank LIMIT ?5"},
      {o.messages && pending.messages, "message",
       "SELECT m.session_id || ':' || m.seq, snippet(pending_messages_fts, 0, '', '', '...', "
       "?4), pending_messages_fts.rank FROM temp.pending_messages_fts JOIN messages m ON m.id "
       "= pending_messages_fts.rowid WHERE pending_messages_fts MATCH ?1 AND (?2 = '' OR "
       "m.session_id = ?2) AND (?3 = '' OR m.session_id <> ?3) ORDER BY "
       "pending_messages_fts.rank LIMIT ?5"},
  };
  for (const Source& source : sources) {
    if (!source.enabled) continue;
    MISSY_ASSIGN_STMT(q, c, source.sql);
    q.Bind(1, match)
        .Bind(2, o.session_id)
        .Bind(3, o.exclude_session_id)
        .Bind(4, snippet_tokens)
        .Bind(5, static_cast<int64_t>(o.max_results));
    const std::string what = std::string("search ") + source.name;
    for (;;) {
      MISSY_ASSIGN_NEXT(row, q, what);
      if (!row) break;
      hits.push_back(MemoryHit{source.name, q.Text(0), q.Text(1), -q.Double(2)});
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<MemoryHit>> Search(Database& db, const SearchOptions& options) {
  std::vector<MemoryHit> hits;
  const std::vector<std::string> terms = fts::QueryTerms(options.query);
  if (terms.empty() || options.max_results <= 0) return hits;
  // Appends and summaries are acknowledged before their text is indexed: bring the
  // index up to date first (through the writer, so the index rows and the watermark
  // commit together). If that fails (read-only file, disk full), the rows still above
  // the watermark are indexed into temporary tables of this reader instead, so a search
  // never misses a committed message or summary either way.
  const bool catch_up = (options.messages || options.summaries) && options.wait_for_index;
  if (catch_up) (void)TextIndexer::CatchUp(db);
  MISSY_RETURN_IF_ERROR(db.Read([&](Connection& c) -> Status {
    TextIndexer::PendingInTemp pending;
    if (catch_up) {
      auto filled = TextIndexer::IndexPendingIntoTemp(c);
      if (!filled.ok()) return filled.status();
      pending = *filled;
    }
    Status st;
    const RankedTerms ranked = RankTerms(c, terms);
    for (bool all_terms : {true, false}) {
      if (!all_terms && terms.size() == 1) break;
      const std::vector<std::string>& used = all_terms ? ranked.all_words : ranked.any_word;
      const std::string match = fts::BuildMatchExpression(used, all_terms);
      st = SearchSources(c, options, match, pending, hits);
      if (!st.ok() || !hits.empty()) break;
    }
    (void)TextIndexer::ClearTemp(c, pending);
    return st;
  }));
  std::stable_sort(hits.begin(), hits.end(),
                   [](const MemoryHit& a, const MemoryHit& b) { return a.score > b.score; });
  if (hits.size() > static_cast<size_t>(options.max_results)) {
    hits.resize(static_cast<size_t>(options.max_results));
  }
  return hits;
}

}  // namespace missy
