// AuditPublisher: every audit event, also to a NATS JetStream stream (context.broker,
// docs/BROKER.md). It publishes from the durable outbox cursor in the audit log: the
// cursor advances only after the broker acknowledged the events (recorded at most once a
// second: a crash republishes those few, as duplicates), so a broker outage or
// a daemon crash loses nothing (events wait in SQLite and go out in order once the broker
// is back), and a republished event is dropped by the broker's duplicate window
// (Nats-Msg-Id = <daemon_id>:<seq>). Subjects: <prefix>.audit.<daemon_id>.<category>.<type>.
// Local subscribers of the audit socket never wait for the broker. One thread; nats.c
// stays in the .cpp (daemon/broker/nats_conn.h). Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "daemon/broker/audit_publisher_stats.h"
#include "daemon/broker/endpoint.h"

namespace missy {

class AuditLog;

struct AuditPublisherOptions {
  broker::Endpoint endpoint;  // url, credentials, TLS, connect timeout
  std::string subject_prefix = "missy";
  std::string daemon_id;                      // one subject token
  std::string stream = "MISSY_AUDIT";         // created if absent
  std::string cursor_name = "broker.audit";   // the outbox cursor in the audit log
  int page = 256;                             // events read and published per round
  std::chrono::milliseconds ack_wait{5000};   // one publish waits this long for its ack
  std::chrono::milliseconds poll{1000};       // looks for new events at least this often
  // The acknowledged position is recorded in the database at most this often (and at
  // Stop): one commit per second rather than one per round.
  std::chrono::milliseconds persist_every{1000};
  std::chrono::milliseconds min_backoff{250}, max_backoff{30000};  // after a failure
};


class AuditPublisher {
 public:
  AuditPublisher(AuditLog& log, AuditPublisherOptions options);
  ~AuditPublisher();  // Stop()
  AuditPublisher(const AuditPublisher&) = delete;
  AuditPublisher& operator=(const AuditPublisher&) = delete;

  void Start();
  // Finishes the round in progress (publishes nothing more) and disconnects.
  void Stop();
  // Events up to `committed_seq` were committed: publish them now rather than at the
  // next poll (0: the seq is unknown).
  void Notify(int64_t committed_seq = 0);
  AuditPublisherStats Stats() const;
  // Waits until every event up to `seq` was acknowledged (tests). The database records
  // it within persist_every, and at Stop.
  bool WaitPublished(int64_t seq, std::chrono::milliseconds timeout);

 private:
  struct Nats;  // the nats.c handles (audit_publisher.cpp)
  void Loop();
  Status Connect();
  Status PublishRound(bool* more);
  // Records acked_ as the outbox cursor when persist_every has passed (or `force`).
  Status Persist(bool force);
  void Failed(const Status& status);

  AuditLog& log_;
  const AuditPublisherOptions options_;
  std::unique_ptr<Nats> nats_;  // the publisher thread's alone
  // The publisher thread's alone: the last event the broker acknowledged, and the last
  // one recorded as the outbox cursor (and when).
  int64_t acked_ = 0;
  int64_t persisted_ = 0;
  std::chrono::steady_clock::time_point persisted_at_{};

  mutable std::mutex mu_;
  std::condition_variable cv_;          // Notify, Stop
  std::condition_variable progress_cv_;  // the cursor moved
  bool notified_ = false;                // guarded by mu_
  bool stopping_ = false;                // guarded by mu_
  AuditPublisherStats stats_;            // guarded by mu_
  // The publish rate's window (guarded by mu_): its start and the events acknowledged.
  std::chrono::steady_clock::time_point rate_since_ = std::chrono::steady_clock::now();
  int64_t rate_events_ = 0;
  std::thread thread_;
};

}  // namespace missy
