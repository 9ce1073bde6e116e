#include "daemon/api.h"

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include <charconv>
#include <functional>
#include <optional>
#include <vector>

#include "core/assembler.h"
#include "core/model_table.h"

namespace missy {

namespace json = boost::json;

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

struct Target {
  std::vector<std::string> segments;  // decoded path segments
  std::unordered_map<std::string, std::string> query;
};

Target ParseTarget(std::string_view target) {
  Target t;
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

Status QueryInt(const Target& t, const std::string& key, int64_t min, int64_t max, int64_t& out) {
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
  if (std::optional<ModelSpec> spec = cfg->models.Lookup(session.model)) {
    options.factor = spec->factor;
  }
  return MessageTokenCounter(heuristic_, options);
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
  const Target t = ParseTarget(req.target);
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
      return req.method == "GET" ? Audit(req) : method_not_allowed("GET");
    }
    if (s[1] == "sessions") {
      if (s.size() == 2) {
        if (req.method == "POST") return CreateSession(req);
        if (req.method == "GET") return ListSessions(req);
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
        if (req.method == "GET") return ListMessages(req, id);
        return method_not_allowed("GET, POST");
      }
      if (s.size() == 4 && s[3] == "context") {
        return req.method == "POST" ? BuildContext(req, id) : method_not_allowed("POST");
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

HttpResponse Api::ListSessions(const HttpRequest& req) {
  const Target t = ParseTarget(req.target);
  int64_t limit = 100, offset = 0;
  Status st = QueryInt(t, "limit", 1, kMaxListLimit, limit);
  if (st.ok()) st = QueryInt(t, "offset", 0, int64_t{1} << 40, offset);
  if (!st.ok()) return Error(req, st);
  ListOptions options;
  options.limit = static_cast<int>(limit);
  options.offset = static_cast<int>(offset);
  Result<std::vector<Session>> sessions = deps_.db->ListSessions(options);
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
  Result<Session> session = FindSession(*deps_.db, id);
  if (!session.ok()) return Error(req, session.status(), id);
  const MessageTokenCounter counter = CounterFor(*session);

  std::vector<NewMessage> batch(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    Result<Message> m = ParseMessage(list[i], "messages[" + std::to_string(i) + "]");
    if (!m.ok()) return Error(req, m.status(), id);
    batch[i].message = std::move(*m);
    batch[i].tokens = counter.CountMessage(batch[i].message);
  }

  std::lock_guard<std::mutex> lock(SessionLock(id));
  Result<std::vector<StoredMessage>> stored = deps_.db->AppendMessages(id, batch, deps_.clock_ms());
  if (!stored.ok()) return Error(req, stored.status(), id);
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
  (void)deps_.auditor->Emit("messages.appended", "context", "allow", id,
                            json::object{{"count", stored->size()},
                                         {"first_seq", stored->front().seq},
                                         {"last_seq", stored->back().seq},
                                         {"tokens", tokens}});
  return JsonResponse(200, json::object{{"session_id", id},
                                        {"appended", stored->size()},
                                        {"messages", std::move(rows)},
                                        {"warnings", json::array{}},
                                        {"message_count", after->message_count},
                                        {"total_tokens", after->total_tokens},
                                        {"last_seq", after->last_seq}});
}

HttpResponse Api::ListMessages(const HttpRequest& req, const std::string& id) {
  const Target t = ParseTarget(req.target);
  int64_t after = 0, limit = 1000;
  Status st = QueryInt(t, "after", 0, int64_t{1} << 62, after);
  if (st.ok()) st = QueryInt(t, "limit", 1, 10000, limit);
  if (!st.ok()) return Error(req, st, id);
  Result<Session> session = FindSession(*deps_.db, id);
  if (!session.ok()) return Error(req, session.status(), id);
  Result<std::vector<StoredMessage>> stored = deps_.db->LoadMessages(id, after, limit);
  if (!stored.ok()) return Error(req, stored.status(), id);
  json::array out;
  for (const StoredMessage& m : *stored) {
    json::object o = MessageToJson(m.message);
    o["seq"] = m.seq;
    o["tokens"] = m.tokens;
    o["created_at"] = FormatIsoTimestampMs(m.created_at_ms);
    if (m.flags != kFlagNone) o["flags"] = FlagNames(m.flags);
    out.push_back(std::move(o));
  }
  return JsonResponse(200, json::object{{"session_id", id}, {"messages", std::move(out)}});
}

HttpResponse Api::BuildContext(const HttpRequest& req, const std::string& id) {
  Result<json::object> body = ParseBody(req, /*empty_ok=*/true);
  if (!body.ok()) return Error(req, body.status(), id);
  const json::object& o = *body;
  Status st = CheckKnownKeys(o, {"message", "context_window", "max_output_tokens"});
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
  input.system_prompt = session->system_prompt;
  input.tool_tokens = session->tools_json == "[]" ? -1 : counter.CountToolDefinitions(session->tools_json);

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
  if (const json::value* m = o.if_contains("message"); m && !m->is_null()) {
    Result<Message> parsed = ParseMessage(*m, "message");
    if (!parsed.ok()) return Error(req, parsed.status(), id);
    input.new_message = std::move(*parsed);
  }

  Result<std::vector<StoredMessage>> history = deps_.db->LoadMessages(id);
  if (!history.ok()) return Error(req, history.status(), id);
  input.history = std::move(*history);

  Result<AssembledContext> assembled = AssembleContext(input, counter);
  if (!assembled.ok()) return Error(req, assembled.status(), id);

  const std::string context_id = "ctx_" + deps_.new_id();
  json::array messages;
  for (const Message& m : assembled->messages) messages.push_back(MessageToJson(m));
  const ContextReport& report = assembled->report;
  (void)deps_.auditor->Emit("context.built", "context", "allow", id,
                            json::object{{"context_id", context_id},
                                         {"used_tokens", report.used_tokens},
                                         {"total", report.total},
                                         {"kept_messages", report.kept_messages},
                                         {"dropped_messages", report.dropped_messages},
                                         {"zone", report.zone}});
  return JsonResponse(200, json::object{{"context_id", context_id},
                                        {"session_id", id},
                                        {"messages", std::move(messages)},
                                        {"system", assembled->system},
                                        {"budget", ContextReportToJson(report)}});
}

HttpResponse Api::Audit(const HttpRequest& req) {
  const Target t = ParseTarget(req.target);
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

}  // namespace missy
