#include "storage/schema.h"

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

}  // namespace

const std::vector<std::string_view>& Migrations() {
  static const std::vector<std::string_view> kMigrations = {kMigration1};
  return kMigrations;
}

Result<int> CheckVersion(sqlite::Connection& conn) {
  auto v = conn.QueryInt("PRAGMA user_version");
  if (!v.ok()) return v.status();
  if (*v > LatestVersion() || *v < 0) {
    return Status::Corruption("database " + conn.path() + " has schema version " + std::to_string(*v) +
                              ", this missyd knows up to " + std::to_string(LatestVersion()) +
                              "; refusing to open it (upgrade missyd)");
  }
  return static_cast<int>(*v);
}

Status Migrate(sqlite::Connection& conn, int target) {
  if (target < 0) target = LatestVersion();
  auto current = CheckVersion(conn);
  if (!current.ok()) return current.status();
  if (*current >= target) return Status::Ok();  // nothing to write (works read-only too)
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
    Status st = conn.Exec(Migrations()[next - 1],
                          "migration to schema version " + std::to_string(next) + " of " + conn.path());
    if (st.ok()) st = conn.Exec("PRAGMA user_version = " + std::to_string(next));
    if (st.ok()) st = conn.Exec("COMMIT", "commit migration " + std::to_string(next));
    if (!st.ok()) {
      if (conn.InTransaction()) (void)conn.Exec("ROLLBACK");
      return st;
    }
  }
}

}  // namespace missy::schema
