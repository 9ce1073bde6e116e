#include "storage/schema.h"

#include <chrono>
#include <string>

namespace missy::schema {
namespace {

// Version 1: sessions, messages, audit events, and a key/value table for storage's
// own bookkeeping (e.g. the audit retention anchor).
constexpr std::string_view kMigration1 = R"sql(
CREATE TABLE sessions (
  id             TEXT PRIMARY KEY NOT NULL,
  model          TEXT NOT NULL DEFAULT '',
  system_prompt  TEXT NOT NULL DEFAULT '',
  tools_json     TEXT NOT NULL DEFAULT '[]',
  metadata_json  TEXT NOT NULL DEFAULT '{}',
  context_window INTEGER NOT NULL DEFAULT 0,
  strict         INTEGER NOT NULL DEFAULT 0,
  created_at_ms  INTEGER NOT NULL,
  updated_at_ms  INTEGER NOT NULL,
  message_count  INTEGER NOT NULL DEFAULT 0,
  total_tokens   INTEGER NOT NULL DEFAULT 0,
  last_seq       INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE messages (
  id            INTEGER PRIMARY KEY,
  session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq           INTEGER NOT NULL,
  role          TEXT NOT NULL,
  content       TEXT NOT NULL,
  tool_calls    TEXT NOT NULL DEFAULT '[]',
  tool_call_id  TEXT NOT NULL DEFAULT '',
  name          TEXT NOT NULL DEFAULT '',
  created_at_ms INTEGER NOT NULL,
  tokens        INTEGER NOT NULL DEFAULT 0,
  flags         INTEGER NOT NULL DEFAULT 0,
  summary_id    TEXT,
  text          TEXT NOT NULL DEFAULT '',
  UNIQUE (session_id, seq)
);
CREATE TABLE audit_events (
  seq             INTEGER PRIMARY KEY,
  timestamp_ms    INTEGER NOT NULL,
  session_id      TEXT NOT NULL DEFAULT '',
  task_id         TEXT NOT NULL DEFAULT '',
  event_type      TEXT NOT NULL,
  category        TEXT NOT NULL DEFAULT '',
  result          TEXT NOT NULL DEFAULT '',
  detail_json     TEXT NOT NULL DEFAULT '{}',
  prev_chain_hash TEXT NOT NULL
);
CREATE INDEX audit_events_by_type ON audit_events (event_type, seq);
CREATE TABLE meta (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);
)sql";

// Version 2: summaries, memory items, learnings, the job queue, token calibration,
// and the importer's map of what it already imported.
constexpr std::string_view kMigration2 = R"sql(
CREATE TABLE summaries (
  n                INTEGER PRIMARY KEY,
  id               TEXT NOT NULL UNIQUE,
  session_id       TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  depth            INTEGER NOT NULL DEFAULT 0,
  content          TEXT NOT NULL,
  tokens           INTEGER NOT NULL DEFAULT 0,
  first_seq        INTEGER NOT NULL DEFAULT 0,
  last_seq         INTEGER NOT NULL DEFAULT 0,
  child_ids        TEXT NOT NULL DEFAULT '[]',
  parent_id        TEXT,
  start_ms         INTEGER NOT NULL DEFAULT 0,
  end_ms           INTEGER NOT NULL DEFAULT 0,
  descendant_count INTEGER NOT NULL DEFAULT 0,
  artifacts        TEXT NOT NULL DEFAULT '{"files":[],"commands":[],"errors":[]}',
  created_at_ms    INTEGER NOT NULL
);
CREATE INDEX summaries_by_session ON summaries (session_id, depth, first_seq);
CREATE INDEX summaries_by_parent ON summaries (parent_id);
CREATE INDEX messages_by_summary ON messages (summary_id) WHERE summary_id IS NOT NULL;
CREATE TABLE memory_items (
  n             INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  text          TEXT NOT NULL,
  tags          TEXT NOT NULL DEFAULT '[]',
  session_id    TEXT,
  pinned        INTEGER NOT NULL DEFAULT 0,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX memory_items_by_session ON memory_items (session_id);
CREATE TABLE learnings (
  n             INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  task_type     TEXT NOT NULL DEFAULT '',
  outcome       TEXT NOT NULL DEFAULT '',
  lesson        TEXT NOT NULL,
  approach      TEXT NOT NULL DEFAULT '[]',
  session_id    TEXT,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX learnings_by_time ON learnings (created_at_ms);
CREATE TABLE jobs (
  id             INTEGER PRIMARY KEY,
  kind           TEXT NOT NULL,
  session_id     TEXT NOT NULL DEFAULT '',
  state          TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
  attempts       INTEGER NOT NULL DEFAULT 0,
  payload        TEXT NOT NULL DEFAULT '{}',
  next_run_at_ms INTEGER NOT NULL DEFAULT 0,
  lease_until_ms INTEGER NOT NULL DEFAULT 0,
  last_error     TEXT NOT NULL DEFAULT '',
  created_at_ms  INTEGER NOT NULL,
  updated_at_ms  INTEGER NOT NULL
);
CREATE UNIQUE INDEX jobs_one_active ON jobs (session_id, kind) WHERE state IN ('queued', 'running');
CREATE INDEX jobs_by_state ON jobs (state, next_run_at_ms);
CREATE TABLE calibration (
  model         TEXT PRIMARY KEY NOT NULL,
  ratio         REAL NOT NULL,
  samples       INTEGER NOT NULL DEFAULT 0,
  updated_at_ms INTEGER NOT NULL
);
CREATE TABLE imported (
  source    TEXT NOT NULL,
  source_id TEXT NOT NULL,
  target    TEXT NOT NULL,
  PRIMARY KEY (source, source_id)
);
)sql";

// Version 3: FTS5 external-content indexes over memory items, message text and
// summaries, kept in sync by triggers; rebuilt from the existing rows.
constexpr std::string_view kMigration3 = R"sql(
CREATE VIRTUAL TABLE memory_fts USING fts5 (
  text, tags, content='memory_items', content_rowid='n', tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER memory_items_ai AFTER INSERT ON memory_items BEGIN
  INSERT INTO memory_fts (rowid, text, tags) VALUES (new.n, new.text, new.tags);
END;
CREATE TRIGGER memory_items_ad AFTER DELETE ON memory_items BEGIN
  INSERT INTO memory_fts (memory_fts, rowid, text, tags) VALUES ('delete', old.n, old.text, old.tags);
END;
CREATE TRIGGER memory_items_au AFTER UPDATE OF text, tags ON memory_items BEGIN
  INSERT INTO memory_fts (memory_fts, rowid, text, tags) VALUES ('delete', old.n, old.text, old.tags);
  INSERT INTO memory_fts (rowid, text, tags) VALUES (new.n, new.text, new.tags);
END;
INSERT INTO memory_fts (memory_fts) VALUES ('rebuild');

CREATE VIRTUAL TABLE messages_fts USING fts5 (
  text, content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER messages_au AFTER UPDATE OF text ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
  INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
END;
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');

CREATE VIRTUAL TABLE summaries_fts USING fts5 (
  content, content='summaries', content_rowid='n', tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER summaries_ai AFTER INSERT ON summaries BEGIN
  INSERT INTO summaries_fts (rowid, content) VALUES (new.n, new.content);
END;
CREATE TRIGGER summaries_ad AFTER DELETE ON summaries BEGIN
  INSERT INTO summaries_fts (summaries_fts, rowid, content) VALUES ('delete', old.n, old.content);
END;
CREATE TRIGGER summaries_au AFTER UPDATE OF content ON summaries BEGIN
  INSERT INTO summaries_fts (summaries_fts, rowid, content) VALUES ('delete', old.n, old.content);
  INSERT INTO summaries_fts (rowid, content) VALUES (new.n, new.content);
END;
INSERT INTO summaries_fts (summaries_fts) VALUES ('rebuild');
)sql";

// Version 4: message text is indexed in batches by the writer thread, off the append
// path, instead of by an AFTER INSERT trigger. meta 'messages_fts_indexed' is the
// watermark: every message with id <= it is in messages_fts (with its current text),
// none above it is. The watermark starts at the current max id (the version 3
// trigger indexed everything). The update/delete triggers now only touch rows at or
// below the watermark (a row above it is not in the index yet: deleting it from an
// external-content index would corrupt it). A new row whose id is at or below the
// watermark (id reuse after the highest rows were deleted) is indexed at once.
constexpr std::string_view kMigration4 = R"sql(
DROP TRIGGER messages_ai;
DROP TRIGGER messages_ad;
DROP TRIGGER messages_au;
INSERT INTO meta (key, value) VALUES ('messages_fts_indexed', (SELECT coalesce(max(id), 0) FROM messages))
  ON CONFLICT (key) DO UPDATE SET value = excluded.value;
CREATE TRIGGER messages_ai_below_watermark AFTER INSERT ON messages
WHEN new.id <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'messages_fts_indexed') BEGIN
  INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages
WHEN old.id <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'messages_fts_indexed') BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER messages_au AFTER UPDATE OF text ON messages
WHEN old.id <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'messages_fts_indexed') BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
  INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
END;
)sql";

// Version 5: the session's context anchor (the first kept seq of its last context, so
// that a restart rebuilds the same prefix) and outbox cursors (how far an external
// publisher, e.g. the broker bridge, got through the audit log; they never move back).
constexpr std::string_view kMigration5 = R"sql(
ALTER TABLE sessions ADD COLUMN anchor_seq INTEGER NOT NULL DEFAULT 0;
CREATE TABLE outbox_cursors (
  name TEXT PRIMARY KEY NOT NULL,
  seq  INTEGER NOT NULL DEFAULT 0
);
)sql";

// Version 6: the summarizer chosen per session (backend and provider; '' = configured),
// and the summaries a context at the session's anchor shows (their highest ordinal).
constexpr std::string_view kMigration6 = R"sql(
ALTER TABLE sessions ADD COLUMN summarizer_backend TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN summarizer_provider TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN anchor_summaries INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 7: each message's extract (core/message_extract.h: what the summarizer takes
// from it, made on append). NULL for rows written before: they are extracted when
// summarized.
constexpr std::string_view kMigration7 = R"sql(
ALTER TABLE messages ADD COLUMN extract BLOB;
)sql";

// Version 8: a message's leaf summary is the one whose first_seq..last_seq holds its seq
// (leaves never overlap), not a per-message column: covering 1,000 messages no longer
// rewrites 1,000 rows (content included) inside the summary's commit.
constexpr std::string_view kMigration8 = R"sql(
DROP INDEX messages_by_summary;
ALTER TABLE messages DROP COLUMN summary_id;
)sql";

// Version 9: summary text is indexed off the summarizer's commit too, like message text
// since version 4 (a forced compaction of 10,000 messages spent about a fifth of its time
// indexing its 121 summaries inside that commit, holding the writer every append waits
// for). meta 'summaries_fts_indexed' is the watermark: summaries with n <= it are in
// summaries_fts, none above it; the same trigger rules as for messages.
constexpr std::string_view kMigration9 = R"sql(
DROP TRIGGER summaries_ai;
DROP TRIGGER summaries_ad;
DROP TRIGGER summaries_au;
INSERT INTO meta (key, value) VALUES ('summaries_fts_indexed', (SELECT coalesce(max(n), 0) FROM summaries))
  ON CONFLICT (key) DO UPDATE SET value = excluded.value;
CREATE TRIGGER summaries_ai_below_watermark AFTER INSERT ON summaries
WHEN new.n <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'summaries_fts_indexed') BEGIN
  INSERT INTO summaries_fts (rowid, content) VALUES (new.n, new.content);
END;
CREATE TRIGGER summaries_ad AFTER DELETE ON summaries
WHEN old.n <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'summaries_fts_indexed') BEGIN
  INSERT INTO summaries_fts (summaries_fts, rowid, content) VALUES ('delete', old.n, old.content);
END;
CREATE TRIGGER summaries_au AFTER UPDATE OF content ON summaries
WHEN old.n <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'summaries_fts_indexed') BEGIN
  INSERT INTO summaries_fts (summaries_fts, rowid, content) VALUES ('delete', old.n, old.content);
  INSERT INTO summaries_fts (rowid, content) VALUES (new.n, new.content);
END;
)sql";

// Version 10: the summaries a context can show without reading the others: those without
// a parent (a long session has hundreds of condensed ones besides).
constexpr std::string_view kMigration10 = R"sql(
CREATE INDEX summaries_uncondensed ON summaries (session_id, first_seq, depth)
  WHERE parent_id IS NULL;
)sql";

// Version 11: what planning and summarizing read of a message (its role, token count,
// time and extract), in a narrow table of its own keyed by the message's id, written with
// the message and never changed. Read from messages, those few columns cost the whole
// row: a forced compaction of 10,000 messages read every row's content and plain text
// (about 1.3 KB) twice, to plan its chunks and to merge extracts of about 160 bytes, and
// spent three quarters of its time there. A session's digests are found through the
// (session_id, seq) index, which holds the id; keyed by id, appends add to the end of
// the table (keyed by session and seq, each commit of 64 sessions' appends dirtied a
// page per session, and appends lost a third of their rate). Rows written before are
// copied; their extracts stay NULL where they were (they are extracted when summarized).
constexpr std::string_view kMigration11 = R"sql(
CREATE TABLE message_digests (
  id            INTEGER PRIMARY KEY,
  role          TEXT NOT NULL,
  tokens        INTEGER NOT NULL,
  created_at_ms INTEGER NOT NULL,
  extract       BLOB
);
INSERT INTO message_digests (id, role, tokens, created_at_ms, extract)
  SELECT id, role, tokens, created_at_ms, extract FROM messages;
ALTER TABLE messages DROP COLUMN extract;
)sql";

}  // namespace

// Version 12: which summaries a context at the session's anchor shows short
// (core/context_summaries.h), so that a restarted daemon sends the same bytes.
constexpr std::string_view kMigration12 = R"sql(
ALTER TABLE sessions ADD COLUMN anchor_stub_through INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 13: proxy mode (daemon/proxy/). Each message an agent sent through the proxy in
// its own API's shape, beside the engine messages it was stored as (first_seq, seq_count),
// with the hash the next request's list is matched on; and which stored session a
// conversation's key currently continues (a history the agent rewrote branches into a
// new session, so nothing stored is changed). A deleted session takes its rows along.
constexpr std::string_view kMigration13 = R"sql(
CREATE TABLE proxy_messages (
  session_id TEXT NOT NULL,
  idx        INTEGER NOT NULL,
  hash       TEXT NOT NULL,
  first_seq  INTEGER NOT NULL,
  seq_count  INTEGER NOT NULL,
  native     TEXT NOT NULL,
  PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;
CREATE TABLE proxy_keys (
  key        TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  branches   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TRIGGER proxy_messages_gone AFTER DELETE ON sessions BEGIN
  DELETE FROM proxy_messages WHERE session_id = old.id;
END;
)sql";

// Version 14: finding a past context (GET /v1/contexts/{id}, issue 30) by the context_id of
// its context.built event, and a session's contexts newest first, without a scan of the
// audit log. Both partial: other events cost nothing more to append. (json_valid first: a
// detail that is not JSON, edited by hand, must not fail the migration or an append.)
constexpr std::string_view kMigration14 = R"sql(
CREATE INDEX audit_events_by_context ON audit_events (
  CASE WHEN json_valid(detail_json) THEN json_extract(detail_json, '$.context_id') END)
  WHERE event_type = 'context.built';
CREATE INDEX audit_events_contexts_by_session ON audit_events (session_id, seq)
  WHERE event_type = 'context.built';
)sql";

// Version 15: the memory hits a context at the session's anchor shows (a JSON array; ""
// when none were chosen yet), so that a daemon that restarted sends the same system
// message rather than searching afresh (other sessions wrote meanwhile).
constexpr std::string_view kMigration15 = R"sql(
ALTER TABLE sessions ADD COLUMN anchor_memory TEXT NOT NULL DEFAULT '';
)sql";

// Version 16: which tool outputs a context at the session's anchor shows squeezed (those
// with seq <= this, cut when the anchor last moved), so that a restarted daemon sends the
// same bytes.
constexpr std::string_view kMigration16 = R"sql(
ALTER TABLE sessions ADD COLUMN anchor_squeezed_through INTEGER NOT NULL DEFAULT 0;
)sql";

const std::vector<std::string_view>& Migrations() {
  static const std::vector<std::string_view> kMigrations = {
      kMigration1,  kMigration2,  kMigration3,  kMigration4, kMigration5,
      kMigration6,  kMigration7,  kMigration8,  kMigration9, kMigration10,
      kMigration11, kMigration12, kMigration13, kMigration14, kMigration15,
      kMigration16};
  return kMigrations;
}

Result<int> CheckVersion(sqlite::Connection& conn) {
  auto v = conn.QueryInt("PRAGMA user_version");
  if (!v.ok()) return v.status();
  if (*v > LatestVersion() || *v < 0) {
    return Status::Corruption("database " + conn.path() + " has schema version " +
                              std::to_string(*v) + ", this missyd knows up to " +
                              std::to_string(LatestVersion()) +
                              "; refusing to open it (upgrade missyd)");
  }
  return static_cast<int>(*v);
}

namespace {

// What a migration does that takes time in proportion to the database ("" for the quick
// ones): said before it runs, so that a long first start after an upgrade is explained.
std::string_view SlowPart(int version) {
  switch (version) {
    case 8:
    case 11:
      return "rewrites the messages table";
    default:
      return "";
  }
}

}  // namespace

Status Migrate(sqlite::Connection& conn, int target, const MigrationLog& log) {
  if (target < 0) target = LatestVersion();
  auto current = CheckVersion(conn);
  if (!current.ok()) return current.status();
  if (*current >= target) return Status::Ok();  // nothing to write (works read-only too)
  // A new database (version 0) is created in no time: only an upgrade is worth a word.
  const MigrationLog say = *current > 0 ? log : MigrationLog{};
  for (;;) {
    MISSY_RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE", "begin migration of " + conn.path()));
    // Read the version inside the write transaction: another process may have
    // migrated between our check and our lock.
    auto version = CheckVersion(conn);
    if (!version.ok() || *version >= target) {
      (void)conn.Exec("ROLLBACK");
      return version.ok() ? Status::Ok() : version.status();
    }
    int next = *version + 1;
    const auto started = std::chrono::steady_clock::now();
    if (say) {
      const std::string_view slow = SlowPart(next);
      say("migrating " + conn.path() + " from schema version " + std::to_string(*version) + " to " +
          std::to_string(next) +
          (slow.empty()
               ? std::string()
               : " (this " + std::string(slow) + ": it takes a while on a large database)"));
    }
    Status st = conn.Exec(Migrations()[next - 1], "migration to schema version " +
                                                      std::to_string(next) + " of " + conn.path());
    if (st.ok()) st = conn.Exec("PRAGMA user_version = " + std::to_string(next));
    if (st.ok()) st = conn.Exec("COMMIT", "commit migration " + std::to_string(next));
    if (!st.ok()) {
      if (conn.InTransaction()) (void)conn.Exec("ROLLBACK");
      return st;
    }
    if (say) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - started)
                          .count();
      say("migrated " + conn.path() + " to schema version " + std::to_string(next) + " in " +
          std::to_string(ms) + " ms");
    }
  }
}

}  // namespace missy::schema
