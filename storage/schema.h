// Internal to storage/: the schema, as ordered migrations keyed on PRAGMA user_version.
// Migration i (1-based) takes a database from version i-1 to version i. Once a
// migration has shipped it is never edited: changes go into a new one.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "storage/sqlite.h"

namespace missy::schema {

// The SQL of each migration, in order; size() is the latest version.
const std::vector<std::string_view>& Migrations();
inline int LatestVersion() { return static_cast<int>(Migrations().size()); }

// A line of progress for the operator (the daemon logs it).
using MigrationLog = std::function<void(const std::string& line)>;

// Brings the database to `target` (default: latest) one migration per transaction.
// Refuses (kCorruption, file untouched) a database newer than this build knows.
// `target` exists so tests can build databases at every earlier version. When an
// existing database is upgraded, `log` (if set) gets a line before each migration
// (naming those that rewrite a table, long on a large database) and one after it, with
// its duration; a new database is created without a word.
Status Migrate(sqlite::Connection& conn, int target = -1, const MigrationLog& log = {});

// Reads PRAGMA user_version and refuses versions newer than LatestVersion().
Result<int> CheckVersion(sqlite::Connection& conn);

}  // namespace missy::schema
