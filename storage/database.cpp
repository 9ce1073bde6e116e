#include "storage/database.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "storage/message_indexer.h"
#include "storage/schema.h"
#include "storage/sqlite.h"

namespace missy {

using sqlite::Connection;

class Database::Impl {
 public:
  Impl(std::string path, DatabaseOptions options, std::unique_ptr<Connection> writer,
       std::unique_ptr<BackgroundWork> background)
      : path_(std::move(path)),
        options_(options),
        writer_(std::move(writer)),
        background_(std::move(background)) {
    writer_thread_ = std::thread([this] { WriterLoop(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    writer_thread_.join();
  }

  Status Write(WriteFn fn) {
    if (std::this_thread::get_id() == writer_thread_.get_id()) {
      return Status::Internal("database " + path_ +
                              ": Write called on the writer thread (use WriteAsync)");
    }
    Request request;
    request.fn = std::move(fn);
    std::unique_lock lock(mu_);
    queue_.push_back(&request);
    queue_cv_.notify_one();
    done_cv_.wait(lock, [&] { return request.finished; });
    return std::move(request.status);
  }

  void WriteAsync(WriteFn fn, std::function<void(Status)> done) {
    auto* request = new Request;  // deleted by the writer once `done` ran
    request->fn = std::move(fn);
    request->done = std::move(done);
    request->async = true;
    std::lock_guard lock(mu_);
    queue_.push_back(request);
    queue_cv_.notify_one();
  }

  Status Read(const ReadFn& fn) {
    auto reader = AcquireReader();
    if (!reader.ok()) return reader.status();
    Connection& c = *reader->conn;
    {
      MISSY_ASSIGN_STMT(begin, c, "BEGIN");
      MISSY_RETURN_IF_ERROR(begin.Run("database " + path_ + ": begin read"));
    }
    Status st = fn(c);
    auto commit = c.Prepare("COMMIT");
    Status end = commit.ok() ? commit->Run("database " + path_ + ": end read") : commit.status();
    return st.ok() ? end : st;
  }

  WriterStats Stats() {
    std::lock_guard lock(mu_);
    return stats_;
  }

  const std::string& path() const { return path_; }
  const DatabaseOptions& options() const { return options_; }

 private:
  struct Request {
    WriteFn fn;
    std::function<void(Status)> done;  // async only
    bool async = false;
    Status status;
    bool finished = false;  // sync only, guarded by mu_
  };

  // --- The writer ---------------------------------------------------------------------

  // Between write transactions the writer runs the background work: once no write
  // arrived for options_.index_idle_ms (right after a commit the queue is empty only
  // because every writer is still being woken), or when more than
  // options_.max_index_backlog units are pending (then one background transaction
  // alternates with each write transaction).
  void WriterLoop() {
    std::vector<Request*> batch;
    std::vector<Request*> async_done;
    auto last_write = std::chrono::steady_clock::now();
    const auto idle = std::chrono::milliseconds(std::max(0, options_.index_idle_ms));
    const int64_t bound = std::max<int64_t>(0, options_.max_index_backlog);
    for (;;) {
      {
        std::unique_lock lock(mu_);
        queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || pending_ > 0; });
        const bool must_index = pending_ > bound && !background_forced_;
        if (queue_.empty() && stopping_) return;  // everything queued was served
        if (queue_.empty() && !must_index) {
          const auto idle_from = last_write + idle;
          if (std::chrono::steady_clock::now() < idle_from &&
              queue_cv_.wait_until(lock, idle_from, [&] { return stopping_ || !queue_.empty(); })) {
            continue;  // a write arrived (or the destructor): serve it first
          }
        }
        if (queue_.empty() || must_index) {
          background_forced_ = !queue_.empty();
          // Over the bound, work back down to it (and one batch more): a write
          // transaction may add more than one batch.
          const int64_t batch_size = std::max(1, options_.index_batch);
          const int64_t limit =
              must_index ? std::max(batch_size, pending_ - bound + batch_size) : batch_size;
          lock.unlock();
          RunBackground(limit);
          continue;
        }
        background_forced_ = false;
        const size_t n =
            std::min(queue_.size(), static_cast<size_t>(std::max(1, options_.max_batch)));
        batch.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
        queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      }
      const int64_t changes_before = writer_->TotalChanges();
      const bool committed = RunBatch(batch);
      // A transaction that changed no row writes no WAL frame: no fsync.
      const bool synced = committed && writer_->TotalChanges() != changes_before;
      last_write = std::chrono::steady_clock::now();
      int64_t pending = -1;
      if (committed) {
        auto p = background_->Pending(*writer_);
        if (p.ok()) pending = std::max<int64_t>(0, *p);
      }
      {
        std::lock_guard lock(mu_);
        if (pending >= 0) pending_ = pending;
        if (committed) ++stats_.transactions;
        if (synced) ++stats_.commits_with_fsync;
        stats_.writes += static_cast<int64_t>(batch.size());
        stats_.max_batch = std::max(stats_.max_batch, static_cast<int64_t>(batch.size()));
        // A sync request lives on its caller's stack: once finished it may be gone.
        for (Request* r : batch) {
          stats_.failed_writes += r->status.ok() ? 0 : 1;
          if (r->async) {
            async_done.push_back(r);
          } else {
            r->finished = true;
          }
        }
      }
      done_cv_.notify_all();
      for (Request* r : async_done) {
        if (r->done) r->done(std::move(r->status));
        delete r;
      }
      async_done.clear();
      batch.clear();
    }
  }

  // The message (with the path) is built only on error: this runs several times a write.
  Status RunStatement(std::string_view sql) {
    auto stmt = writer_->Prepare(sql);
    Status st = stmt.ok() ? stmt->Run() : stmt.status();
    if (st.ok()) return st;
    return Status(st.code(), "database " + path_ + ": " + std::string(sql) + ": " + st.message());
  }

  static void RunHooksBackwards(std::vector<std::function<void()>>& hooks) {
    for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) (*it)();
    hooks.clear();
  }

  // One group transaction: each write in its own savepoint. Returns whether the
  // transaction committed; each request's status is set.
  bool RunBatch(const std::vector<Request*>& batch) {
    commit_hooks_.clear();
    rollback_hooks_.clear();
    auto fail_all = [&](const Status& st) {
      for (Request* r : batch) r->status = st;
      RunHooksBackwards(rollback_hooks_);
      commit_hooks_.clear();
      return false;
    };
    Status begin = RunStatement("BEGIN IMMEDIATE");
    if (!begin.ok()) return fail_all(begin);
    for (Request* r : batch) {
      Txn txn(*writer_, states_);
      Status st = RunStatement("SAVEPOINT w");
      if (st.ok()) st = r->fn(txn);
      if (!writer_->InTransaction()) {
        // SQLite rolled the whole transaction back (disk full, I/O error): every write
        // of the batch is lost, so none may be acknowledged.
        RunHooksBackwards(txn.on_rollback_);
        return fail_all(st.ok() ? Status::Unavailable("database " + path_ + ": transaction aborted")
                                : st);
      }
      if (st.ok()) st = RunStatement("RELEASE w");
      if (st.ok()) {
        for (auto& hook : txn.on_commit_) commit_hooks_.push_back(std::move(hook));
        for (auto& hook : txn.on_rollback_) rollback_hooks_.push_back(std::move(hook));
      } else {
        (void)RunStatement("ROLLBACK TO w");
        (void)RunStatement("RELEASE w");
        RunHooksBackwards(txn.on_rollback_);
      }
      r->status = std::move(st);
    }
    Status commit = RunStatement("COMMIT");
    if (!commit.ok()) {
      if (writer_->InTransaction()) (void)RunStatement("ROLLBACK");
      return fail_all(commit);
    }
    rollback_hooks_.clear();
    for (auto& hook : commit_hooks_) hook();
    commit_hooks_.clear();
    return true;
  }

  // One background transaction of at most `limit` units.
  void RunBackground(int64_t limit) {
    int64_t remaining = 0;
    auto pending = background_->Pending(*writer_);  // outside a transaction: no lock taken
    Status st = pending.status();
    if (st.ok() && *pending <= 0) {
      std::lock_guard lock(mu_);
      pending_ = 0;
      return;
    }
    if (st.ok()) st = RunStatement("BEGIN IMMEDIATE");
    if (st.ok()) {
      auto left = background_->Run(*writer_, limit);
      st = left.ok() ? RunStatement("COMMIT") : left.status();
      if (left.ok()) remaining = *left;
    }
    if (!st.ok() && writer_->InTransaction()) (void)RunStatement("ROLLBACK");
    std::lock_guard lock(mu_);
    // On failure (disk full, read-only) wait for the next committed write to retry;
    // a search catches up (or falls back) by itself.
    pending_ = st.ok() ? remaining : 0;
    if (st.ok()) {
      ++stats_.index_transactions;
      ++stats_.commits_with_fsync;
    }
  }

  // --- Readers ------------------------------------------------------------------------

  struct ReaderLease {
    Impl* owner = nullptr;
    std::unique_ptr<Connection> conn;
    ReaderLease(Impl* o, std::unique_ptr<Connection> c) : owner(o), conn(std::move(c)) {}
    ReaderLease(ReaderLease&& other) noexcept : owner(other.owner), conn(std::move(other.conn)) {}
    ReaderLease& operator=(ReaderLease&&) = delete;
    ~ReaderLease() {
      if (conn) owner->ReleaseReader(std::move(conn));
    }
  };

  Result<ReaderLease> AcquireReader() {
    {
      std::lock_guard lock(readers_mu_);
      if (!idle_readers_.empty()) {
        auto conn = std::move(idle_readers_.back());
        idle_readers_.pop_back();
        return ReaderLease(this, std::move(conn));
      }
    }
    auto conn = Connection::Open(path_, Connection::Mode::kReadOnly);
    if (!conn.ok()) return conn.status();
    (*conn)->SetBusyTimeout(options_.busy_timeout_ms);
    MISSY_RETURN_IF_ERROR(
        (*conn)->Exec("PRAGMA cache_size = -" +
                      std::to_string(std::max<int64_t>(1, options_.cache_kib_per_connection))));
    return ReaderLease(this, std::move(*conn));
  }

  void ReleaseReader(std::unique_ptr<Connection> conn) {
    // A snapshot left open (a failed COMMIT) would pin the connection to old data.
    if (conn->InTransaction()) {
      (void)conn->Exec("ROLLBACK");
      if (conn->InTransaction()) return;  // drop it
    }
    std::lock_guard lock(readers_mu_);
    if (static_cast<int>(idle_readers_.size()) < std::max(0, options_.max_readers)) {
      idle_readers_.push_back(std::move(conn));
    }
  }

  const std::string path_;
  const DatabaseOptions options_;
  std::unique_ptr<Connection> writer_;                 // writer thread only
  std::unique_ptr<BackgroundWork> background_;         // writer thread only
  Txn::States states_;                                 // writer thread only
  std::vector<std::function<void()>> commit_hooks_;    // writer thread only
  std::vector<std::function<void()>> rollback_hooks_;  // writer thread only

  std::mutex mu_;
  std::condition_variable queue_cv_;
  std::condition_variable done_cv_;
  std::deque<Request*> queue_;      // guarded by mu_
  bool stopping_ = false;           // guarded by mu_
  WriterStats stats_;               // guarded by mu_
  int64_t pending_ = 1;             // background units pending, approx. (guarded by
                                    // mu_; 1: look once after Open)
  bool background_forced_ = false;  // the last background run went ahead of queued writes
  std::thread writer_thread_;

  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Connection>> idle_readers_;  // guarded by readers_mu_
};

// --- Database -------------------------------------------------------------------------

Database::Database(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Database::~Database() = default;

int Database::LatestSchemaVersion() { return schema::LatestVersion(); }

int Database::SchemaVersion() {
  int64_t version = -1;
  Status st = Read([&](Connection& c) -> Status {
    auto v = c.QueryInt("PRAGMA user_version");
    if (!v.ok()) return v.status();
    version = *v;
    return Status::Ok();
  });
  return st.ok() ? static_cast<int>(version) : -1;
}

Status Database::Write(WriteFn fn) { return impl_->Write(std::move(fn)); }

void Database::WriteAsync(WriteFn fn, std::function<void(Status)> done) {
  impl_->WriteAsync(std::move(fn), std::move(done));
}

Status Database::Read(const ReadFn& fn) { return impl_->Read(fn); }
WriterStats Database::GetWriterStats() { return impl_->Stats(); }
const std::string& Database::path() const { return impl_->path(); }
const DatabaseOptions& Database::options() const { return impl_->options(); }

Result<std::unique_ptr<Database>> Database::Open(const std::string& path,
                                                 const DatabaseOptions& options) {
  auto conn = Connection::Open(
      path, options.read_only ? Connection::Mode::kReadOnly : Connection::Mode::kReadWriteCreate);
  if (!conn.ok()) return conn.status();
  Connection& c = **conn;
  c.SetBusyTimeout(options.busy_timeout_ms);
  // Check the version before anything that could write (journal_mode changes the
  // header): a database from a newer missyd is refused and left byte-for-byte alone.
  auto version = schema::CheckVersion(c);
  if (!version.ok()) {
    if (version.status().code() == StatusCode::kCorruption) return version.status();
    return Status(version.status().code(), "database " + path + ": " + version.status().message());
  }
  if (!options.read_only) {
    MISSY_ASSIGN_STMT(mode, c, "PRAGMA journal_mode = WAL");
    MISSY_ASSIGN_NEXT(row, mode, "database " + path + ": set WAL mode");
    if (!row || mode.Text(0) != "wal") {
      return Status::Unavailable("database " + path + ": cannot use WAL mode (journal_mode is " +
                                 (row ? mode.Text(0) : std::string("unknown")) + ")");
    }
  }
  // FULL: a commit is on disk (WAL fsynced) before it is acknowledged. NORMAL would
  // lose the last commits on power loss, and group commit makes FULL cheap.
  MISSY_RETURN_IF_ERROR(
      c.Exec("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; "
             "PRAGMA journal_size_limit = 67108864; PRAGMA cache_size = -" +
                 std::to_string(std::max<int64_t>(1, options.cache_kib_per_connection)),
             "database " + path + ": set pragmas"));
  if (options.max_page_count > 0) {
    MISSY_RETURN_IF_ERROR(
        c.Exec("PRAGMA max_page_count = " + std::to_string(options.max_page_count)));
  }
  MISSY_RETURN_IF_ERROR(schema::Migrate(c));
  auto impl =
      std::make_unique<Impl>(path, options, std::move(*conn), std::make_unique<MessageIndexer>());
  return std::unique_ptr<Database>(new Database(std::move(impl)));
}

}  // namespace missy
