#include "daemon/broker/audit_publisher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/audit_event.h"
#include "daemon/broker/nats_conn.h"
#include "storage/audit_log.h"

namespace missy {

using broker::NatsError;

struct AuditPublisher::Nats : broker::Connection {};

AuditPublisher::AuditPublisher(AuditLog& log, AuditPublisherOptions options)
    : log_(log), options_(std::move(options)), nats_(std::make_unique<Nats>()) {}

AuditPublisher::~AuditPublisher() { Stop(); }

void AuditPublisher::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Loop(); });
}

void AuditPublisher::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  progress_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AuditPublisher::Notify(int64_t committed_seq) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    wake = !notified_;  // one wake-up per round, not one per event (this is the writer)
    notified_ = true;
    stats_.head = std::max(stats_.head, committed_seq);
  }
  if (wake) cv_.notify_one();
}

AuditPublisherStats AuditPublisher::Stats() const {
  std::lock_guard lock(mu_);
  AuditPublisherStats out = stats_;
  if (!out.connected) out.rate = 0;  // nothing is being published
  return out;
}

bool AuditPublisher::WaitPublished(int64_t seq, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return progress_cv_.wait_for(lock, timeout,
                               [&] { return stopping_ || stats_.cursor >= seq; }) &&
         stats_.cursor >= seq;
}

void AuditPublisher::Failed(const Status& status) {
  bool log_it = false;
  {
    std::lock_guard lock(mu_);
    ++stats_.failures;
    log_it = stats_.connected || stats_.last_error != status.message();
    stats_.connected = false;
    stats_.last_error = status.message();
  }
  // Once per distinct failure, not once per retry.
  if (log_it) {
    spdlog::warn("broker {}: {} (audit events wait in the database and are published when it "
                 "is back)",
                 broker::RedactUrl(options_.endpoint.url), status.message());
  }
}

Status AuditPublisher::Connect() {
  broker::Endpoint endpoint = options_.endpoint;
  endpoint.name = "missyd " + options_.daemon_id + " audit";
  // A lost connection is a failure of the round: this loop reconnects, from the cursor.
  endpoint.reconnect = false;
  if (Status st = broker::Connect(endpoint, options_.ack_wait, *nats_); !st.ok()) return st;
  broker::StreamSpec stream{options_.stream, options_.subject_prefix + ".audit.>"};
  stream.duplicates = std::chrono::minutes(10);
  return broker::EnsureStream(nats_->js, stream);
}

Status AuditPublisher::Persist(bool force) {
  if (acked_ <= persisted_) return Status::Ok();
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - persisted_at_ < options_.persist_every) return Status::Ok();
  if (Status st = log_.AdvanceOutbox(options_.cursor_name, acked_); !st.ok()) return st;
  persisted_ = acked_;
  persisted_at_ = now;
  return Status::Ok();
}

Status AuditPublisher::PublishRound(bool* more) {
  *more = false;
  const int64_t* cursor = &acked_;
  Result<std::vector<AuditEvent>> events = log_.Since(*cursor, options_.page);
  if (!events.ok()) return events.status();
  const std::string prefix = options_.subject_prefix + ".audit." + options_.daemon_id + ".";
  int64_t acked = *cursor, fresh = 0, duplicates = 0;
  Status failure;
  for (const AuditEvent& e : *events) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    const std::string subject = prefix + broker::SubjectToken(e.category) + "." + e.event_type;
    const std::string data = AuditEventToJsonLine(e);
    const std::string msg_id = options_.daemon_id + ":" + std::to_string(e.seq);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = msg_id.c_str();
    po.MaxWait = options_.ack_wait.count();
    po.ExpectStream = options_.stream.c_str();
    jsPubAck* ack = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_Publish(&ack, nats_->js, subject.c_str(), data.data(),
                                    static_cast<int>(data.size()), &po, &jerr);
    if (s != NATS_OK) {
      failure = Status::Unavailable("publish of event " + std::to_string(e.seq) + ": " +
                                    NatsError(s, jerr));
      break;
    }
    (ack->Duplicate ? duplicates : fresh) += 1;
    jsPubAck_Destroy(ack);
    acked = e.seq;
  }
  // What the broker acknowledged counts even when the round stopped early. It is recorded
  // in the database at most every persist_every (one commit, not one per round): after a
  // crash the few events since are published again and dropped as duplicates.
  acked_ = std::max(acked_, acked);
  if (Status st = Persist(/*force=*/false); !st.ok()) return st;
  {
    std::lock_guard lock(mu_);
    stats_.published += fresh;
    stats_.duplicates += duplicates;
    rate_events_ += fresh + duplicates;
    const auto now = std::chrono::steady_clock::now();
    const std::chrono::duration<double> window = now - rate_since_;
    if (window >= std::chrono::seconds(5)) {
      stats_.rate = static_cast<double>(rate_events_) / window.count();
      rate_since_ = now;
      rate_events_ = 0;
    }
    stats_.cursor = std::max(stats_.cursor, acked);
    if (!events->empty()) stats_.head = std::max(stats_.head, events->back().seq);
  }
  progress_cv_.notify_all();
  if (!failure.ok()) return failure;
  *more = static_cast<int>(events->size()) == options_.page;
  return Status::Ok();
}

void AuditPublisher::Loop() {
  auto backoff = options_.min_backoff;
  bool connected = false;
  bool have_cursor = false;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    Status st;
    bool more = false;
    if (!have_cursor) {  // where the last run's acknowledged events end
      Result<int64_t> cursor = log_.OutboxCursor(options_.cursor_name);
      if (cursor.ok()) {
        have_cursor = true;
        acked_ = persisted_ = *cursor;
        std::lock_guard lock(mu_);
        stats_.cursor = *cursor;
        stats_.head = std::max(stats_.head, *cursor);
      } else {
        st = cursor.status();
      }
    }
    if (st.ok() && !connected) {
      st = Connect();
      if (st.ok()) {
        connected = true;
        backoff = options_.min_backoff;
        {
          std::lock_guard lock(mu_);
          stats_.connected = true;
          stats_.last_error.clear();
        }
        spdlog::info("broker {}: publishing audit events to {} as {}",
                     broker::RedactUrl(options_.endpoint.url), options_.stream, options_.daemon_id);
      }
    }
    if (st.ok()) st = PublishRound(&more);
    if (!st.ok()) {
      connected = false;
      nats_->Close();
      Failed(st);
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, backoff, [&] { return stopping_; });
      backoff = std::min(backoff * 2, options_.max_backoff);
      continue;
    }
    if (more) continue;
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, options_.poll, [&] { return stopping_ || notified_; });
    notified_ = false;
  }
  if (Status st = Persist(/*force=*/true); !st.ok()) {
    spdlog::warn("broker: recording the audit outbox cursor at {}: {} (the events since the "
                 "last record are published again at the next start, as duplicates)",
                 acked_, st.message());
  }
  nats_->Close();
  std::lock_guard lock(mu_);
  stats_.connected = false;
}

}  // namespace missy
