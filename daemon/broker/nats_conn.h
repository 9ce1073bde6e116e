// What the broker's parts share (the audit publisher, the job dispatcher, `missyd worker`):
// one NATS connection with JetStream made from context.broker (user/password, token or a
// .creds file; TLS with the server's certificate verified), the streams and the workers'
// consumer of distributed summarization, and nats.c's errors as text. Included by
// daemon/broker/*.cpp only: nats.c stays out of the rest of the daemon.
#pragma once

#include <nats/nats.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "daemon/broker/endpoint.h"

namespace missy::broker {

// The connection and its JetStream context; closes both when destroyed.
struct Connection {
  natsConnection* conn = nullptr;
  jsCtx* js = nullptr;
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { Close(); }
  void Close();
  bool connected() const;
};

// `js_wait`: how long a JetStream call (publish ack, stream lookup) waits.
Status Connect(const Endpoint& endpoint, std::chrono::milliseconds js_wait, Connection& out);

// What nats.c said, with the thread's last error text when it has one.
std::string NatsError(natsStatus s, jsErrCode jerr = static_cast<jsErrCode>(0));
// A subject token: separators and wildcards replaced by '_'.
std::string SubjectToken(std::string s);
// `url` without "user:password@" parts, for logs and errors.
std::string RedactUrl(const std::string& url);

// A stream created when absent (file storage); an existing one is left as it is.
struct StreamSpec {
  std::string name;
  std::string subjects;  // one subject filter, e.g. "missy.audit.>"
  bool work_queue = false;  // a message is removed once a consumer acked it
  std::chrono::milliseconds max_age{0};                     // 0: kept until removed
  std::chrono::milliseconds duplicates{std::chrono::minutes(2)};  // Nats-Msg-Id window
};
Status EnsureStream(jsCtx* js, const StreamSpec& spec);

// Distributed summarization's names (docs/BROKER.md).
inline constexpr char kJobsStream[] = "MISSY_JOBS";        // work queue, <prefix>.jobs.>
inline constexpr char kResultsStream[] = "MISSY_RESULTS";  // <prefix>.results.>, kept 1 h
inline constexpr char kWorkersConsumer[] = "workers";      // the durable all workers share
std::string JobsSubject(const std::string& prefix, const std::string& daemon_id);
std::string ResultsSubject(const std::string& prefix, const std::string& daemon_id);

struct JobQueueOptions {
  std::string subject_prefix = "missy";
  std::chrono::milliseconds ack_wait{30000};  // a silent worker loses its job after this
  int64_t max_deliver = 3;
};
// Creates MISSY_JOBS, MISSY_RESULTS and the workers' consumer when absent (a daemon and a
// worker may start in any order); existing ones are left as they are.
Status EnsureJobQueue(jsCtx* js, const JobQueueOptions& options);

}  // namespace missy::broker
