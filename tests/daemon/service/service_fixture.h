// The in-process service fixture shared by tests/daemon/service and tests/daemon/http:
// a real Database on a temporary directory, its Stores, an AuditBus, a fake clock and a
// fake id source, a ConfigHolder (heuristic counting: no rank files needed) and the
// Services over them. Asynchronous calls are awaited through futures with a bounded
// wait that fails the test on timeout.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/service/ports.h"
#include "daemon/service/services.h"
#include "storage/database.h"
#include "storage/stores.h"
#include "test_util.h"

namespace missy::testing {

inline constexpr std::chrono::seconds kWaitLimit{10};

// A clock the test sets.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t now_ms) : now_(now_ms) {}
  int64_t NowMs() const override { return now_.load(); }
  void Set(int64_t now_ms) { now_.store(now_ms); }
  void Advance(int64_t ms) { now_.fetch_add(ms); }

 private:
  std::atomic<int64_t> now_;
};

// Predictable ids: "id000001", "id000002", ...
class FakeIds final : public IdSource {
 public:
  std::string NewId() override {
    char buf[32];
    std::snprintf(buf, sizeof buf, "id%06d", next_.fetch_add(1) + 1);
    return buf;
  }
  int issued() const { return next_.load(); }

 private:
  std::atomic<int> next_{0};
};

// Collects the one answer of an asynchronous call. Counts every call of the callback,
// so a test can check "exactly once".
template <typename R>
class Awaiter {
 public:
  Awaiter() : state_(std::make_shared<State>()) {}
  Awaiter(Awaiter&&) = default;  // not copyable: one answer, one waiter
  Awaiter& operator=(Awaiter&&) = default;

  std::function<void(R)> Callback() {
    std::shared_ptr<State> state = state_;
    return [state](R r) {
      if (state->calls.fetch_add(1) == 0) state->promise.set_value(std::move(r));
    };
  }
  // The answer, or nullopt (and a test failure) after `limit`.
  std::optional<R> Wait(std::chrono::milliseconds limit = kWaitLimit) {
    if (state_->future.wait_for(limit) != std::future_status::ready) {
      ADD_FAILURE() << "no answer within " << limit.count() << " ms";
      return std::nullopt;
    }
    return state_->future.get();
  }
  bool ready() const {
    return state_->future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }
  int calls() const { return state_->calls.load(); }

 private:
  struct State {
    std::promise<R> promise;
    std::future<R> future = promise.get_future();
    std::atomic<int> calls{0};
  };
  std::shared_ptr<State> state_;
};

// Holds the storage writer inside one write until Release() (or destruction): writes
// queued meanwhile wait, then commit together in the next group transaction. Nothing
// can commit while it holds, so "answered without waiting for a commit" becomes
// deterministic to test.
class WriterBlock {
 public:
  explicit WriterBlock(Database& db) {
    auto entered = std::make_shared<std::promise<void>>();
    std::future<void> entered_f = entered->get_future();
    std::shared_future<void> gate = gate_.get_future().share();
    auto finished = std::make_shared<std::promise<Status>>();
    finished_ = finished->get_future();
    db.WriteAsync(
        [entered, gate](Txn&) {
          entered->set_value();
          // Bounded: a failing test must not hang the writer forever.
          if (gate.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
            return Status::Internal("WriterBlock never released");
          }
          return Status::Ok();
        },
        [finished](Status st) { finished->set_value(std::move(st)); });
    holding_ = entered_f.wait_for(kWaitLimit) == std::future_status::ready;
    EXPECT_TRUE(holding_) << "the writer never picked up the blocking write";
  }
  ~WriterBlock() { (void)Release(); }
  WriterBlock(const WriterBlock&) = delete;
  WriterBlock& operator=(const WriterBlock&) = delete;

  // Lets the writer go on; returns the blocking write's own status after its commit.
  Status Release() {
    if (!released_) {
      released_ = true;
      gate_.set_value();
      if (finished_.wait_for(kWaitLimit) != std::future_status::ready) {
        ADD_FAILURE() << "the blocked write did not finish";
        return Status::Internal("timed out");
      }
      status_ = finished_.get();
    }
    return status_;
  }
  bool holding() const { return holding_; }

 private:
  std::promise<void> gate_;
  std::future<Status> finished_;
  Status status_;
  bool holding_ = false;
  bool released_ = false;
};

// Messages of a tool round.
inline Message CallMessage(const std::string& call_id, const std::string& tool = "bash",
                           const std::string& arguments = "{}") {
  return Message::AssistantCalls({ToolCall{call_id, "function", tool, arguments}});
}

// A text of roughly `words` distinct-ish words (not compressible to nothing by any
// counter: each word carries its index).
inline std::string Words(int words, const std::string& stem = "line") {
  std::string out;
  out.reserve(static_cast<size_t>(words) * 10);
  for (int i = 0; i < words; ++i) {
    if (i > 0) out += (i % 12 == 0) ? '\n' : ' ';
    out += stem + std::to_string(i);
  }
  return out;
}

// `count` rounds from `first`: a request naming a file, a call running its test, an
// output of about `words` words ending in an error line, an acknowledgement.
inline std::vector<Message> ErrorRounds(int first, int count, int words = 200) {
  std::vector<Message> out;
  for (int i = first; i < first + count; ++i) {
    const std::string n = std::to_string(i);
    out.push_back(Message::User("step " + n + ": fix src/module_" + n + ".cc"));
    out.push_back(CallMessage("call_" + n, "bash", R"({"command":"make test_)" + n + R"("})"));
    out.push_back(Message::ToolResult(
        "call_" + n, Words(words, "log" + n + "_") + "\nerror: test_" + n + " failed", "bash"));
    out.push_back(Message::Assistant("fixed module " + n));
  }
  return out;
}

// Where two contexts first differ, with the text around it ("" when they are the same).
inline std::string FirstDifference(const std::vector<Message>& a, const std::vector<Message>& b) {
  size_t same = 0;
  while (same < a.size() && same < b.size() && a[same] == b[same]) ++same;
  if (same == a.size() && same == b.size()) return "";
  std::string out = "differ at message " + std::to_string(same) + " of " +
                    std::to_string(a.size()) + "/" + std::to_string(b.size());
  if (same < a.size() && same < b.size()) {
    const std::string x = a[same].PlainText(), y = b[same].PlainText();
    size_t k = 0;
    while (k < x.size() && k < y.size() && x[k] == y[k]) ++k;
    const size_t from = k > 60 ? k - 60 : 0;
    out += " (char " + std::to_string(k) + "): [" + x.substr(from, 160) + "] vs [" +
           y.substr(from, 160) + "]";
  }
  return out;
}

class ServiceFixture : public ::testing::Test {
 protected:
  static constexpr int64_t kStartMs = 1'760'000'000'000;  // 2025-10-09

  ServiceFixture() : clock_(kStartMs) {
    spdlog::set_level(spdlog::level::warn);  // the services log every create at info
    config_ = std::make_shared<DaemonConfig>();
    config_->tokenizer = TokenizerMode::kHeuristic;
    config_->missy_home = dir_.path();
  }

  void SetUp() override { Open(); }
  void TearDown() override { Close(); }

  std::string db_path() const { return dir_.Join("missyd.db"); }

  // Opens the database at db_path() and builds everything over it.
  void Open() {
    auto db = Database::Open(db_path(), db_options_);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    stores_ = std::make_unique<Stores>(*db_);
    audit_ = std::make_unique<AuditBus>(*db_, stores_->audit, clock_);
    holder_ = std::make_unique<ConfigHolder>(config_);
    ServiceDeps deps;
    deps.db = db_.get();
    deps.stores = stores_.get();
    deps.clock = &clock_;
    deps.ids = &ids_;
    deps.tokenizers = nullptr;
    deps.audit = audit_.get();
    deps.config = holder_.get();
    services_ = std::make_unique<Services>(deps);
    OnOpened();
  }
  // Hook for fixtures that build more over the services (the HTTP Api).
  virtual void OnOpened() {}
  virtual void OnClosing() {}

  // Tears down in dependency order: the services finish their writes and continuations,
  // the Database serves what is still queued (hooks use the bus and the stores), then
  // the rest goes.
  void Close() {
    OnClosing();
    services_.reset();
    db_.reset();
    audit_.reset();
    stores_.reset();
    holder_.reset();
  }
  // A daemon restart over the same file: nothing survives but what was committed.
  void Reopen() {
    Close();
    Open();
  }
  // A daemon of its own for the next session: a new database, nothing cached.
  void FreshDaemon() {
    Close();
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::error_code ec;
      std::filesystem::remove(db_path() + suffix, ec);
    }
    Open();
  }

  // Changes the configuration in force (like a SIGHUP reload).
  void SetConfig(const std::function<void(DaemonConfig&)>& edit) {
    auto next = std::make_shared<DaemonConfig>(*config_);
    edit(*next);
    config_ = next;
    if (holder_) holder_->Set(config_);
  }

  // --- Awaited service calls ---------------------------------------------------------

  Result<Session> Create(Session session, std::optional<bool> strict = std::nullopt) {
    Awaiter<Result<Session>> w;
    services_->sessions.Create(std::move(session), strict, w.Callback());
    std::optional<Result<Session>> r = w.Wait();
    if (!r) return Status::Internal("Create timed out");
    return std::move(*r);
  }
  Result<Session> Create(const std::string& id, std::optional<bool> strict = std::nullopt) {
    Session s;
    s.id = id;
    return Create(std::move(s), strict);
  }

  // Creates session `id` to replay `conv`: a leading system message becomes the session's
  // system prompt. Returns where the replay starts (past that message); npos on failure.
  size_t CreateForReplay(const std::string& id, const std::vector<Message>& conv) {
    Session s;
    s.id = id;
    size_t begin = 0;
    if (!conv.empty() && conv[0].role == Role::kSystem) {
      s.system_prompt = conv[0].PlainText();
      begin = 1;
    }
    return Create(std::move(s)).ok() ? begin : std::string::npos;
  }

  AppendOutcome Append(const std::string& id, std::vector<Message> messages,
                       std::optional<bool> strict = std::nullopt) {
    AppendRequest request;
    request.session_id = id;
    request.messages = std::move(messages);
    request.strict = strict;
    Awaiter<AppendOutcome> w;
    services_->sessions.Append(std::move(request), w.Callback());
    std::optional<AppendOutcome> r = w.Wait();
    if (!r) {
      AppendOutcome timed_out;
      timed_out.status = Status::Internal("Append timed out");
      return timed_out;
    }
    return std::move(*r);
  }

  Result<ContextOutcome> Context(ContextRequest request) {
    Awaiter<Result<ContextOutcome>> w;
    services_->context.Build(std::move(request), w.Callback());
    std::optional<Result<ContextOutcome>> r = w.Wait();
    if (!r) return Status::Internal("Context timed out");
    return std::move(*r);
  }
  Result<ContextOutcome> Context(const std::string& id, std::optional<int64_t> window = {},
                                 std::optional<int64_t> max_output = {}) {
    ContextRequest request;
    request.session_id = id;
    request.context_window = window;
    request.max_output_tokens = max_output;
    return Context(std::move(request));
  }

  // Runs the summarization job queued for session `id`, if there is one, as the background
  // worker would right away. The trigger checks on a worker thread: it is waited for first,
  // so that a replay is the same on every run. `wrote_leaves`: whether the job wrote any.
  void RunQueuedJob(const std::string& id, bool* wrote_leaves = nullptr) {
    if (wrote_leaves != nullptr) *wrote_leaves = false;
    services_->workers.Drain();
    Result<bool> queued = stores_->jobs.HasActive(id, "summarize");
    ASSERT_TRUE(queued.ok());
    if (!*queued) return;
    Result<std::optional<Job>> job = stores_->jobs.Claim(clock_.NowMs(), 60000);
    ASSERT_TRUE(job.ok() && job->has_value());
    SummarizeRequest req;
    req.session_id = (*job)->session_id;
    Result<SummarizeOutcome> out = services_->summarization.Summarize(req);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    if (wrote_leaves != nullptr) *wrote_leaves = out->leaves > 0;
    ASSERT_TRUE(stores_->jobs.Complete((*job)->id, clock_.NowMs()).ok());
  }

  Result<UsageOutcome> Usage(UsageReport report) {
    Awaiter<Result<UsageOutcome>> w;
    services_->usage.Report(std::move(report), w.Callback());
    std::optional<Result<UsageOutcome>> r = w.Wait();
    if (!r) return Status::Internal("Usage timed out");
    return std::move(*r);
  }

  // Waits until every event emitted (and write queued) so far is committed.
  Status Flush() {
    Awaiter<Status> w;
    audit_->AfterPending(w.Callback());
    std::optional<Status> st = w.Wait();
    if (!st) return Status::Internal("AfterPending timed out");
    return *st;
  }

  // Audit events of one type (all of them), after Flush().
  std::vector<AuditEvent> Events(const std::string& type) {
    EXPECT_TRUE(Flush().ok());
    Result<std::vector<AuditEvent>> events = stores_->audit.Since(0, 0, type);
    EXPECT_TRUE(events.ok()) << events.status().ToString();
    return events.ok() ? *events : std::vector<AuditEvent>{};
  }

  // The stored messages of a session.
  std::vector<StoredMessage> Stored(const std::string& id) {
    Result<std::vector<StoredMessage>> rows = stores_->messages.Load(id, 0, 0);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *rows : std::vector<StoredMessage>{};
  }

  TempDir dir_;
  FakeClock clock_;
  FakeIds ids_;
  DatabaseOptions db_options_;
  std::shared_ptr<DaemonConfig> config_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<Stores> stores_;
  std::unique_ptr<AuditBus> audit_;
  std::unique_ptr<ConfigHolder> holder_;
  std::unique_ptr<Services> services_;
};

}  // namespace missy::testing
