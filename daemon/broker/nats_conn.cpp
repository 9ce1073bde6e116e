#include "daemon/broker/nats_conn.h"

#include <spdlog/spdlog.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

namespace missy::broker {

namespace {

constexpr int64_t kNsPerMs = 1000 * 1000;

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

void Connection::Close() {
  if (js != nullptr) jsCtx_Destroy(js);
  js = nullptr;
  if (conn != nullptr) natsConnection_Destroy(conn);  // closes it
  conn = nullptr;
}

bool Connection::connected() const {
  return conn != nullptr && natsConnection_Status(conn) == NATS_CONN_STATUS_CONNECTED;
}

Status Connect(const Endpoint& endpoint, std::chrono::milliseconds js_wait, Connection& out) {
  out.Close();
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = natsOptions_SetURL(opts, endpoint.url.c_str());
  if (s == NATS_OK && !endpoint.name.empty()) s = natsOptions_SetName(opts, endpoint.name.c_str());
  if (s == NATS_OK && !endpoint.user.empty()) {
    s = natsOptions_SetUserInfo(opts, endpoint.user.c_str(), endpoint.password.c_str());
  }
  if (s == NATS_OK && !endpoint.token.empty()) s = natsOptions_SetToken(opts, endpoint.token.c_str());
  for (const auto& [key, path] : {std::pair<const char*, const std::string*>{"creds_file", &endpoint.creds_file},
                                  {"ca_file", &endpoint.ca_file}}) {
    if (!path->empty() && ::access(path->c_str(), R_OK) != 0) {
      natsOptions_Destroy(opts);
      return Status::InvalidArgument(std::string(key) + " " + *path + ": " + std::strerror(errno));
    }
  }
  if (s == NATS_OK && !endpoint.creds_file.empty()) {
    s = natsOptions_SetUserCredentialsFromFiles(opts, endpoint.creds_file.c_str(), nullptr);
    if (s != NATS_OK) {
      natsOptions_Destroy(opts);
      return Status::InvalidArgument("creds_file " + endpoint.creds_file + ": " + NatsError(s));
    }
  }
  const bool tls = StartsWith(endpoint.url, "tls://") || !endpoint.ca_file.empty();
  if (s == NATS_OK && tls) s = natsOptions_SetSecure(opts, true);
  if (s == NATS_OK && !endpoint.ca_file.empty()) {
    s = natsOptions_LoadCATrustedCertificates(opts, endpoint.ca_file.c_str());
    if (s != NATS_OK) {
      natsOptions_Destroy(opts);
      return Status::InvalidArgument("ca_file " + endpoint.ca_file + ": " + NatsError(s));
    }
  }
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, endpoint.connect_timeout.count());
  if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, endpoint.reconnect);
  if (s == NATS_OK && endpoint.reconnect) {
    s = natsOptions_SetMaxReconnect(opts, -1);  // forever
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 500);
  }
  if (s == NATS_OK) s = natsConnection_Connect(&out.conn, opts);
  natsOptions_Destroy(opts);
  if (s != NATS_OK) return Status::Unavailable("cannot connect: " + NatsError(s));

  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = js_wait.count();
  s = natsConnection_JetStream(&out.js, out.conn, &jo);
  if (s != NATS_OK) {
    out.Close();
    return Status::Unavailable("no JetStream context: " + NatsError(s));
  }
  return Status::Ok();
}

Endpoint EndpointFrom(const BrokerConfig& config) {
  Endpoint e;
  e.url = config.url;
  e.user = config.user;
  e.password = config.password;
  e.token = config.token;
  e.creds_file = config.creds_file;
  e.ca_file = config.ca_file;
  return e;
}

std::string DefaultDaemonId() {
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
  return SubjectToken(machine + "-" + user);
}

std::string DaemonIdFrom(const BrokerConfig& config) {
  return config.daemon_id.empty() ? DefaultDaemonId() : config.daemon_id;
}

std::string NatsError(natsStatus s, jsErrCode jerr) {
  std::string out = natsStatus_GetText(s);
  natsStatus last = NATS_OK;
  const char* detail = nats_GetLastError(&last);
  if (detail != nullptr && *detail != '\0' && out.find(detail) == std::string::npos) {
    out += std::string(": ") + detail;
  }
  if (jerr != 0) out += " (JetStream error " + std::to_string(static_cast<int>(jerr)) + ")";
  return out;
}

std::string SubjectToken(std::string s) {
  for (char& c : s) {
    if (c == '.' || c == '*' || c == '>' || c == ' ' || c == '\t') c = '_';
  }
  return s.empty() ? "_" : s;
}

std::string RedactUrl(const std::string& url) {
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

std::string JobsSubject(const std::string& prefix, const std::string& daemon_id) {
  return prefix + ".jobs." + daemon_id;
}

std::string ResultsSubject(const std::string& prefix, const std::string& daemon_id) {
  return prefix + ".results." + daemon_id;
}

Status EnsureStream(jsCtx* js, const StreamSpec& spec) {
  jsStreamInfo* info = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&info, js, spec.name.c_str(), nullptr, &jerr);
  if (s == NATS_NOT_FOUND) {
    const char* subject_list[] = {spec.subjects.c_str()};
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = spec.name.c_str();
    sc.Subjects = subject_list;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Retention = spec.work_queue ? js_WorkQueuePolicy : js_LimitsPolicy;
    sc.MaxAge = spec.max_age.count() * kNsPerMs;
    sc.Duplicates = spec.duplicates.count() * kNsPerMs;
    jerr = static_cast<jsErrCode>(0);
    s = js_AddStream(&info, js, &sc, nullptr, &jerr);
    if (s == NATS_OK) spdlog::info("broker: created stream {} for {}", spec.name, spec.subjects);
  }
  if (info != nullptr) jsStreamInfo_Destroy(info);
  if (s != NATS_OK) return Status::Unavailable("stream " + spec.name + ": " + NatsError(s, jerr));
  return Status::Ok();
}

Status EnsureJobQueue(jsCtx* js, const JobQueueOptions& options) {
  const std::string jobs = options.subject_prefix + ".jobs.>";
  StreamSpec queue{kJobsStream, jobs};
  queue.work_queue = true;
  // A job whose deliveries ran out stays in a work queue: an hour is far past any deadline.
  queue.max_age = std::chrono::hours(1);
  if (Status st = EnsureStream(js, queue); !st.ok()) return st;
  StreamSpec results{kResultsStream, options.subject_prefix + ".results.>"};
  results.max_age = std::chrono::hours(1);
  if (Status st = EnsureStream(js, results); !st.ok()) return st;
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetConsumerInfo(&ci, js, kJobsStream, kWorkersConsumer, nullptr, &jerr);
  if (s == NATS_NOT_FOUND) {
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = kWorkersConsumer;
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = options.ack_wait.count() * kNsPerMs;
    cc.MaxDeliver = options.max_deliver;
    cc.FilterSubject = jobs.c_str();
    jerr = static_cast<jsErrCode>(0);
    s = js_AddConsumer(&ci, js, kJobsStream, &cc, nullptr, &jerr);
    if (s == NATS_OK) {
      spdlog::info("broker: created consumer {} on {} (ack wait {} ms, {} deliveries at most)",
                   kWorkersConsumer, kJobsStream, options.ack_wait.count(), options.max_deliver);
    }
  }
  if (ci != nullptr) jsConsumerInfo_Destroy(ci);
  if (s != NATS_OK) {
    return Status::Unavailable(std::string("consumer ") + kWorkersConsumer + ": " + NatsError(s, jerr));
  }
  return Status::Ok();
}

}  // namespace missy::broker
