#include "daemon/broker/audit_publisher.h"

#include <nats/nats.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <utility>
#include <vector>

#include "core/audit_event.h"
#include "storage/audit_log.h"

namespace missy {
namespace {

// A subject token: no separators or wildcards.
std::string Token(std::string s) {
  for (char& c : s) {
    if (c == '.' || c == '*' || c == '>' || c == ' ' || c == '\t') c = '_';
  }
  return s.empty() ? "_" : s;
}

// What nats.c said, with the thread's last error text when it has one.
std::string NatsError(natsStatus s, jsErrCode jerr = static_cast<jsErrCode>(0)) {
  std::string out = natsStatus_GetText(s);
  natsStatus last = NATS_OK;
  const char* detail = nats_GetLastError(&last);
  if (detail != nullptr && *detail != '\0' && out.find(detail) == std::string::npos) {
    out += std::string(": ") + detail;
  }
  if (jerr != 0) out += " (JetStream error " + std::to_string(static_cast<int>(jerr)) + ")";
  return out;
}

}  // namespace

struct AuditPublisher::Nats {
  natsConnection* conn = nullptr;
  jsCtx* js = nullptr;
  ~Nats() { Close(); }
  void Close() {
    if (js != nullptr) jsCtx_Destroy(js);
    js = nullptr;
    if (conn != nullptr) natsConnection_Destroy(conn);  // closes it
    conn = nullptr;
  }
};

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
  return stats_;
}

bool AuditPublisher::WaitPublished(int64_t seq, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return progress_cv_.wait_for(lock, timeout,
                               [&] { return stopping_ || stats_.cursor >= seq; }) &&
         stats_.cursor >= seq;
}

std::string AuditPublisher::DefaultDaemonId() {
  std::string machine;
  std::ifstream in("/etc/machine-id");
  std::getline(in, machine);
  if (machine.size() > 12) machine.resize(12);
  if (machine.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) machine = host;
  }
  std::string user;
  if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_name != nullptr) {
    user = pw->pw_name;
  } else {
    user = std::to_string(getuid());
  }
  return Token(machine + "-" + user);
}

std::string AuditPublisher::RedactUrl(const std::string& url) {
  std::string out;
  size_t from = 0;
  while (from <= url.size()) {
    size_t comma = url.find(',', from);
    if (comma == std::string::npos) comma = url.size();
    std::string one = url.substr(from, comma - from);
    const size_t scheme = one.find("://");
    const size_t at = one.find('@', scheme == std::string::npos ? 0 : scheme + 3);
    if (at != std::string::npos) {
      one = one.substr(0, scheme == std::string::npos ? 0 : scheme + 3) + "***@" + one.substr(at + 1);
    }
    out += (out.empty() ? "" : ",") + one;
    from = comma + 1;
  }
  return out;
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
                 RedactUrl(options_.url), status.message());
  }
}

Status AuditPublisher::Connect() {
  nats_->Close();
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = natsOptions_SetURL(opts, options_.url.c_str());
  if (s == NATS_OK && !options_.user.empty()) {
    s = natsOptions_SetUserInfo(opts, options_.user.c_str(), options_.password.c_str());
  }
  if (s == NATS_OK && !options_.token.empty()) s = natsOptions_SetToken(opts, options_.token.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, options_.connect_timeout.count());
  // A lost connection is a failure of the round: this loop reconnects, from the cursor.
  if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, false);
  if (s == NATS_OK) s = natsConnection_Connect(&nats_->conn, opts);
  natsOptions_Destroy(opts);
  if (s != NATS_OK) return Status::Unavailable("cannot connect: " + NatsError(s));

  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = options_.ack_wait.count();
  s = natsConnection_JetStream(&nats_->js, nats_->conn, &jo);
  if (s != NATS_OK) return Status::Unavailable("no JetStream context: " + NatsError(s));

  jsStreamInfo* info = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  s = js_GetStreamInfo(&info, nats_->js, options_.stream.c_str(), nullptr, &jerr);
  if (s == NATS_NOT_FOUND) {
    const std::string subjects = options_.subject_prefix + ".audit.>";
    const char* subject_list[] = {subjects.c_str()};
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = options_.stream.c_str();
    sc.Subjects = subject_list;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Duplicates = int64_t{10} * 60 * 1000 * 1000 * 1000;  // 10 min, in ns
    jerr = static_cast<jsErrCode>(0);
    s = js_AddStream(&info, nats_->js, &sc, nullptr, &jerr);
    if (s == NATS_OK) {
      spdlog::info("broker: created stream {} for {}", options_.stream, subjects);
    }
  }
  if (info != nullptr) jsStreamInfo_Destroy(info);
  if (s != NATS_OK) {
    return Status::Unavailable("stream " + options_.stream + ": " + NatsError(s, jerr));
  }
  return Status::Ok();
}

Status AuditPublisher::PublishRound(bool* more) {
  *more = false;
  Result<int64_t> cursor = log_.OutboxCursor(options_.cursor_name);
  if (!cursor.ok()) return cursor.status();
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
    const std::string subject = prefix + Token(e.category) + "." + e.event_type;
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
  // What the broker acknowledged is recorded even when the round stopped early.
  if (acked > *cursor) {
    if (Status st = log_.AdvanceOutbox(options_.cursor_name, acked); !st.ok()) return st;
  }
  {
    std::lock_guard lock(mu_);
    stats_.published += fresh;
    stats_.duplicates += duplicates;
    stats_.cursor = std::max(stats_.cursor, acked);
    if (!events->empty()) stats_.head = std::max(stats_.head, events->back().seq);
  }
  progress_cv_.notify_all();
  if (!failure.ok()) return failure;
  *more = static_cast<int>(events->size()) == options_.page;
  return Status::Ok();
}

void AuditPublisher::Loop() {
  if (Result<int64_t> cursor = log_.OutboxCursor(options_.cursor_name); cursor.ok()) {
    std::lock_guard lock(mu_);
    stats_.cursor = *cursor;
    stats_.head = std::max(stats_.head, *cursor);
  }
  auto backoff = options_.min_backoff;
  bool connected = false;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    Status st;
    bool more = false;
    if (!connected) {
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
                     RedactUrl(options_.url), options_.stream, options_.daemon_id);
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
  nats_->Close();
  std::lock_guard lock(mu_);
  stats_.connected = false;
}

}  // namespace missy
