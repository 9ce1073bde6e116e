// Database: missyd's SQLite engine (WAL, synchronous=FULL, busy_timeout, migrations
// keyed on PRAGMA user_version). The stores (storage/*_store.h) run their SQL through it.
// Thread-safe: any method may be called from any thread.
//
// Writes run on one writer thread, which gathers the writes queued meanwhile into one
// transaction (group commit); each write runs in its own savepoint, so a write that
// fails leaves nothing behind and does not affect the others. A write is acknowledged
// (Write returns, WriteAsync's `done` runs) only after its transaction committed and
// the WAL was fsynced. Disk full, read-only file or I/O error → kUnavailable, and reads
// keep working. A database whose user_version is newer than this build knows is
// refused by Open() with kCorruption, and left untouched.
//
// Between write transactions the writer runs background work: the text indexer
// (storage/text_indexer.h) indexes message and summary text for search in batches of
// options.index_batch, once no write arrived for options.index_idle_ms, and in
// alternation with write transactions while more than options.max_index_backlog
// messages and summaries wait.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace missy {

namespace sqlite {
class Connection;
}

// How Open() treats the file. Defaults are what the daemon uses.
struct DatabaseOptions {
  bool read_only = false;              // open without write access: every write fails kUnavailable
  int busy_timeout_ms = 5000;          // wait this long for another process's lock
  int64_t max_page_count = 0;          // > 0: cap the file at this many pages (writes beyond
                                       // it fail kUnavailable, as on a full disk)
  int max_batch = 1024;                // group commit: at most this many writes per transaction
  int group_commit_wait_us = 0;        // when fewer writes are queued than the last
                                       // transaction served, wait up to this long (and at
                                       // most half as long as its COMMIT took) for them to
                                       // gather: one fsync for all (0 = never wait)
  int index_batch = 500;               // message text indexed per index transaction (see top)
  int index_idle_ms = 5;               // the writer indexes after this long without writes
  int64_t max_index_backlog = 100000;  // more messages than this waiting to be
                                       // indexed: index transactions alternate
                                       // with write ones
  int64_t cache_budget_bytes = int64_t{32} << 20;  // SQLite page cache of all connections
                                                   // together, split evenly between the
                                                   // writer and max_readers readers
                                                   // (PRAGMA cache_size = -KiB on each)
  int checkpoint_pages = 1000;  // a checkpoint thread copies the WAL back into the database
                                // file once it holds this many pages (SQLite's default)
  int max_readers = 6;          // read connections open at once; a Read waits while all are busy
                                // (a Read nested in another on the same thread gets one more)
  // Schema migrations' progress, a line before and after each (empty: none).
  std::function<void(const std::string&)> log;
};

// SQLite memory, for /v1/health and the memory bound (Database::MemoryStats).
struct DatabaseMemoryStats {
  int64_t sqlite_bytes = 0;             // sqlite3_memory_used(): all of SQLite's heap in this
                                        // process (every Database, caches, statements)
  int64_t sqlite_high_water_bytes = 0;  // the most sqlite_bytes has been since the process began
  int64_t cache_bytes = 0;              // page cache of this Database's open connections
                                        // (SQLITE_DBSTATUS_CACHE_USED; a busy reader counts as of
                                        // its last release, the writer as of its last transaction)
  int64_t cache_budget_bytes = 0;       // DatabaseOptions::cache_budget_bytes
  int open_readers = 0;                 // read connections open now (busy or idle)
};

// Writer counters since Open (for /metrics and the benchmark).
struct WriterStats {
  int64_t transactions = 0;  // committed group (write) transactions
  int64_t writes = 0;        // writes served (committed or failed)
  int64_t failed_writes = 0;
  int64_t max_batch = 0;           // most writes seen in one transaction
  int64_t index_transactions = 0;  // committed background (indexing) transactions
  int64_t commits_with_fsync = 0;  // committed transactions that changed rows (each fsyncs
                                   // the WAL; an empty one writes nothing)
  int64_t gather_waits = 0;        // times the writer waited for writes to gather
  int64_t commit_us_total = 0;     // time spent in COMMIT (the WAL fsync) by write transactions
  int64_t writer_cpu_us = 0;       // CPU time of the writer thread (as of its last transaction)
  int64_t queue_depth = 0;         // writes queued now, not yet taken by a transaction
  int64_t checkpoints = 0;         // WAL checkpoints run by the checkpoint thread
  int64_t failed_checkpoints = 0;
};

// One write, running on the writer thread inside the group transaction (in its own
// savepoint). Stores take a Txn& so that a caller can compose several stores' writes
// into one atomic write. Valid only during the WriteFn call that received it.
class Txn {
 public:
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;

  sqlite::Connection& conn() { return conn_; }

  // Runs (writer thread, in registration order, before the write is acknowledged)
  // after the group transaction committed; dropped if this write or the transaction
  // is rolled back.
  void OnCommit(std::function<void()> fn) { on_commit_.push_back(std::move(fn)); }
  // Runs (writer thread) if this write's savepoint or the whole transaction is rolled
  // back, e.g. to forget a cached value the write changed.
  void OnRollback(std::function<void()> fn) { on_rollback_.push_back(std::move(fn)); }

  // State a store keeps for the writer (e.g. the audit log's cached tail), one T per
  // Database, shared by every store object over it and created on first use. Only
  // ever touched on the writer thread, so it needs no lock.
  template <typename T>
  T& WriterState() {
    std::shared_ptr<void>& slot = states_[std::type_index(typeid(T))];
    if (!slot) slot = std::make_shared<T>();
    return *static_cast<T*>(slot.get());
  }

 private:
  friend class Database;
  using States = std::unordered_map<std::type_index, std::shared_ptr<void>>;
  Txn(sqlite::Connection& conn, States& states) : conn_(conn), states_(states) {}

  sqlite::Connection& conn_;
  States& states_;
  std::vector<std::function<void()>> on_commit_;
  std::vector<std::function<void()>> on_rollback_;
};

// Work the writer thread does between write transactions (the message indexer). Both
// calls run on the writer connection, on the writer thread.
class BackgroundWork {
 public:
  virtual ~BackgroundWork() = default;
  // Units pending (e.g. messages not yet indexed); called at the end of each write
  // transaction, just before its COMMIT (the value counts once it committed), and
  // outside a transaction before each background run.
  virtual Result<int64_t> Pending(sqlite::Connection& conn) = 0;
  // Does at most `limit` units inside a write transaction the writer opened (and
  // commits); returns how many units are left (an upper bound).
  virtual Result<int64_t> Run(sqlite::Connection& conn, int64_t limit) = 0;
};

class Database {
 public:
  // Opens (creating if absent) and migrates to the latest schema version. The writer
  // runs the message indexer as its background work.
  static Result<std::unique_ptr<Database>> Open(const std::string& path,
                                                const DatabaseOptions& options = {});
  // Serves every queued write (and the writes their callbacks queue), then stops.
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // The schema version this build writes, and the one of the open file (-1 on error).
  static int LatestSchemaVersion();
  int SchemaVersion();

  using WriteFn = std::function<Status(Txn&)>;
  // Runs `fn` on the writer thread in the next group transaction and blocks until that
  // transaction committed (and the write's OnCommit hooks ran) or failed. When `fn`
  // fails, or the transaction does, nothing of `fn` is stored and the error is
  // returned. `fn` must not call Write (it may call WriteAsync). Called on the writer
  // thread itself (from a hook or a `done`), fails with kInternal instead of deadlocking.
  Status Write(WriteFn fn);
  // Asynchronous Write: returns at once; `done` runs on the writer thread after the
  // commit (after the write's OnCommit hooks) or the failure. `done` never runs on the
  // caller's thread, and must not block (the writer waits for it).
  void WriteAsync(WriteFn fn, std::function<void(Status)> done);

  using ReadFn = std::function<Status(sqlite::Connection&)>;
  // Runs `fn` on a pooled read-only connection inside one read transaction (a
  // consistent snapshot of everything committed before it began). Returns fn's status.
  Status Read(const ReadFn& fn);

  WriterStats GetWriterStats();
  DatabaseMemoryStats MemoryStats();
  // The page cache each connection may hold (PRAGMA cache_size = -KiB): the budget split
  // evenly between the writer and options.max_readers readers, at least 64 KiB.
  static int64_t CacheKibPerConnection(const DatabaseOptions& options);
  const std::string& path() const;
  const DatabaseOptions& options() const;

 private:
  class Impl;
  explicit Database(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace missy
