#include "daemon/api.h"

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/assembler.h"
#include "core/calibration.h"
#include "core/model_table.h"
#include "core/sanitizer.h"

namespace missy {

namespace json = boost::json;

struct RequestTarget {
  std::vector<std::string> segments;  // decoded path segments
  std::unordered_map<std::string, std::string> query;
};

namespace {

constexpr size_t kMaxBatch = 10000;
constexpr int kMaxListLimit = 1000;

HttpResponse JsonResponse(int status, const json::value& body) {
  HttpResponse r;
  r.status = status;
  r.body = json::serialize(body);
  r.body += '\n';
  return r;
}

json::object ErrorBody(std::string_view code, const std::string& message, const std::string& field) {
  return json::object{
      {"error", json::object{{"code", code}, {"message", message}, {"field", field}}}};
}

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int value = 0;
      auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, value, 16);
      if (ec == std::errc() && p == s.data() + i + 3) {
        out += static_cast<char>(value);
        i += 2;
        continue;
      }
    }
    out += (plus_is_space && s[i] == '+') ? ' ' : s[i];
  }
  return out;
}


RequestTarget ParseTarget(std::string_view target) {
  RequestTarget t;
  const size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > start) t.segments.push_back(PercentDecode(path.substr(start, slash - start), false));
    start = slash + 1;
  }
  if (q != std::string_view::npos) {
    std::string_view qs = target.substr(q + 1);
    while (!qs.empty()) {
      size_t amp = qs.find('&');
      std::string_view pair = qs.substr(0, amp);
      size_t eq = pair.find('=');
      t.query[PercentDecode(pair.substr(0, eq), true)] =
          eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
      if (amp == std::string_view::npos) break;
      qs = qs.substr(amp + 1);
    }
  }
  return t;
}

Status QueryInt(const RequestTarget& t, const std::string& key, int64_t min, int64_t max, int64_t& out) {
  auto it = t.query.find(key);
  if (it == t.query.end()) return Status::Ok();
  int64_t value = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  if (ec != std::errc() || p != it->second.data() + it->second.size()) {
    return Status::InvalidArgument("expected an integer, got '" + it->second + "'", key);
  }
  if (value < min || value > max) {
    return Status::InvalidArgument(
        "must be between " + std::to_string(min) + " and " + std::to_string(max), key);
  }
  out = value;
  return Status::Ok();
}

// limit (1..max) and offset query parameters of a list endpoint.
Result<ListOptions> Paging(const RequestTarget& t, int64_t default_limit = 100, int64_t max_limit = kMaxListLimit) {
  int64_t limit = default_limit, offset = 0;
  MISSY_RETURN_IF_ERROR(QueryInt(t, "limit", 1, max_limit, limit));
  MISSY_RETURN_IF_ERROR(QueryInt(t, "offset", 0, int64_t{1} << 30, offset));
  ListOptions options;
  options.limit = static_cast<int>(limit);
  options.offset = static_cast<int>(offset);
  return options;
}

// Parses the body as a JSON object; an empty body is an empty object when allowed.
Result<json::object> ParseBody(const HttpRequest& req, bool empty_ok) {
  if (req.body.empty() || req.body.find_first_not_of(" \t\r\n") == std::string::npos) {
    if (empty_ok) return json::object{};
    return Status::InvalidArgument("request body is empty; expected a JSON object");
  }
  boost::system::error_code ec;
  json::value v = json::parse(req.body, ec);
  if (ec) return Status::InvalidArgument("request body is not valid JSON: " + ec.message());
  if (!v.is_object()) return Status::InvalidArgument("request body must be a JSON object");
  return std::move(v.get_object());
}

Status CheckKnownKeys(const json::object& o, std::initializer_list<std::string_view> known,
                      const std::string& prefix = {}) {
  for (const auto& kv : o) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || kv.key() == k;
    if (!ok) {
      return Status::InvalidArgument("unknown field", prefix + std::string(kv.key()));
    }
  }
  return Status::Ok();
}

Status OptString(const json::object& o, std::string_view key, std::string& out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_string()) return Status::InvalidArgument("expected a string", std::string(key));
  out.assign(v->get_string().begin(), v->get_string().end());
  return Status::Ok();
}

Status OptBool(const json::object& o, std::string_view key, std::optional<bool>& out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_bool()) return Status::InvalidArgument("expected a boolean", std::string(key));
  out = v->get_bool();
  return Status::Ok();
}

Status OptInt(const json::object& o, std::string_view key, int64_t min, int64_t max,
              int64_t& out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  int64_t value = 0;
  if (v->is_int64()) {
    value = v->get_int64();
  } else if (v->is_uint64() && v->get_uint64() <= static_cast<uint64_t>(max)) {
    value = static_cast<int64_t>(v->get_uint64());
  } else {
    return Status::InvalidArgument("expected an integer", std::string(key));
  }
  if (value < min || value > max) {
    return Status::InvalidArgument(
        "must be between " + std::to_string(min) + " and " + std::to_string(max), std::string(key));
  }
  out = value;
  return Status::Ok();
}

bool ValidSessionId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

json::value ParseStoredJson(const std::string& text, json::value fallback) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  return ec ? fallback : v;
}

json::object SessionToJson(const Session& s) {
  return json::object{
      {"id", s.id},
      {"model", s.model},
      {"system_prompt", s.system_prompt},
      {"tools", ParseStoredJson(s.tools_json, json::array{})},
      {"metadata", ParseStoredJson(s.metadata_json, json::object{})},
      {"context_window", s.context_window},
      {"strict", s.strict},
      {"created_at", FormatIsoTimestampMs(s.created_at_ms)},
      {"updated_at", FormatIsoTimestampMs(s.updated_at_ms)},
      {"message_count", s.message_count},
      {"total_tokens", s.total_tokens},
      {"last_seq", s.last_seq},
  };
}

json::array FlagNames(uint32_t flags);

json::object StoredMessageToJson(const StoredMessage& m) {
  json::object o = MessageToJson(m.message);
  o["seq"] = m.seq;
  o["tokens"] = m.tokens;
  o["created_at"] = FormatIsoTimestampMs(m.created_at_ms);
  if (m.flags != kFlagNone) o["flags"] = FlagNames(m.flags);
  return o;
}

json::array StringsToJson(const std::vector<std::string>& v) {
  json::array out;
  for (const std::string& s : v) out.push_back(json::string(s));
  return out;
}

json::object SummaryToJson(const SummaryRecord& r) {
  return json::object{{"id", r.id},
                      {"session_id", r.session_id},
                      {"depth", r.depth},
                      {"content", r.content},
                      {"tokens", r.tokens},
                      {"first_seq", r.first_seq},
                      {"last_seq", r.last_seq},
                      {"child_ids", StringsToJson(r.child_ids)},
                      {"parent_id", r.parent_id},
                      {"start", FormatIsoTimestampMs(r.start_ms)},
                      {"end", FormatIsoTimestampMs(r.end_ms)},
                      {"descendant_count", r.descendant_count},
                      {"artifacts", ParseStoredJson(r.artifacts_json, json::object{})}};
}

json::object MemoryToJson(const MemoryItem& m) {
  return json::object{{"id", m.id},
                      {"text", m.text},
                      {"tags", StringsToJson(m.tags)},
                      {"session_id", m.session_id},
                      {"pinned", m.pinned},
                      {"created_at", FormatIsoTimestampMs(m.created_at_ms)}};
}

json::object LearningToJson(const LearningRecord& l) {
  return json::object{{"id", l.id},
                      {"task_type", l.task_type},
                      {"outcome", l.outcome},
                      {"lesson", l.lesson},
                      {"approach", StringsToJson(l.approach)},
                      {"session_id", l.session_id},
                      {"created_at", FormatIsoTimestampMs(l.created_at_ms)}};
}

json::object JobToJson(const Job& j) {
  return json::object{{"id", j.id},
                      {"kind", j.kind},
                      {"session_id", j.session_id},
                      {"state", j.state},
                      {"attempts", j.attempts},
                      {"payload", ParseStoredJson(j.payload_json, json::object{})},
                      {"next_run_at", FormatIsoTimestampMs(j.next_run_at_ms)},
                      {"lease_until", j.lease_until_ms ? json::value(FormatIsoTimestampMs(j.lease_until_ms)) : json::value(nullptr)},
                      {"last_error", j.last_error},
                      {"created_at", FormatIsoTimestampMs(j.created_at_ms)},
                      {"updated_at", FormatIsoTimestampMs(j.updated_at_ms)}};
}

// An optional array of strings (tags, approach).
Status OptStrings(const json::object& o, std::string_view key, std::vector<std::string>& out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_array()) return Status::InvalidArgument("expected an array of strings", std::string(key));
  for (size_t i = 0; i < v->get_array().size(); ++i) {
    const json::value& e = v->get_array()[i];
    if (!e.is_string()) {
      return Status::InvalidArgument("expected a string",
                                     std::string(key) + "[" + std::to_string(i) + "]");
    }
    out.emplace_back(e.get_string().begin(), e.get_string().end());
  }
  return Status::Ok();
}

json::array FlagNames(uint32_t flags) {
  json::array out;
  if (flags & kFlagPruned) out.push_back("pruned");
  if (flags & kFlagOrphanResult) out.push_back("orphan_result");
  if (flags & kFlagDuplicateResult) out.push_back("duplicate_result");
  if (flags & kFlagUnansweredCall) out.push_back("unanswered_call");
  return out;
}

// A missing session is named by the path, not by a body field.
Result<Session> FindSession(Database& db, const std::string& id) {
  Result<Session> session = db.GetSession(id);
  if (!session.ok() && session.status().code() == StatusCode::kNotFound) {
    return Status::NotFound("session '" + id + "' not found");
  }
  return session;
}

}  // namespace

Api::Api(ApiDeps deps, std::shared_ptr<const DaemonConfig> config)
    : deps_(std::move(deps)),
      config_(std::move(config)),
      heuristic_(std::make_shared<HeuristicTokenCounter>()) {
  started_ms_ = deps_.clock_ms();
}

void Api::SetConfig(std::shared_ptr<const DaemonConfig> config) {
  std::lock_guard<std::mutex> lock(config_mu_);
  config_ = std::move(config);
}

std::shared_ptr<const DaemonConfig> Api::config() const {
  std::lock_guard<std::mutex> lock(config_mu_);
  return config_;
}

std::mutex& Api::SessionLock(const std::string& id) {
  return session_locks_[std::hash<std::string>{}(id) % session_locks_.size()];
}

MessageTokenCounter Api::CounterFor(const Session& session) const {
  auto cfg = config();
  MessageCountingOptions options;
  options.image_tokens = cfg->image_tokens;
  std::string encoding = "o200k_base";  // models without an offline tokenizer: o200k x factor
  if (std::optional<ModelSpec> spec = cfg->models.Lookup(session.model)) {
    options.factor = spec->factor;
    encoding = spec->encoding;
  }
  if (cfg->tokenizer == TokenizerMode::kHeuristic) encoding = "heuristic";
  if (deps_.tokenizers != nullptr) {
    Result<std::shared_ptr<const TokenCounter>> counter = deps_.tokenizers->Get(encoding);
    if (counter.ok()) return MessageTokenCounter(*counter, options);
    spdlog::warn("tokenizer {} unavailable, counting heuristically: {}", encoding,
                 counter.status().message());
  }
  return MessageTokenCounter(heuristic_, options);
}

Result<std::shared_ptr<std::vector<StoredMessage>>> Api::History(const std::string& id) {
  if (auto cached = history_.Find(id)) return cached;
  Result<std::vector<StoredMessage>> loaded = deps_.db->LoadMessages(id);
  if (!loaded.ok()) return loaded.status();
  history_.Put(id, *loaded);
  return std::make_shared<std::vector<StoredMessage>>(std::move(*loaded));
}

std::string Api::CalibrationKey(const Session& session) {
  return session.model.empty() ? std::string("default") : session.model;
}

void Api::RememberContext(const std::string& context_id, IssuedContext context) {
  constexpr size_t kRemembered = 4096;
  std::lock_guard<std::mutex> lock(contexts_mu_);
  contexts_[context_id] = std::move(context);
  context_order_.push_back(context_id);
  while (context_order_.size() > kRemembered) {
    contexts_.erase(context_order_.front());
    context_order_.pop_front();
  }
}

std::optional<Api::IssuedContext> Api::FindContext(const std::string& context_id) {
  std::lock_guard<std::mutex> lock(contexts_mu_);
  auto it = contexts_.find(context_id);
  if (it == contexts_.end()) return std::nullopt;
  return it->second;
}

HttpResponse Api::Error(const HttpRequest& req, const Status& status, std::string_view session_id) {
  const int http = HttpStatusOf(status.code());
  const std::string message = status.message();
  if (deps_.auditor != nullptr) {
    (void)deps_.auditor->Emit("request.rejected", "daemon", http >= 500 ? "error" : "deny",
                              session_id,
                              json::object{{"method", req.method},
                                           {"path", req.target.substr(0, req.target.find('?'))},
                                           {"status", http},
                                           {"code", ApiCodeOf(status.code())},
                                           {"message", message},
                                           {"field", status.field()}});
  }
  if (http >= 500) {
    spdlog::error("{} {} -> {} {}", req.method, req.target, http, status.ToString());
  } else {
    spdlog::info("{} {} -> {} {}", req.method, req.target, http, status.ToString());
  }
  return JsonResponse(http, ErrorBody(ApiCodeOf(status.code()), message, status.field()));
}

HttpResponse Api::Handle(const HttpRequest& req) {
  ++requests_;
  const RequestTarget t = ParseTarget(req.target);
  const auto& s = t.segments;
  auto method_not_allowed = [&](std::string_view allowed) {
    HttpResponse r = JsonResponse(
        405, ErrorBody("method_not_allowed",
                       req.method + " is not allowed on this path (allowed: " + std::string(allowed) + ")",
                       ""));
    return r;
  };
  try {
    if (s.size() < 2 || s[0] != "v1") {
      return Error(req, Status::NotFound("no route for " + req.method + " " +
                                         req.target.substr(0, req.target.find('?')) +
                                         " (API paths start with /v1)"));
    }
    if (s.size() == 2 && s[1] == "health") {
      return req.method == "GET" ? Health(req) : method_not_allowed("GET");
    }
    if (s.size() == 2 && s[1] == "config") {
      return req.method == "GET" ? EffectiveConfig(req) : method_not_allowed("GET");
    }
    if (s.size() == 2 && s[1] == "audit") {
      return req.method == "GET" ? Audit(req, t) : method_not_allowed("GET");
    }
    if (s.size() == 3 && s[1] == "audit" && s[2] == "verify") {
      return req.method == "GET" ? VerifyAudit(req) : method_not_allowed("GET");
    }
    if (s[1] == "memory") {
      if (s.size() == 2) {
        if (req.method == "POST") return AddMemory(req);
        if (req.method == "GET") return ListMemory(req, t);
        return method_not_allowed("GET, POST");
      }
      if (s.size() == 3 && s[2] == "search") {
        return req.method == "GET" ? SearchMemory(req, t) : method_not_allowed("GET");
      }
      if (s.size() == 3) {
        if (req.method == "GET") return GetMemory(req, s[2]);
        if (req.method == "DELETE") return DeleteMemory(req, s[2]);
        return method_not_allowed("GET, DELETE");
      }
    }
    if (s.size() == 2 && s[1] == "learnings") {
      if (req.method == "POST") return AddLearning(req);
      if (req.method == "GET") return ListLearnings(req, t);
      return method_not_allowed("GET, POST");
    }
    if (s.size() == 2 && s[1] == "jobs") {
      return req.method == "GET" ? ListJobs(req, t) : method_not_allowed("GET");
    }
    if (s.size() == 3 && s[1] == "summaries") {
      return req.method == "GET" ? GetSummary(req, s[2]) : method_not_allowed("GET");
    }
    if (s.size() == 3 && s[1] == "import" && s[2] == "missy") {
      return req.method == "POST" ? ImportMissy(req) : method_not_allowed("POST");
    }
    if (s[1] == "sessions") {
      if (s.size() == 2) {
        if (req.method == "POST") return CreateSession(req);
        if (req.method == "GET") return ListSessions(req, t);
        return method_not_allowed("GET, POST");
      }
      const std::string& id = s[2];
      if (!ValidSessionId(id)) {
        return Error(req, Status::InvalidArgument(
                              "session id must be 1-128 characters of [A-Za-z0-9._:-]", "id"));
      }
      if (s.size() == 3) return req.method == "GET" ? GetSession(req, id) : method_not_allowed("GET");
      if (s.size() == 4 && s[3] == "messages") {
        if (req.method == "POST") return AppendMessages(req, id);
        if (req.method == "GET") return ListMessages(req, t, id);
        return method_not_allowed("GET, POST");
      }
      if (s.size() == 4 && s[3] == "context") {
        return req.method == "POST" ? BuildContext(req, id) : method_not_allowed("POST");
      }
      if (s.size() == 4 && s[3] == "usage") {
        return req.method == "POST" ? ReportUsage(req, id) : method_not_allowed("POST");
      }
      if (s.size() == 4 && s[3] == "summaries") {
        return req.method == "GET" ? ListSummaries(req, id) : method_not_allowed("GET");
      }
    }
    return Error(req, Status::NotFound("no route for " + req.method + " " +
                                       req.target.substr(0, req.target.find('?'))));
  } catch (const std::exception& e) {
    return Error(req, Status::Internal(std::string("unexpected error: ") + e.what()));
  }
}

HttpResponse Api::Health(const HttpRequest&) {
  auto cfg = config();
  return JsonResponse(200, json::object{{"status", "ok"},
                                        {"version", deps_.version},
                                        {"uptime_ms", deps_.clock_ms() - started_ms_},
                                        {"requests", requests_.load()},
                                        {"schema_version", deps_.db->SchemaVersion()},
                                        {"socket", cfg->socket_path},
                                        {"audit_socket", cfg->audit_socket_path}});
}

HttpResponse Api::EffectiveConfig(const HttpRequest&) {
  HttpResponse r;
  r.body = EffectiveConfigJson(*config()) + "\n";
  return r;
}

HttpResponse Api::CreateSession(const HttpRequest& req) {
  Result<json::object> body = ParseBody(req, /*empty_ok=*/true);
  if (!body.ok()) return Error(req, body.status());
  const json::object& o = *body;
  Status st = CheckKnownKeys(
      o, {"id", "model", "system_prompt", "tools", "metadata", "context_window", "strict"});
  if (!st.ok()) return Error(req, st);

  Session session;
  auto cfg = config();
  session.strict = cfg->strict;
  if (!(st = OptString(o, "id", session.id)).ok()) return Error(req, st);
  if (o.contains("id") && !ValidSessionId(session.id)) {
    return Error(req, Status::InvalidArgument(
                          "session id must be 1-128 characters of [A-Za-z0-9._:-]", "id"));
  }
  if (session.id.empty()) session.id = "ses_" + deps_.new_id();
  if (!(st = OptString(o, "model", session.model)).ok()) return Error(req, st);
  if (!(st = OptString(o, "system_prompt", session.system_prompt)).ok()) return Error(req, st);
  if (const json::value* tools = o.if_contains("tools"); tools && !tools->is_null()) {
    if (!tools->is_array()) {
      return Error(req, Status::InvalidArgument("expected an array of tool definitions", "tools"));
    }
    for (size_t i = 0; i < tools->get_array().size(); ++i) {
      if (!tools->get_array()[i].is_object()) {
        return Error(req, Status::InvalidArgument("expected a tool definition object",
                                                  "tools[" + std::to_string(i) + "]"));
      }
    }
    session.tools_json = json::serialize(*tools);
  }
  if (const json::value* meta = o.if_contains("metadata"); meta && !meta->is_null()) {
    if (!meta->is_object()) return Error(req, Status::InvalidArgument("expected an object", "metadata"));
    session.metadata_json = json::serialize(*meta);
  }
  if (!(st = OptInt(o, "context_window", 1, int64_t{1} << 40, session.context_window)).ok()) {
    return Error(req, st);
  }
  std::optional<bool> strict;
  if (!(st = OptBool(o, "strict", strict)).ok()) return Error(req, st);
  if (strict) session.strict = *strict;
  session.created_at_ms = session.updated_at_ms = deps_.clock_ms();

  st = deps_.db->CreateSession(session);
  if (!st.ok()) {
    if (st.code() == StatusCode::kAlreadyExists) {
      st = Status::AlreadyExists("session '" + session.id + "' already exists", "id");
    }
    return Error(req, st, session.id);
  }
  (void)deps_.auditor->Emit("session.created", "context", "allow", session.id,
                            json::object{{"model", session.model},
                                         {"strict", session.strict},
                                         {"has_system_prompt", !session.system_prompt.empty()}});
  spdlog::info("session {} created (model '{}')", session.id, session.model);
  return JsonResponse(201, SessionToJson(session));
}

HttpResponse Api::ListSessions(const HttpRequest& req, const RequestTarget& t) {
  Result<ListOptions> paging = Paging(t);
  if (!paging.ok()) return Error(req, paging.status());
  Result<std::vector<Session>> sessions = deps_.db->ListSessions(*paging);
  if (!sessions.ok()) return Error(req, sessions.status());
  json::array out;
  for (const Session& s : *sessions) out.push_back(SessionToJson(s));
  return JsonResponse(200, json::object{{"sessions", std::move(out)}});
}

HttpResponse Api::GetSession(const HttpRequest& req, const std::string& id) {
  Result<Session> session = FindSession(*deps_.db, id);
  if (!session.ok()) return Error(req, session.status(), id);
  return JsonResponse(200, SessionToJson(*session));
}

HttpResponse Api::AppendMessages(const HttpRequest& req, const std::string& id) {
  Result<json::object> body = ParseBody(req, /*empty_ok=*/false);
  if (!body.ok()) return Error(req, body.status(), id);
  Status st = CheckKnownKeys(*body, {"messages", "strict"});
  if (!st.ok()) return Error(req, st, id);
  const json::value* messages = body->if_contains("messages");
  if (messages == nullptr) return Error(req, Status::InvalidArgument("is required", "messages"), id);
  if (!messages->is_array()) {
    return Error(req, Status::InvalidArgument("expected an array of messages", "messages"), id);
  }
  const json::array& list = messages->get_array();
  if (list.empty()) return Error(req, Status::InvalidArgument("must not be empty", "messages"), id);
  if (list.size() > kMaxBatch) {
    return Error(req, Status::PayloadTooLarge("at most " + std::to_string(kMaxBatch) +
                                              " messages per append"), id);
  }
  std::optional<bool> strict_override;
  if (!(st = OptBool(*body, "strict", strict_override)).ok()) return Error(req, st, id);
  Result<Session> session = FindSession(*deps_.db, id);
  if (!session.ok()) return Error(req, session.status(), id);
  const bool strict = strict_override.value_or(session->strict);
  const MessageTokenCounter counter = CounterFor(*session);

  std::vector<Message> parsed(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    Result<Message> m = ParseMessage(list[i], "messages[" + std::to_string(i) + "]");
    if (!m.ok()) return Error(req, m.status(), id);
    parsed[i] = std::move(*m);
  }

  // Validation needs the session's open tool calls, so appends to one session are serialised.
  std::lock_guard<std::mutex> lock(SessionLock(id));
  Result<std::shared_ptr<std::vector<StoredMessage>>> history = History(id);
  if (!history.ok()) return Error(req, history.status(), id);
  // The open state depends only on the suffix from the last non-tool message.
  const std::vector<StoredMessage>& all = **history;
  size_t from = all.size();
  while (from > 0 && all[from - 1].message.role == Role::kTool) --from;
  if (from > 0) --from;
  const std::span<const StoredMessage> recent(all.data() + from, all.size() - from);
  const AppendValidation validation = ValidateAppend(DeriveOpenCallState(recent), parsed);
  json::array warnings;
  for (const AppendWarning& w : validation.warnings) warnings.push_back(AppendWarningToJson(w));
  if (strict && !validation.ok()) {
    const AppendWarning& w = validation.warnings.front();
    Status refused = Status::Unprocessable(
        w.message + " (strict mode: nothing was stored; " + std::to_string(validation.warnings.size()) +
            " problem(s))",
        "messages[" + std::to_string(w.index) + "]");
    HttpResponse r = Error(req, refused, id);
    json::value err = json::parse(r.body);
    err.as_object()["warnings"] = std::move(warnings);
    r.body = json::serialize(err) + "\n";
    return r;
  }

  std::vector<NewMessage> batch(parsed.size());
  for (size_t i = 0; i < parsed.size(); ++i) {
    batch[i].tokens = counter.CountMessage(parsed[i]);
    batch[i].flags = validation.flags[i];
    batch[i].message = std::move(parsed[i]);
  }
  Result<std::vector<StoredMessage>> stored = deps_.db->AppendMessages(id, batch, deps_.clock_ms());
  if (!stored.ok()) {
    history_.Invalidate(id);
    return Error(req, stored.status(), id);
  }
  history_.Appended(id, *stored);
  Result<Session> after = FindSession(*deps_.db, id);
  if (!after.ok()) return Error(req, after.status(), id);

  json::array rows;
  int64_t tokens = 0;
  for (const StoredMessage& m : *stored) {
    tokens += m.tokens;
    json::object row{{"seq", m.seq}, {"tokens", m.tokens}};
    if (m.flags != kFlagNone) row["flags"] = FlagNames(m.flags);
    rows.push_back(std::move(row));
  }
  json::object detail{{"count", stored->size()},
                      {"first_seq", stored->front().seq},
                      {"last_seq", stored->back().seq},
                      {"tokens", tokens},
                      {"encoding", counter.counter().Name()}};
  if (!warnings.empty()) detail["warnings"] = warnings;
  (void)deps_.auditor->Emit("messages.appended", "context", "allow", id, detail);
  return JsonResponse(200, json::object{{"session_id", id},
                                        {"appended", stored->size()},
                                        {"messages", std::move(rows)},
                                        {"warnings", std::move(warnings)},
                                        {"message_count", after->message_count},
                                        {"total_tokens", after->total_tokens},
                                        {"last_seq", after->last_seq}});
}

HttpResponse Api::ListMessages(const HttpRequest& req, const RequestTarget& t, const std::string& id) {
  int64_t after = 0, limit = 1000;
  Status st = QueryInt(t, "after", 0, int64_t{1} << 62, after);
  if (st.ok()) st = QueryInt(t, "limit", 1, 10000, limit);
  if (!st.ok()) return Error(req, st, id);
  Result<Session> session = FindSession(*deps_.db, id);
  if (!session.ok()) return Error(req, session.status(), id);
  Result<std::vector<StoredMessage>> stored = deps_.db->LoadMessages(id, after, limit);
  if (!stored.ok()) return Error(req, stored.status(), id);
  json::array out;
  for (const StoredMessage& m : *stored) out.push_back(StoredMessageToJson(m));
  return JsonResponse(200, json::object{{"session_id", id}, {"messages", std::move(out)}});
}

HttpResponse Api::BuildContext(const HttpRequest& req, const std::string& id) {
  Result<json::object> body = ParseBody(req, /*empty_ok=*/true);
  if (!body.ok()) return Error(req, body.status(), id);
  const json::object& o = *body;
  Status st = CheckKnownKeys(o, {"message", "context_window", "max_output_tokens", "query"});
  if (!st.ok()) return Error(req, st, id);

  Result<Session> session = FindSession(*deps_.db, id);
  if (!session.ok()) return Error(req, session.status(), id);
  auto cfg = config();
  const MessageTokenCounter counter = CounterFor(*session);

  ContextInput input;
  input.budget = cfg->budget;
  input.threshold_pct = cfg->threshold_pct;
  input.message_threshold = cfg->message_threshold;
  input.tool_output_max_tokens = cfg->tool_output_max_tokens;
  input.pruning.protect_user_turns = cfg->pruning.protect_turns;
  input.pruning.protect_tool_tokens = cfg->pruning.protect_tokens;
  input.pruning.minimum_freed_tokens = cfg->pruning.minimum_freed;
  input.system_prompt = session->system_prompt;
  input.tool_tokens =
      session->tools_json == "[]" ? -1 : counter.CountToolDefinitions(session->tools_json);

  // The window is the model's: context_window - max_output_tokens (never one for the other).
  std::optional<ModelSpec> spec = cfg->models.Lookup(session->model);
  int64_t window = session->context_window > 0 ? session->context_window
                                                : (spec ? spec->context_window : 0);
  int64_t max_output = spec ? spec->max_output_tokens : 0;
  if (!(st = OptInt(o, "context_window", 1, int64_t{1} << 40, window)).ok()) return Error(req, st, id);
  if (!(st = OptInt(o, "max_output_tokens", 0, int64_t{1} << 40, max_output)).ok()) {
    return Error(req, st, id);
  }
  if (window > 0) {
    if (max_output >= window) {
      return Error(req, Status::InvalidArgument(
                            "max_output_tokens (" + std::to_string(max_output) +
                                ") must be smaller than context_window (" + std::to_string(window) + ")",
                            "max_output_tokens"), id);
    }
    input.budget.total = window - max_output;
    input.context_window = window;
    input.max_output_tokens = max_output;
  }
  if (!(st = input.budget.Validate()).ok()) {
    return Error(req, Status::InvalidArgument("budget is invalid for this window: " + st.message(),
                                              "context_window"), id);
  }
  // Calibration: when the provider reported more (or fewer) tokens than we counted, our
  // counts are scaled by that ratio, so the budget in our units is total / ratio.
  const int64_t raw_total = input.budget.total;
  CalibrationState calibration;
  if (Result<Calibration> c = deps_.db->GetCalibration(CalibrationKey(*session)); c.ok()) {
    calibration.ratio = c->ratio;
    calibration.samples = c->samples;
  }
  if (calibration.samples > 0 && calibration.ratio > 0) {
    TokenBudget scaled = input.budget;
    scaled.total = static_cast<int64_t>(static_cast<double>(raw_total) / calibration.ratio);
    if (scaled.Validate().ok()) input.budget = scaled;
  }

  if (const json::value* m = o.if_contains("message"); m && !m->is_null()) {
    Result<Message> parsed = ParseMessage(*m, "message");
    if (!parsed.ok()) return Error(req, parsed.status(), id);
    input.new_message = std::move(*parsed);
  }
  std::string query;
  if (!(st = OptString(o, "query", query)).ok()) return Error(req, st, id);

  // The history is borrowed from the cache for the assembly (under the session's lock,
  // so that appends wait) and given back afterwards.
  std::unique_lock<std::mutex> session_lock(SessionLock(id));
  Result<std::shared_ptr<std::vector<StoredMessage>>> cached = History(id);
  if (!cached.ok()) return Error(req, cached.status(), id);
  std::shared_ptr<std::vector<StoredMessage>> history = *cached;
  input.history = std::move(*history);
  struct GiveBack {
    std::vector<StoredMessage>& from;
    std::vector<StoredMessage>& to;
    ~GiveBack() { to = std::move(from); }
  } give_back{input.history, *history};

  // Summaries: the top of the hierarchy (not yet condensed), oldest first.
  Result<std::vector<SummaryRecord>> summaries = deps_.db->ListSummaries(id, /*uncondensed_only=*/true);
  if (!summaries.ok()) return Error(req, summaries.status(), id);
  for (const SummaryRecord& r : *summaries) input.summaries.push_back(ToSummaryView(r));

  // Memory: the new user message (or the agent's query, or the last user message).
  if (query.empty() && input.new_message) query = input.new_message->PlainText();
  for (auto it = input.history.rbegin(); query.empty() && it != input.history.rend(); ++it) {
    if (it->message.role == Role::kUser) query = it->message.PlainText();
  }
  if (!query.empty() && input.budget.memory_fraction > 0) {
    SearchOptions search;
    search.query = query.substr(0, 4096);
    search.exclude_session_id = id;  // this session's history is already in the context
    search.max_results = 10;
    Result<std::vector<MemoryHit>> hits = deps_.db->Search(search);
    if (hits.ok()) {
      input.memory = std::move(*hits);
    } else {
      spdlog::warn("memory search failed for session {}: {}", id, hits.status().ToString());
    }
  }
  if (input.budget.learnings_fraction > 0) {
    ListOptions newest;
    newest.limit = static_cast<int>(input.max_learnings);
    Result<std::vector<LearningRecord>> learnings = deps_.db->ListLearnings(newest);
    if (learnings.ok()) {
      for (const LearningRecord& l : *learnings) input.learnings.push_back(ToLearning(l));
    }
  }

  {
    std::lock_guard<std::mutex> lock(anchors_mu_);
    auto anchor = anchors_.find(id);
    if (anchor != anchors_.end()) input.eviction.anchor_seq = anchor->second;
  }
  Result<AssembledContext> assembled = AssembleContext(input, counter);
  if (!assembled.ok()) return Error(req, assembled.status(), id);
  const ContextReport& report = assembled->report;
  {
    std::lock_guard<std::mutex> lock(anchors_mu_);
    anchors_[id] = report.first_kept_seq;
  }

  // Pruning is sticky: persist the decision before answering, so the next request
  // renders the same prefix bytes.
  if (!report.newly_pruned_seqs.empty()) {
    st = deps_.db->AddMessageFlags(id, report.newly_pruned_seqs, kFlagPruned);
    if (!st.ok()) return Error(req, st, id);
    for (int64_t seq : report.newly_pruned_seqs) {  // the borrowed copy, given back below
      auto m = std::lower_bound(input.history.begin(), input.history.end(), seq,
                                [](const StoredMessage& a, int64_t v) { return a.seq < v; });
      if (m != input.history.end() && m->seq == seq) m->flags |= kFlagPruned;
    }
    (void)deps_.auditor->Emit("context.pruned", "context", "allow", id,
                              json::object{{"messages", report.newly_pruned_seqs.size()},
                                           {"freed_tokens", report.pruned_freed_tokens}});
  }
  if (report.should_summarize) {
    Result<EnqueueResult> job = deps_.db->EnqueueJob(
        "summarize", id,
        json::serialize(json::object{{"reason", report.zone},
                                     {"history_tokens", report.history_demand_tokens}}),
        deps_.clock_ms());
    if (job.ok() && job->created) {
      (void)deps_.auditor->Emit("job.queued", "context", "allow", id,
                                json::object{{"job_id", job->job.id}, {"kind", "summarize"}});
    }
  }

  const std::string context_id = "ctx_" + deps_.new_id();
  int64_t estimated = report.used_tokens;
  if (!report.tools_measured) estimated -= report.tool_tokens;
  if (!report.system_measured) {
    estimated -= std::max<int64_t>(0, report.system_tokens - report.system_message_tokens);
  }
  RememberContext(context_id, IssuedContext{id, CalibrationKey(*session), estimated});

  json::array messages;
  for (const Message& m : assembled->messages) messages.push_back(MessageToJson(m));
  json::object budget = ContextReportToJson(report);
  budget["encoding"] = counter.counter().Name();
  budget["factor"] = counter.options().factor;
  budget["calibration"] = json::object{{"ratio", calibration.ratio},
                                       {"samples", calibration.samples},
                                       {"raw_total", raw_total},
                                       {"calibrated_total", input.budget.total},
                                       {"estimated_tokens", estimated},
                                       {"calibrated_tokens", Calibrated(calibration, estimated)}};
  (void)deps_.auditor->Emit("context.built", "context", "allow", id,
                            json::object{{"context_id", context_id},
                                         {"used_tokens", report.used_tokens},
                                         {"total", report.total},
                                         {"kept_messages", report.kept_messages},
                                         {"dropped_messages", report.dropped_messages},
                                         {"summaries", report.summaries_included},
                                         {"sanitized", report.sanitized.size()},
                                         {"zone", report.zone}});
  return JsonResponse(200, json::object{{"context_id", context_id},
                                        {"session_id", id},
                                        {"messages", std::move(messages)},
                                        {"system", assembled->system},
                                        {"budget", std::move(budget)}});
}

HttpResponse Api::ReportUsage(const HttpRequest& req, const std::string& id) {
  Result<json::object> body = ParseBody(req, /*empty_ok=*/false);
  if (!body.ok()) return Error(req, body.status(), id);
  Status st = CheckKnownKeys(*body, {"context_id", "prompt_tokens", "completion_tokens"});
  if (!st.ok()) return Error(req, st, id);
  std::string context_id;
  int64_t prompt_tokens = -1, completion_tokens = 0;
  if (!(st = OptString(*body, "context_id", context_id)).ok()) return Error(req, st, id);
  if (context_id.empty()) return Error(req, Status::InvalidArgument("is required", "context_id"), id);
  if (!(st = OptInt(*body, "prompt_tokens", 1, int64_t{1} << 40, prompt_tokens)).ok()) {
    return Error(req, st, id);
  }
  if (prompt_tokens < 0) return Error(req, Status::InvalidArgument("is required", "prompt_tokens"), id);
  if (!(st = OptInt(*body, "completion_tokens", 0, int64_t{1} << 40, completion_tokens)).ok()) {
    return Error(req, st, id);
  }
  std::optional<IssuedContext> issued = FindContext(context_id);
  if (!issued || issued->session_id != id) {
    return Error(req, Status::NotFound("context '" + context_id + "' is unknown for session '" + id +
                                       "' (the daemon remembers the last 4096 contexts)", "context_id"), id);
  }
  auto cfg = config();
  CalibrationOptions options;
  options.alpha = cfg->calibration.alpha;
  options.min_ratio = cfg->calibration.min_ratio;
  options.max_ratio = cfg->calibration.max_ratio;

  std::lock_guard<std::mutex> lock(SessionLock(id));
  CalibrationState before;
  if (Result<Calibration> c = deps_.db->GetCalibration(issued->calibration_key); c.ok()) {
    before.ratio = c->ratio;
    before.samples = c->samples;
  }
  const CalibrationState after = Update(before, issued->estimated_tokens, prompt_tokens, options);
  Calibration row;
  row.model = issued->calibration_key;
  row.ratio = after.ratio;
  row.samples = after.samples;
  row.updated_at_ms = deps_.clock_ms();
  if (!(st = deps_.db->PutCalibration(row)).ok()) return Error(req, st, id);
  json::object detail{{"context_id", context_id},
                      {"model", issued->calibration_key},
                      {"estimated_tokens", issued->estimated_tokens},
                      {"prompt_tokens", prompt_tokens},
                      {"completion_tokens", completion_tokens},
                      {"ratio_before", before.ratio},
                      {"ratio", after.ratio},
                      {"samples", after.samples}};
  (void)deps_.auditor->Emit("calibration.updated", "provider", "allow", id, detail);
  return JsonResponse(200, detail);
}

HttpResponse Api::ListSummaries(const HttpRequest& req, const std::string& id) {
  Result<Session> session = FindSession(*deps_.db, id);
  if (!session.ok()) return Error(req, session.status(), id);
  Result<std::vector<SummaryRecord>> list = deps_.db->ListSummaries(id);
  if (!list.ok()) return Error(req, list.status(), id);
  json::array out;
  for (const SummaryRecord& r : *list) out.push_back(SummaryToJson(r));
  return JsonResponse(200, json::object{{"session_id", id}, {"summaries", std::move(out)}});
}

HttpResponse Api::GetSummary(const HttpRequest& req, const std::string& summary_id) {
  Result<SummaryRecord> summary = deps_.db->GetSummary(summary_id);
  if (!summary.ok()) return Error(req, summary.status());
  json::object out = SummaryToJson(*summary);
  // Expansion: the children of a condensed summary, or the messages a leaf covers.
  Result<std::vector<SummaryRecord>> children = deps_.db->SummaryChildren(summary_id);
  if (!children.ok()) return Error(req, children.status());
  json::array kids;
  for (const SummaryRecord& c : *children) kids.push_back(SummaryToJson(c));
  out["children"] = std::move(kids);
  Result<std::vector<StoredMessage>> covered = deps_.db->SummaryMessages(summary_id);
  if (!covered.ok()) return Error(req, covered.status());
  json::array msgs;
  for (const StoredMessage& m : *covered) msgs.push_back(StoredMessageToJson(m));
  out["messages"] = std::move(msgs);
  return JsonResponse(200, out);
}

HttpResponse Api::Audit(const HttpRequest& req, const RequestTarget& t) {
  int64_t since = 0, limit = 100;
  Status st = QueryInt(t, "since", 0, int64_t{1} << 62, since);
  if (st.ok()) st = QueryInt(t, "limit", 1, 10000, limit);
  if (!st.ok()) return Error(req, st);
  auto type = t.query.find("type");
  Result<std::vector<AuditEvent>> events = deps_.db->AuditSince(
      since, static_cast<int>(limit), type == t.query.end() ? std::string_view{} : type->second);
  if (!events.ok()) return Error(req, events.status());
  json::array out;
  for (const AuditEvent& e : *events) out.push_back(json::parse(AuditEventToJsonLine(e)));
  return JsonResponse(200, json::object{{"events", std::move(out)}});
}

HttpResponse Api::VerifyAudit(const HttpRequest& req) {
  Result<AuditVerifyReport> report = deps_.db->VerifyAuditChain();
  if (!report.ok()) return Error(req, report.status());
  return JsonResponse(200, json::object{{"ok", report->ok},
                                        {"checked", report->checked},
                                        {"first_seq", report->first_seq},
                                        {"last_seq", report->last_seq},
                                        {"broken_seq", report->broken_seq},
                                        {"reason", report->reason}});
}

HttpResponse Api::AddMemory(const HttpRequest& req) {
  Result<json::object> body = ParseBody(req, /*empty_ok=*/false);
  if (!body.ok()) return Error(req, body.status());
  Status st = CheckKnownKeys(*body, {"text", "tags", "session_id", "pinned"});
  if (!st.ok()) return Error(req, st);
  MemoryItem item;
  if (!(st = OptString(*body, "text", item.text)).ok()) return Error(req, st);
  if (item.text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Error(req, Status::InvalidArgument("must not be empty", "text"));
  }
  if (!(st = OptStrings(*body, "tags", item.tags)).ok()) return Error(req, st);
  if (!(st = OptString(*body, "session_id", item.session_id)).ok()) return Error(req, st);
  if (!item.session_id.empty()) {
    Result<Session> session = FindSession(*deps_.db, item.session_id);
    if (!session.ok()) {
      return Error(req, Status::NotFound("session '" + item.session_id + "' not found", "session_id"));
    }
  }
  std::optional<bool> pinned;
  if (!(st = OptBool(*body, "pinned", pinned)).ok()) return Error(req, st);
  item.pinned = pinned.value_or(false);
  item.created_at_ms = deps_.clock_ms();
  Result<MemoryItem> stored = deps_.db->AddMemoryItem(item);
  if (!stored.ok()) return Error(req, stored.status());
  (void)deps_.auditor->Emit("memory.added", "memory", "allow", stored->session_id,
                            json::object{{"id", stored->id}, {"chars", stored->text.size()}});
  return JsonResponse(201, MemoryToJson(*stored));
}

HttpResponse Api::ListMemory(const HttpRequest& req, const RequestTarget& t) {
  Result<ListOptions> paging = Paging(t);
  if (!paging.ok()) return Error(req, paging.status());
  auto session = t.query.find("session_id");
  const ListOptions& options = *paging;
  Result<std::vector<MemoryItem>> items = deps_.db->ListMemoryItems(
      options, session == t.query.end() ? std::string_view{} : session->second);
  if (!items.ok()) return Error(req, items.status());
  json::array out;
  for (const MemoryItem& m : *items) out.push_back(MemoryToJson(m));
  return JsonResponse(200, json::object{{"items", std::move(out)}});
}

HttpResponse Api::GetMemory(const HttpRequest& req, const std::string& memory_id) {
  Result<MemoryItem> item = deps_.db->GetMemoryItem(memory_id);
  if (!item.ok()) return Error(req, item.status());
  return JsonResponse(200, MemoryToJson(*item));
}

HttpResponse Api::DeleteMemory(const HttpRequest& req, const std::string& memory_id) {
  Status st = deps_.db->DeleteMemoryItem(memory_id);
  if (!st.ok()) return Error(req, st);
  (void)deps_.auditor->Emit("memory.deleted", "memory", "allow", "", json::object{{"id", memory_id}});
  return JsonResponse(200, json::object{{"deleted", memory_id}});
}

HttpResponse Api::SearchMemory(const HttpRequest& req, const RequestTarget& t) {
  auto q = t.query.find("q");
  if (q == t.query.end() || q->second.empty()) {
    return Error(req, Status::InvalidArgument("the search text is required", "q"));
  }
  int64_t limit = 10;
  Status st = QueryInt(t, "limit", 1, 100, limit);
  if (!st.ok()) return Error(req, st);
  SearchOptions options;
  options.query = q->second;
  options.max_results = static_cast<int>(limit);
  if (auto it = t.query.find("session_id"); it != t.query.end()) options.session_id = it->second;
  if (auto it = t.query.find("exclude_session_id"); it != t.query.end()) {
    options.exclude_session_id = it->second;
  }
  Result<std::vector<MemoryHit>> hits = deps_.db->Search(options);
  if (!hits.ok()) return Error(req, hits.status());
  json::array out;
  for (const MemoryHit& h : *hits) {
    out.push_back(json::object{{"source", h.source}, {"id", h.id}, {"text", h.text}, {"score", h.score}});
  }
  return JsonResponse(200, json::object{{"query", q->second}, {"results", std::move(out)}});
}

HttpResponse Api::AddLearning(const HttpRequest& req) {
  Result<json::object> body = ParseBody(req, /*empty_ok=*/false);
  if (!body.ok()) return Error(req, body.status());
  Status st = CheckKnownKeys(*body, {"task_type", "outcome", "lesson", "approach", "session_id"});
  if (!st.ok()) return Error(req, st);
  LearningRecord l;
  if (!(st = OptString(*body, "task_type", l.task_type)).ok()) return Error(req, st);
  if (!(st = OptString(*body, "outcome", l.outcome)).ok()) return Error(req, st);
  if (!(st = OptString(*body, "lesson", l.lesson)).ok()) return Error(req, st);
  if (!(st = OptStrings(*body, "approach", l.approach)).ok()) return Error(req, st);
  if (!(st = OptString(*body, "session_id", l.session_id)).ok()) return Error(req, st);
  if (l.lesson.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Error(req, Status::InvalidArgument("must not be empty", "lesson"));
  }
  l.created_at_ms = deps_.clock_ms();
  Result<LearningRecord> stored = deps_.db->AddLearning(l);
  if (!stored.ok()) return Error(req, stored.status());
  (void)deps_.auditor->Emit("learning.added", "memory", "allow", stored->session_id,
                            json::object{{"id", stored->id}, {"task_type", stored->task_type}});
  return JsonResponse(201, LearningToJson(*stored));
}

HttpResponse Api::ListLearnings(const HttpRequest& req, const RequestTarget& t) {
  Result<ListOptions> paging = Paging(t);
  if (!paging.ok()) return Error(req, paging.status());
  auto type = t.query.find("task_type");
  const ListOptions& options = *paging;
  Result<std::vector<LearningRecord>> list = deps_.db->ListLearnings(
      options, type == t.query.end() ? std::string_view{} : type->second);
  if (!list.ok()) return Error(req, list.status());
  json::array out;
  for (const LearningRecord& l : *list) out.push_back(LearningToJson(l));
  return JsonResponse(200, json::object{{"learnings", std::move(out)}});
}

HttpResponse Api::ListJobs(const HttpRequest& req, const RequestTarget& t) {
  Result<ListOptions> paging = Paging(t);
  if (!paging.ok()) return Error(req, paging.status());
  std::string state;
  if (auto it = t.query.find("state"); it != t.query.end()) {
    state = it->second;
    if (state != "queued" && state != "running" && state != "done" && state != "failed") {
      return Error(req, Status::InvalidArgument("expected queued, running, done or failed", "state"));
    }
  }
  const ListOptions& options = *paging;
  Result<std::vector<Job>> jobs = deps_.db->ListJobs(options, state);
  if (!jobs.ok()) return Error(req, jobs.status());
  json::array out;
  for (const Job& j : *jobs) out.push_back(JobToJson(j));
  return JsonResponse(200, json::object{{"jobs", std::move(out)}});
}

HttpResponse Api::ImportMissy(const HttpRequest& req) {
  Result<json::object> body = ParseBody(req, /*empty_ok=*/true);
  if (!body.ok()) return Error(req, body.status());
  Status st = CheckKnownKeys(*body, {"path"});
  if (!st.ok()) return Error(req, st);
  std::string path;
  if (!(st = OptString(*body, "path", path)).ok()) return Error(req, st);
  if (path.empty()) path = config()->missy_home + "/memory.db";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Error(req, Status::NotFound("no Missy database at " + path, "path"));
  }
  Session counting;  // Missy turns carry no model: count them with the default encoding
  const MessageTokenCounter counter = CounterFor(counting);
  Result<MissyImportReport> report = deps_.db->ImportMissy(path, &counter, deps_.clock_ms());
  history_.Clear();
  if (!report.ok()) return Error(req, report.status());
  json::object detail{{"path", path},
                      {"sessions", report->sessions},
                      {"messages", report->messages},
                      {"summaries", report->summaries},
                      {"learnings", report->learnings},
                      {"skipped", report->skipped}};
  (void)deps_.auditor->Emit("import.missy", "memory", "allow", "", detail);
  return JsonResponse(200, detail);
}

}  // namespace missy
