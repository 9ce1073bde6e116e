#include "storage/database.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "storage/schema.h"
#include "storage/sqlite.h"
#include "storage/text_indexer.h"

namespace missy {

using sqlite::Connection;

namespace {

// The readers each thread holds a lease on now, by Database (a Read nested in another
// may not wait for a free reader: it could wait for itself).
thread_local std::vector<const void*> tls_held_readers;

bool HoldsReader(const void* db) {
  return std::find(tls_held_readers.begin(), tls_held_readers.end(), db) != tls_held_readers.end();
}

Status SetCacheSize(Connection& c, const DatabaseOptions& options, const std::string& what) {
  return c.Exec("PRAGMA cache_size = -" + std::to_string(Database::CacheKibPerConnection(options)),
                what);
}

int64_t ThreadCpuMicros() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace

class Database::Impl {
 public:
  // `checkpointer`: a read-write connection for WAL checkpoints, or null (read-only).
  Impl(std::string path, DatabaseOptions options, std::unique_ptr<Connection> writer,
       std::unique_ptr<BackgroundWork> background, std::unique_ptr<Connection> checkpointer)
      : path_(std::move(path)),
        options_(options),
        writer_(std::move(writer)),
        background_(std::move(background)),
        checkpointer_(std::move(checkpointer)) {
    writer_cache_bytes_ = writer_->CacheUsedBytes();
    if (checkpointer_) {
      // The WAL is copied back into the database file by a thread of its own, not in
      // the COMMIT of the write transaction that crossed the threshold (SQLite's
      // automatic checkpoint would stall every writer waiting on that transaction).
      const int threshold = std::max(1, options_.checkpoint_pages);
      writer_->SetWalHook([this, threshold](int frames) {
        if (frames >= threshold) RequestCheckpoint();
        // The checkpoint thread fell far behind (a busy machine): the writer copies the
        // WAL itself between transactions, waiting for it if need be, so the WAL stays
        // bounded.
        far_behind_.store(frames >= 4 * threshold, std::memory_order_release);
        if (frames >= 4 * threshold) finish_checkpoint_.store(true, std::memory_order_release);
      });
      checkpoint_thread_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "missy-ckpt");
        CheckpointLoop();
      });
    }
    writer_thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "missy-writer");  // for top -H and perf
      WriterLoop();
    });
  }

  ~Impl() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    writer_thread_.join();
    if (checkpoint_thread_.joinable()) {
      {
        std::lock_guard lock(checkpoint_mu_);
        checkpoint_stopping_ = true;
      }
      checkpoint_cv_.notify_one();
      checkpoint_thread_.join();
    }
  }

  Status Write(WriteFn fn) {
    if (std::this_thread::get_id() == writer_thread_.get_id()) {
      return Status::Internal("database " + path_ +
                              ": Write called on the writer thread (use WriteAsync)");
    }
    Request request;
    request.fn = std::move(fn);
    Enqueue(&request);
    request.Wait();  // this caller's own wake-up: no herd on a shared lock
    return std::move(request.status);
  }

  void WriteAsync(WriteFn fn, std::function<void(Status)> done) {
    auto* request = new Request;  // deleted by the writer once `done` ran
    request->fn = std::move(fn);
    request->done = std::move(done);
    request->async = true;
    Enqueue(request);
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
    WriterStats out = stats_;
    out.queue_depth = static_cast<int64_t>(queue_.size());
    return out;
  }

  DatabaseMemoryStats MemoryStats() {
    DatabaseMemoryStats out;
    out.sqlite_bytes = sqlite::MemoryUsed();
    out.sqlite_high_water_bytes = sqlite::MemoryHighWater();
    out.cache_budget_bytes = options_.cache_budget_bytes;
    out.cache_bytes = writer_cache_bytes_.load(std::memory_order_relaxed);
    std::lock_guard lock(readers_mu_);
    for (const auto& [conn, bytes] : reader_cache_bytes_) out.cache_bytes += bytes;
    out.open_readers = static_cast<int>(open_readers_);
    return out;
  }

  const std::string& path() const { return path_; }
  const DatabaseOptions& options() const { return options_; }

 private:
  struct Request {
    WriteFn fn;
    std::function<void(Status)> done;  // async only
    bool async = false;
    Status status;
    // Sync only: the callers of one transaction wake each other in a binary tree (the
    // writer wakes the first; each woken caller wakes the next two), so the writer makes
    // one wake-up system call per transaction instead of one per caller, and no caller
    // contends for a lock on the way out. (Not a condition variable: the woken caller
    // would fight the writer for its mutex. Not std::binary_semaphore: libstdc++ spins
    // and yields before it sleeps, CPU the writer needs on a small machine.)
    std::atomic<uint32_t> woken{0};
    Request* wake_next[2] = {nullptr, nullptr};  // set by the writer before `woken`

    void Wait() {
      while (woken.load(std::memory_order_acquire) == 0) {
        syscall(SYS_futex, reinterpret_cast<uint32_t*>(&woken), FUTEX_WAIT_PRIVATE, 0, nullptr,
                nullptr, 0);
      }
      for (Request* next : wake_next) {
        if (next) next->Wake();
      }
    }
    // The request may be gone as soon as `woken` is set (its caller may already be
    // awake): the wake-up of a stale address is harmless, and nothing else touches it.
    void Wake() {
      woken.store(1, std::memory_order_release);
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&woken), FUTEX_WAKE_PRIVATE, 1, nullptr,
              nullptr, 0);
    }
  };

  void Enqueue(Request* request) {
    bool wake = false;
    {
      std::lock_guard lock(mu_);
      queue_.push_back(request);
      wake = queue_.size() >= wake_at_;
    }
    if (wake) queue_cv_.notify_one();  // no system call unless the writer waits
  }

  // --- The checkpointer -----------------------------------------------------------------

  void RequestCheckpoint() {  // on the writer thread, inside its COMMIT
    {
      std::lock_guard lock(checkpoint_mu_);
      if (checkpoint_requested_) return;
      checkpoint_requested_ = true;
    }
    checkpoint_cv_.notify_one();
  }

  // Passive checkpoints never wait for a lock: writes go on meanwhile, and the writer
  // starts the WAL over once a checkpoint copied all of it and no reader needs it.
  void CheckpointLoop() {
    for (;;) {
      {
        std::unique_lock lock(checkpoint_mu_);
        checkpoint_cv_.wait(lock, [&] { return checkpoint_stopping_ || checkpoint_requested_; });
        if (checkpoint_stopping_) return;
        checkpoint_requested_ = false;
      }
      int wal_frames = -1, copied = -1;
      Status st = checkpointer_->CheckpointPassive(&wal_frames, &copied);
      {
        std::lock_guard lock(mu_);
        if (st.ok()) {
          ++stats_.checkpoints;
        } else {
          ++stats_.failed_checkpoints;  // retried when the next commit crosses the threshold
        }
      }
      // The writer kept appending meanwhile, so the WAL is never all copied when its next
      // transaction begins, and SQLite starts the WAL over only then: the writer copies
      // the few frames left itself, between two transactions (FinishCheckpoint).
      if (st.ok()) finish_checkpoint_.store(true, std::memory_order_release);
    }
  }

  // On the writer thread, outside a transaction, after the callers were woken.
  // When it could not copy everything (the checkpoint thread held the checkpoint lock,
  // or a reader still needs old frames), it tries again after the next transaction:
  // the WAL starts over only once a checkpoint copied all of it.
  void FinishCheckpoint() {
    int wal_frames = -1, copied = -1;
    Status st;
    if (far_behind_.load(std::memory_order_acquire)) {
      // Backpressure: the writer waits for the checkpoint thread's pass to end (SQLite
      // answers BUSY at once while it runs), then copies the rest and restarts the WAL.
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(std::max(1, options_.busy_timeout_ms));
      for (;;) {
        st = writer_->CheckpointRestart(&wal_frames, &copied);
        if (!st.ok() || wal_frames >= 0 || std::chrono::steady_clock::now() > until) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    } else {
      st = writer_->CheckpointPassive(&wal_frames, &copied);
    }
    if (st.ok() && (wal_frames < 0 || copied < wal_frames)) {
      finish_checkpoint_.store(true, std::memory_order_release);
    }
    std::lock_guard lock(mu_);
    if (!st.ok()) {
      ++stats_.failed_checkpoints;
    } else if (wal_frames >= 0) {
      ++stats_.checkpoints;
    }
  }

  // --- The writer ---------------------------------------------------------------------

  // Between write transactions the writer runs the background work: once no write
  // arrived for options_.index_idle_ms (right after a commit the queue is empty only
  // because every writer is still being woken), or when more than
  // options_.max_index_backlog units are pending (then one background transaction
  // alternates with each write transaction).
  void WriterLoop() {
    std::vector<Request*> batch;
    std::vector<Request*> async_done;
    std::vector<Request*> sync_done;
    auto last_write = std::chrono::steady_clock::now();
    const auto idle = std::chrono::milliseconds(std::max(0, options_.index_idle_ms));
    const int64_t bound = std::max<int64_t>(0, options_.max_index_backlog);
    size_t last_served = 0;  // writes in the last transaction
    std::chrono::steady_clock::duration last_commit{};
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
        GatherWrites(lock, last_served, last_commit);
        const size_t n =
            std::min(queue_.size(), static_cast<size_t>(std::max(1, options_.max_batch)));
        batch.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
        queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      }
      const int64_t changes_before = writer_->TotalChanges();
      int64_t pending = -1;
      const bool committed = RunBatch(batch, &pending, &last_commit);
      // A transaction that changed no row writes no WAL frame: no fsync.
      const bool synced = committed && writer_->TotalChanges() != changes_before;
      last_write = std::chrono::steady_clock::now();
      last_served = batch.size();
      writer_cache_bytes_.store(writer_->CacheUsedBytes(), std::memory_order_relaxed);
      {
        std::lock_guard lock(mu_);
        if (committed && pending >= 0) pending_ = pending;
        if (committed) ++stats_.transactions;
        if (committed) {
          stats_.commit_us_total +=
              std::chrono::duration_cast<std::chrono::microseconds>(last_commit).count();
        }
        stats_.writer_cpu_us = ThreadCpuMicros();
        if (synced) ++stats_.commits_with_fsync;
        stats_.writes += static_cast<int64_t>(batch.size());
        stats_.max_batch = std::max(stats_.max_batch, static_cast<int64_t>(batch.size()));
        for (Request* r : batch) stats_.failed_writes += r->status.ok() ? 0 : 1;
      }
      // A sync request lives on its caller's stack: once woken it may be gone, so the
      // wake-up tree is linked first and only its root is woken here.
      sync_done.clear();
      for (Request* r : batch) (r->async ? async_done : sync_done).push_back(r);
      for (size_t i = 0; i < sync_done.size(); ++i) {
        for (size_t k = 0; k < 2; ++k) {
          const size_t child = 2 * i + 1 + k;
          sync_done[i]->wake_next[k] = child < sync_done.size() ? sync_done[child] : nullptr;
        }
      }
      if (!sync_done.empty()) sync_done.front()->Wake();
      sync_done.clear();
      for (Request* r : async_done) {
        if (r->done) r->done(std::move(r->status));
        delete r;
      }
      async_done.clear();
      batch.clear();
      if (finish_checkpoint_.exchange(false, std::memory_order_acq_rel)) FinishCheckpoint();
    }
  }

  // Group commit gathers the writes that arrive while a transaction commits. Right after
  // a commit the callers it served are still being woken and queue their next writes
  // one by one: taking the first few at once would split them over two fsyncs. So while
  // fewer writes are queued than the last transaction served, wait a little for the
  // others: at most options_.group_commit_wait_us, and at most half of the last COMMIT
  // (the fsync this saves), so a fast disk waits little.
  void GatherWrites(std::unique_lock<std::mutex>& lock, size_t last_served,
                    std::chrono::steady_clock::duration last_commit) {
    if (queue_.size() >= last_served || stopping_) return;
    const auto wait = std::min<std::chrono::steady_clock::duration>(
        std::chrono::microseconds(std::max(0, options_.group_commit_wait_us)), last_commit / 2);
    if (wait <= std::chrono::steady_clock::duration::zero()) return;
    ++stats_.gather_waits;
    wake_at_ = last_served;  // callers signal only once the queue is that long
    queue_cv_.wait_for(lock, wait, [&] { return stopping_ || queue_.size() >= last_served; });
    wake_at_ = 1;
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
  // transaction committed; each request's status is set. `*pending` is the background
  // work pending once it commits (read inside it: no read transaction of its own), or
  // -1 when unknown; `*commit_time` how long the COMMIT took.
  bool RunBatch(const std::vector<Request*>& batch, int64_t* pending,
                std::chrono::steady_clock::duration* commit_time) {
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
    auto p = background_->Pending(*writer_);
    *pending = p.ok() ? std::max<int64_t>(0, *p) : -1;
    const auto commit_start = std::chrono::steady_clock::now();
    Status commit = RunStatement("COMMIT");
    *commit_time = std::chrono::steady_clock::now() - commit_start;
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
    writer_cache_bytes_.store(writer_->CacheUsedBytes(), std::memory_order_relaxed);
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
    ReaderLease(Impl* o, std::unique_ptr<Connection> c) : owner(o), conn(std::move(c)) {
      tls_held_readers.push_back(owner);
    }
    ReaderLease(ReaderLease&& other) noexcept : owner(other.owner), conn(std::move(other.conn)) {}
    ReaderLease& operator=(ReaderLease&&) = delete;
    ~ReaderLease() {
      if (!conn) return;  // moved from
      tls_held_readers.erase(
          std::find(tls_held_readers.rbegin(), tls_held_readers.rend(), owner).base() - 1);
      owner->ReleaseReader(std::move(conn));
    }
  };

  // An idle reader, else a new one while fewer than options_.max_readers are open, else
  // waits for one to be released. A Read nested in another on this thread never waits
  // (it could wait for itself): it may open one more.
  Result<ReaderLease> AcquireReader() {
    const size_t cap = static_cast<size_t>(std::max(1, options_.max_readers));
    {
      std::unique_lock lock(readers_mu_);
      if (!HoldsReader(this)) {
        readers_cv_.wait(lock, [&] { return !idle_readers_.empty() || open_readers_ < cap; });
      }
      if (!idle_readers_.empty()) {
        auto conn = std::move(idle_readers_.back());
        idle_readers_.pop_back();
        return ReaderLease(this, std::move(conn));
      }
      ++open_readers_;  // the slot is ours while we open, unlocked
    }
    auto opened = OpenReader();
    {
      std::lock_guard lock(readers_mu_);
      if (opened.ok()) {
        reader_cache_bytes_[opened->get()] = 0;
        return ReaderLease(this, std::move(*opened));
      }
      --open_readers_;
    }
    readers_cv_.notify_one();  // the slot is free again
    return opened.status();
  }

  Result<std::unique_ptr<Connection>> OpenReader() {
    auto conn = Connection::Open(path_, Connection::Mode::kReadOnly);
    if (!conn.ok()) return conn.status();
    (*conn)->SetBusyTimeout(options_.busy_timeout_ms);
    MISSY_RETURN_IF_ERROR(SetCacheSize(**conn, options_, "database " + path_ + ": cache size"));
    return std::move(*conn);
  }

  void ReleaseReader(std::unique_ptr<Connection> conn) {
    // A snapshot left open (a failed COMMIT) would pin the connection to old data.
    bool keep = true;
    if (conn->InTransaction()) {
      (void)conn->Exec("ROLLBACK");
      keep = !conn->InTransaction();  // else drop it
    }
    const int64_t cache = conn->CacheUsedBytes();
    const size_t cap = static_cast<size_t>(std::max(1, options_.max_readers));
    {
      std::lock_guard lock(readers_mu_);
      // Beyond the cap (a nested Read opened one more) a reader is closed.
      keep = keep && open_readers_ <= cap;
      if (keep) {
        reader_cache_bytes_[conn.get()] = cache;
        idle_readers_.push_back(std::move(conn));
      } else {
        reader_cache_bytes_.erase(conn.get());
        --open_readers_;
      }
    }
    readers_cv_.notify_one();
    // A dropped connection closes here, outside the lock.
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
  std::deque<Request*> queue_;      // guarded by mu_
  size_t wake_at_ = 1;              // queue length at which Enqueue wakes the writer (mu_)
  bool stopping_ = false;           // guarded by mu_
  WriterStats stats_;               // guarded by mu_
  int64_t pending_ = 1;             // background units pending, approx. (guarded by
                                    // mu_; 1: look once after Open)
  bool background_forced_ = false;  // the last background run went ahead of queued writes
  std::thread writer_thread_;

  std::atomic<int64_t> writer_cache_bytes_{0};  // sampled by the writer after each transaction

  std::unique_ptr<Connection> checkpointer_;  // checkpoint thread only (null: read-only)
  std::atomic<bool> far_behind_{false};       // the last commit left 4x the threshold in the WAL
  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  bool checkpoint_requested_ = false;           // guarded by checkpoint_mu_
  bool checkpoint_stopping_ = false;            // guarded by checkpoint_mu_
  std::atomic<bool> finish_checkpoint_{false};  // the checkpoint thread finished a pass
  std::thread checkpoint_thread_;

  std::mutex readers_mu_;
  std::condition_variable readers_cv_;                     // a reader was released
  std::vector<std::unique_ptr<Connection>> idle_readers_;  // guarded by readers_mu_
  size_t open_readers_ = 0;  // idle, busy or being opened (guarded by readers_mu_)
  // Every open reader's cache use at its last release (guarded by readers_mu_).
  std::unordered_map<const Connection*, int64_t> reader_cache_bytes_;
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
DatabaseMemoryStats Database::MemoryStats() { return impl_->MemoryStats(); }

int64_t Database::CacheKibPerConnection(const DatabaseOptions& options) {
  const int64_t connections = 1 + std::max(1, options.max_readers);
  return std::max<int64_t>(64, options.cache_budget_bytes / 1024 / connections);
}
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
                 std::to_string(CacheKibPerConnection(options)),
             "database " + path + ": set pragmas"));
  if (options.max_page_count > 0) {
    MISSY_RETURN_IF_ERROR(
        c.Exec("PRAGMA max_page_count = " + std::to_string(options.max_page_count)));
  }
  MISSY_RETURN_IF_ERROR(schema::Migrate(c, -1, options.log));
  std::unique_ptr<Connection> checkpointer;
  if (!options.read_only) {
    auto opened = Connection::Open(path, Connection::Mode::kReadWrite);
    if (!opened.ok()) return opened.status();
    // FULL: the database file is fsynced before the WAL is started over. A small cache:
    // a checkpoint copies pages from the WAL file, not through the cache.
    MISSY_RETURN_IF_ERROR((*opened)->Exec("PRAGMA synchronous = FULL; PRAGMA cache_size = -256",
                                          "database " + path + ": set checkpointer pragmas"));
    checkpointer = std::move(*opened);
  }
  auto impl = std::make_unique<Impl>(path, options, std::move(*conn),
                                     std::make_unique<TextIndexer>(), std::move(checkpointer));
  return std::unique_ptr<Database>(new Database(std::move(impl)));
}

}  // namespace missy
