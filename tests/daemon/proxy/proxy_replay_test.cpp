// The shared real trajectories (../shared/data/trajectories/*.jsonl) replayed through the
// proxy (daemon/proxy/) by an agent that resends its whole history every turn, once in
// the Anthropic Messages shape and once in the OpenAI Chat shape, against a fake upstream
// that answers each request with the trajectory's next assistant message (the agent keeps
// the answer it received as its copy). One daemon per trajectory, the session named by a
// /s/NAME/ path. The model is a test model (a context.models row: 32,000 tokens, 4,000
// for the answer, the window of the project's other replay measures; the Anthropic
// requests say max_tokens 4000, the Chat ones name none, so the row's output limit
// applies), small enough that the daemon really evicts, prunes, truncates and summarizes
// the long ones. For every upstream request:
//   1. it fits: the `proxy.request` audit event's sent_tokens is at most window - output,
//      and so is an independent count (the daemon's o200k_base counter over the engine
//      form of what the upstream received: system, messages, other fields);
//   2. it is pair-valid (tool_use/tool_result, tool_calls/tool messages);
//   3. the agent's newest messages (its last assistant message and what followed) end it
//      JSON-equal; only a tool output the engine cut to fit may differ (same tool ids,
//      fewer tokens), and such cuts are counted;
//   4. the answer the agent received is byte-identical to what the upstream sent.
// A trajectory that ends with tool outputs gets one more turn sending them (answered
// "[replay ended]"). At the end the stored session holds the trajectory (role, text, tool
// call ids; the leading system message as its system prompt), no history diverged, and
// the cache-reusable share is printed and checked: for each request, the tokens
// (independent count) of its longest leading run of messages JSON-equal to the previous
// request's (system included: a different system reuses nothing), summed over requests,
// over all tokens sent.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/tokenizers.h"
#include "core/token_counter.h"
#include "daemon/daemon_process.h"
#include "daemon/proxy/anthropic_wire.h"
#include "daemon/proxy/chat_wire.h"
#include "provider/fake_provider_server.h"
#include "test_util.h"

namespace missy::testing {
namespace {

namespace json = boost::json;
using provider_test::FakeProviderServer;
using provider_test::RecordedRequest;
using provider_test::Reply;

constexpr const char* kModel = "replay-small";
constexpr int64_t kWindow = 32000;
constexpr int64_t kMaxOutput = 4000;
constexpr int64_t kBudget = kWindow - kMaxOutput;
// Every trajectory is replayed whole (1,130 messages, 549 requests per shape): 10-15 s per
// shape here. A positive value replays that many messages of each (then the rest of the
// tool group they end in).
constexpr size_t kMaxMessages = 0;  // 0: no limit

const char* const kFiles[] = {"marot__spotter-1.jsonl",           "gruckion__mini-swe-agent-1.jsonl",
                              "gruckion__mini-swe-agent-2.jsonl", "openai__codex-1.jsonl",
                              "princeton-nlp__SWE-agent-1.jsonl", "OpenHands__benchmarks-1.jsonl"};

enum class Shape { kAnthropic, kChat };

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::string Role(const json::value& m) { return Str(m.as_object(), "role"); }

// The trajectory, cut after kMaxMessages (extended to the end of a tool group).
std::vector<json::object> LoadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<json::object> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(json::parse(line).as_object());
  }
  if (kMaxMessages > 0 && out.size() > kMaxMessages) {
    size_t n = kMaxMessages;
    while (n < out.size() && Str(out[n], "role") == "tool") ++n;
    out.resize(n);
  }
  return out;
}

// ---- The agent's side: the trajectory in the API's shape. ----

json::array AnthropicBlocksOf(const json::object& assistant) {
  json::array blocks;
  if (std::string text = Str(assistant, "content"); !text.empty()) {
    blocks.push_back({{"type", "text"}, {"text", text}});
  }
  if (const json::value* calls = assistant.if_contains("tool_calls"); calls && calls->is_array()) {
    for (const json::value& c : calls->as_array()) {
      const json::object& fn = c.at("function").as_object();
      boost::system::error_code ec;
      json::value input = json::parse(Str(fn, "arguments"), ec);
      if (ec || !input.is_object()) input = json::object{{"raw", Str(fn, "arguments")}};
      blocks.push_back({{"type", "tool_use"},
                        {"id", c.at("id")},
                        {"name", Str(fn, "name")},
                        {"input", std::move(input)}});
    }
  }
  if (blocks.empty()) blocks.push_back({{"type", "text"}, {"text", ""}});
  return blocks;
}

bool IsToolResultMessage(const json::value& m) {
  const json::value* c = m.as_object().if_contains("content");
  if (Role(m) != "user" || c == nullptr || !c->is_array() || c->as_array().empty()) return false;
  for (const json::value& b : c->as_array()) {
    if (Str(b.as_object(), "type") != "tool_result") return false;
  }
  return true;
}

// Adds a user, system or tool message of the trajectory to the agent's list (assistant
// messages come from the answers). Anthropic: a tool message joins the user message of
// tool results before it; a system message amid the history is a user message.
void AgentAdd(Shape shape, json::array& list, const json::object& m) {
  if (shape == Shape::kChat) {
    list.push_back(m);
    return;
  }
  const std::string role = Str(m, "role");
  if (role == "tool") {
    json::object block{{"type", "tool_result"},
                       {"tool_use_id", Str(m, "tool_call_id")},
                       {"content", Str(m, "content")}};
    if (!list.empty() && IsToolResultMessage(list.back())) {
      list.back().as_object()["content"].as_array().push_back(std::move(block));
    } else {
      list.push_back({{"role", "user"}, {"content", json::array{std::move(block)}}});
    }
    return;
  }
  list.push_back({{"role", "user"}, {"content", m.at("content")}});
}

json::object RequestBody(Shape shape, const std::string& system, const json::array& list) {
  if (shape == Shape::kChat) {
    json::array messages;
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    for (const json::value& m : list) messages.push_back(m);
    return {{"model", kModel}, {"messages", std::move(messages)}};  // output: the model's
  }
  json::object body{{"model", kModel}, {"max_tokens", kMaxOutput}, {"messages", list}};
  if (!system.empty()) body["system"] = system;
  return body;
}

// What the upstream answers with: the trajectory's assistant message in the API's shape.
std::string AnswerBody(Shape shape, const json::object& assistant, int n, int64_t in, int64_t out) {
  const bool calls = assistant.contains("tool_calls") && assistant.at("tool_calls").is_array() &&
                     !assistant.at("tool_calls").as_array().empty();
  if (shape == Shape::kChat) {
    return json::serialize(json::object{
        {"id", "chatcmpl-replay-" + std::to_string(n)},
        {"object", "chat.completion"},
        {"created", 1764000000 + n},
        {"model", kModel},
        {"choices", json::array{{{"index", 0},
                                 {"message", assistant},
                                 {"logprobs", nullptr},
                                 {"finish_reason", calls ? "tool_calls" : "stop"}}}},
        {"usage", {{"prompt_tokens", in}, {"completion_tokens", out}, {"total_tokens", in + out}}}});
  }
  return json::serialize(json::object{{"id", "msg_replay_" + std::to_string(n)},
                                      {"type", "message"},
                                      {"role", "assistant"},
                                      {"model", kModel},
                                      {"content", AnthropicBlocksOf(assistant)},
                                      {"stop_reason", calls ? "tool_use" : "end_turn"},
                                      {"stop_sequence", nullptr},
                                      {"usage", {{"input_tokens", in}, {"output_tokens", out}}}});
}

// The assistant message the agent keeps from an answer it received.
json::value AssistantFromAnswer(Shape shape, const std::string& body) {
  json::value v = json::parse(body);
  if (shape == Shape::kChat) return v.at("choices").at(0).at("message");
  return json::object{{"role", "assistant"}, {"content", v.at("content")}};
}

// ---- The upstream's side: what it received, counted and checked. ----

struct Received {
  json::object body;
  json::array messages;          // body.messages as sent
  std::vector<int64_t> tokens;   // per message of `messages` (engine form, counted)
  int64_t system_tokens = 0;     // Anthropic `system`
  int64_t fixed_tokens = 0;      // tools and other fields, as the budget counts them
  int64_t total = 0;             // the independent count of the whole request
  std::vector<std::vector<Message>> engine;  // per message
};

Result<Received> ReadReceived(Shape shape, const std::string& body, const MessageTokenCounter& c) {
  Result<proxy::ParsedRequest> parsed =
      shape == Shape::kChat ? proxy::ParseChatRequest(body) : proxy::ParseAnthropicRequest(body);
  if (!parsed.ok()) return parsed.status();
  Received r;
  // As received (the parse moved the history's messages out of parsed->body).
  r.body = json::parse(body).as_object();
  r.messages = r.body.at("messages").as_array();
  if (shape == Shape::kChat) {
    for (size_t i = 0; i < parsed->leading; ++i) {
      Result<std::vector<Message>> e = proxy::ChatToEngine(r.messages[i], "leading");
      if (!e.ok()) return e.status();
      r.engine.push_back(std::move(*e));
    }
  } else if (!parsed->system_text.empty()) {
    r.system_tokens = c.CountMessage(Message::System(parsed->system_text));
  }
  for (proxy::NativeMessage& n : parsed->messages) r.engine.push_back(std::move(n.engine));
  if (r.engine.size() != r.messages.size()) return Status::Internal("message count mismatch");
  for (const std::vector<Message>& e : r.engine) {
    int64_t t = 0;
    for (const Message& m : e) t += c.CountMessage(m);
    r.tokens.push_back(t);
  }
  // Tools and the request's other fields, as the proxy's budget counts them.
  if (parsed->tools_json != "[]") r.fixed_tokens += c.CountToolDefinitions(parsed->tools_json);
  json::object rest;
  for (const auto& [key, value] : parsed->body) {
    if (key == "messages" || key == "system" || key == "tools" || key == "model" ||
        key == "max_tokens" || key == "stream") {
      continue;
    }
    rest[key] = value;
  }
  if (!rest.empty()) r.fixed_tokens += c.CountText(json::serialize(rest));
  r.total = r.system_tokens + r.fixed_tokens;
  for (int64_t t : r.tokens) r.total += t;
  return r;
}

std::vector<std::string> ToolIds(const json::value& m, std::string_view type, std::string_view key) {
  std::vector<std::string> ids;
  const json::value* c = m.as_object().if_contains("content");
  if (c == nullptr || !c->is_array()) return ids;
  for (const json::value& b : c->as_array()) {
    if (b.is_object() && Str(b.as_object(), "type") == type) ids.push_back(Str(b.as_object(), key));
  }
  return ids;
}

std::vector<std::string> CallIds(const json::value& m) {
  std::vector<std::string> ids;
  const json::value* calls = m.as_object().if_contains("tool_calls");
  if (calls == nullptr || !calls->is_array()) return ids;
  for (const json::value& c : calls->as_array()) ids.push_back(Str(c.as_object(), "id"));
  return ids;
}

// "" or what is wrong with the tool pairing of a request's messages.
std::string PairProblem(Shape shape, const json::array& messages) {
  if (shape == Shape::kAnthropic) {
    for (size_t i = 0; i < messages.size(); ++i) {
      const std::vector<std::string> uses =
          Role(messages[i]) == "assistant" ? ToolIds(messages[i], "tool_use", "id")
                                           : std::vector<std::string>{};
      std::multiset<std::string> want(uses.begin(), uses.end());
      std::multiset<std::string> got;
      if (i + 1 < messages.size() && Role(messages[i + 1]) == "user") {
        for (const std::string& id : ToolIds(messages[i + 1], "tool_result", "tool_use_id")) {
          got.insert(id);
        }
      }
      if (want != got) {
        return "message " + std::to_string(i) + " has " + std::to_string(want.size()) +
               " tool_use, message " + std::to_string(i + 1) + " answers " +
               std::to_string(got.size()) + " (or another set)";
      }
    }
    // A tool_result in the first message answers nothing.
    if (!messages.empty() && !ToolIds(messages[0], "tool_result", "tool_use_id").empty()) {
      return "message 0 holds a tool_result";
    }
    return "";
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string role = Role(messages[i]);
    if (role == "tool") return "tool message " + std::to_string(i) + " outside a group";
    if (role != "assistant") continue;
    const std::vector<std::string> ids = CallIds(messages[i]);
    std::multiset<std::string> open(ids.begin(), ids.end());
    size_t j = i + 1;
    for (; j < messages.size() && Role(messages[j]) == "tool"; ++j) {
      auto it = open.find(Str(messages[j].as_object(), "tool_call_id"));
      if (it == open.end()) return "tool message " + std::to_string(j) + " answers no call of " + std::to_string(i);
      open.erase(it);
    }
    if (!open.empty()) return "call " + *open.begin() + " of message " + std::to_string(i) + " unanswered";
    i = j - 1;
  }
  return "";
}

bool IsToolOutput(Shape shape, const json::value& m) {
  return shape == Shape::kChat ? Role(m) == "tool" : IsToolResultMessage(m);
}

std::vector<std::string> ResultIds(Shape shape, const json::value& m) {
  if (shape == Shape::kChat) return {Str(m.as_object(), "tool_call_id")};
  return ToolIds(m, "tool_result", "tool_use_id");
}

// A stored or trajectory message as the comparison sees it.
struct Seen {
  std::string role, text, tool_call_id;
  std::vector<std::string> call_ids;
  bool operator==(const Seen&) const = default;
};

std::string TextOf(const json::value* content) {
  if (content == nullptr || content->is_null()) return "";
  if (content->is_string()) return std::string(content->as_string());
  std::string out;
  for (const json::value& p : content->as_array()) {
    if (!out.empty()) out += "\n";
    out += Str(p.as_object(), "text");
  }
  return out;
}

Seen SeenOf(const json::object& m) {
  return Seen{Str(m, "role"), TextOf(m.if_contains("content")), Str(m, "tool_call_id"),
              CallIds(json::value(m))};
}

std::ostream& operator<<(std::ostream& os, const Seen& s) {
  os << s.role << " [" << s.tool_call_id << "] calls";
  for (const std::string& id : s.call_ids) os << " " << id;
  return os << " text(" << s.text.size() << "): " << s.text.substr(0, 200);
}

// What the responder and the agent share about the turn under way.
struct Turn {
  std::mutex mu;
  std::optional<json::object> assistant;  // the trajectory's message to answer with
  int answered = 0;                       // upstream requests this turn
  int n = 0;                              // answers so far
  std::string received;                   // the last request's body
  std::string sent;                       // the last answer's body
};

struct Figures {
  int requests = 0;
  int64_t max_sent = 0;         // the independent count
  int64_t max_audit_sent = 0;   // sent_tokens of proxy.request
  int64_t max_count_gap = 0;    // max |independent - sent_tokens| over the requests
  std::vector<int64_t> counts;  // the independent count of each request
  int64_t reusable = 0, total = 0;
  int breaks = 0;  // requests that do not extend the previous one (eviction, new summaries)
  int with_summaries = 0, with_drops = 0, cut_tool_outputs = 0;
  size_t summaries_done = 0;
  double seconds = 0;
};

class ProxyReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::shared_ptr<const TokenCounter>> o200k = registry_.Get("o200k_base");
    ASSERT_TRUE(o200k.ok()) << o200k.status().ToString();
    counter_.emplace(*o200k);
  }

  Figures Replay(Shape shape, const std::string& file);
  void RunAll(Shape shape);

  TokenizerRegistry registry_;
  std::optional<MessageTokenCounter> counter_;
};

Figures ProxyReplayTest::Replay(Shape shape, const std::string& file) {
  Figures f;
  const auto started = std::chrono::steady_clock::now();
  const std::string path = TrajectoryPath(file);
  EXPECT_FALSE(path.empty()) << "missing trajectory " << file << " (../shared/data/trajectories)";
  if (path.empty()) return f;
  const std::vector<json::object> lines = LoadLines(path);
  const MessageTokenCounter& counter = *counter_;

  Turn turn;
  auto upstream = std::make_unique<FakeProviderServer>(
      provider_test::RespondWith([&turn, shape, &counter](const RecordedRequest& req) {
        std::lock_guard lock(turn.mu);
        ++turn.answered;
        turn.received = req.body;
        Reply reply;
        reply.headers = {{"Content-Type", "application/json"}};
        if (!turn.assistant) {
          reply.status = 500;
          reply.body = R"({"error":{"message":"replay: no answer expected"}})";
          return reply;
        }
        // The usage a provider would report: its count of what it received.
        Result<Received> got = ReadReceived(shape, req.body, counter);
        Result<std::vector<Message>> engine =
            proxy::ChatToEngine(json::value(*turn.assistant), "answer");
        const int64_t out = engine.ok() ? counter.CountMessage(engine->front()) : 1;
        reply.body = AnswerBody(shape, *turn.assistant, ++turn.n, got.ok() ? got->total : 0, out);
        turn.sent = reply.body;
        turn.assistant.reset();
        return reply;
      }));
  const uint16_t port = FreeLoopbackPort();
  TempDir dir;
  const std::string config =
      "context:\n  log_level: warn\n  models:\n    - {pattern: \"" + std::string(kModel) +
      "\", context_window: " + std::to_string(kWindow) + ", max_output_tokens: " +
      std::to_string(kMaxOutput) +
      ", encoding: o200k_base}\n  proxy:\n    enabled: true\n    listen: 127.0.0.1:" +
      std::to_string(port) + "\n    upstreams:\n      anthropic: " + upstream->Url() +
      "\n      openai: " + upstream->Url("/v1") + "\n";
  DaemonProcess daemon(dir.path(), config);
  Status st = daemon.Start();
  EXPECT_TRUE(st.ok()) << st.ToString() << daemon.log();
  if (!st.ok()) return f;
  UnixHttpConnection agent("tcp:127.0.0.1:" + std::to_string(port));
  agent.set_extra_headers(shape == Shape::kChat
                              ? "Authorization: Bearer sk-replay\r\n"
                              : "x-api-key: sk-replay\r\nanthropic-version: 2023-06-01\r\n");
  const std::string base = file.substr(0, file.find('.'));
  const std::string session = (shape == Shape::kChat ? "chat-" : "anth-") + base;
  const std::string target = "/s/" + session +
                             (shape == Shape::kChat ? "/v1/chat/completions" : "/v1/messages");

  std::string system;
  size_t start = 0;
  if (!lines.empty() && Str(lines[0], "role") == "system") {
    system = Str(lines[0], "content");
    start = 1;
  }
  json::array list;                 // the agent's conversation, in the API's shape
  std::optional<Received> previous;  // the previous upstream request
  std::optional<json::value> previous_system;

  // One turn: the agent sends its list; the upstream answers with `assistant`.
  auto send = [&](const json::object& assistant) -> bool {
    {
      std::lock_guard lock(turn.mu);
      turn.assistant = assistant;
      turn.answered = 0;
    }
    const json::object request = RequestBody(shape, system, list);
    Result<ClientResponse> r =
        agent.Call("POST", target, json::serialize(request), std::chrono::seconds(30));
    std::lock_guard lock(turn.mu);
    const std::string where = file + " request " + std::to_string(f.requests + 1) + " (" +
                              std::to_string(list.size()) + " agent messages)";
    EXPECT_TRUE(r.ok()) << where << ": " << r.status().ToString() << daemon.log();
    if (!r.ok()) return false;
    EXPECT_EQ(r->status, 200) << where << ": " << r->body.substr(0, 2000);
    EXPECT_EQ(turn.answered, 1) << where;
    if (r->status != 200 || turn.answered != 1) return false;
    ++f.requests;
    // 4. The answer, byte for byte.
    EXPECT_EQ(r->body, turn.sent) << where;

    Result<Received> got = ReadReceived(shape, turn.received, counter);
    EXPECT_TRUE(got.ok()) << where << ": " << got.status().ToString();
    if (!got.ok()) return false;
    // 1. It fits, by an independent count.
    EXPECT_LE(got->total, kBudget) << where;
    f.max_sent = std::max(f.max_sent, got->total);
    f.counts.push_back(got->total);
    // 2. Pair-valid, and what else the API checks: a user message first (Anthropic), at
    // most four cache breakpoints (the agent sent none: Chat requests get none).
    EXPECT_EQ(PairProblem(shape, got->messages), "") << where;
    if (shape == Shape::kAnthropic) {
      EXPECT_TRUE(!got->messages.empty() && Role(got->messages[0]) == "user") << where;
      EXPECT_LE(proxy::CountCacheMarkers(got->body), 4) << where;
    } else {
      EXPECT_EQ(proxy::CountCacheMarkers(got->body), 0) << where;
    }
    // 3. The agent's newest messages end it (its last assistant message on).
    const json::array& mine = request.at("messages").as_array();
    size_t from = mine.size();
    while (from > 0 && Role(mine[from - 1]) != "assistant") --from;
    from = from > 0 ? from - 1 : 0;
    const size_t k = mine.size() - from;
    EXPECT_GE(got->messages.size(), k) << where;
    if (got->messages.size() < k) return false;
    const size_t off = got->messages.size() - k;
    for (size_t j = 0; j < k; ++j) {
      const json::value& want = mine[from + j];
      const json::value& sent = got->messages[off + j];
      if (sent == want) continue;
      // Only a tool output cut to fit may differ: the same results, fewer tokens.
      Result<std::vector<Message>> we = shape == Shape::kChat
                                            ? proxy::ChatToEngine(want, "want")
                                            : proxy::AnthropicToEngine(want, "want");
      int64_t want_tokens = 0;
      if (we.ok()) {
        for (const Message& m : *we) want_tokens += counter.CountMessage(m);
      }
      const bool cut = IsToolOutput(shape, want) && IsToolOutput(shape, sent) &&
                       ResultIds(shape, want) == ResultIds(shape, sent) &&
                       got->tokens[off + j] < want_tokens;
      EXPECT_TRUE(cut) << where << ": newest message " << j << " of " << k
                       << " changed:\n  agent: " << json::serialize(want).substr(0, 600)
                       << "\n  sent:  " << json::serialize(sent).substr(0, 600);
      f.cut_tool_outputs += cut;
    }
    // Cache-reusable: the leading run JSON-equal to the previous request's, system first.
    const json::value system_now =
        got->body.contains("system") ? got->body.at("system") : json::value(nullptr);
    f.total += got->total;
    if (previous && *previous_system == system_now) {
      int64_t run = got->system_tokens + got->fixed_tokens;
      size_t same = 0;
      while (same < got->messages.size() && same < previous->messages.size() &&
             got->messages[same] == previous->messages[same]) {
        run += got->tokens[same++];
      }
      f.reusable += run;
      f.breaks += same < previous->messages.size();  // not a pure extension
    } else if (previous) {
      ++f.breaks;  // the system changed: nothing is reusable
    }
    previous = std::move(*got);
    previous_system = system_now;
    // The agent keeps the answer it received.
    list.push_back(AssistantFromAnswer(shape, r->body));
    return !::testing::Test::HasFailure();  // the first failing request stops the replay
  };

  for (size_t i = start; i < lines.size(); ++i) {
    if (Str(lines[i], "role") == "assistant") {
      if (!send(lines[i])) return f;
    } else {
      AgentAdd(shape, list, lines[i]);
    }
  }
  // The trajectory ends with tool outputs or a user message: one more turn sends them.
  const json::object closing{{"role", "assistant"}, {"content", "[replay ended]"}};
  const bool closed = Str(lines.back(), "role") != "assistant";
  if (closed && !send(closing)) return f;

  // The stored session is the trajectory (and the closing answer), in engine form.
  std::vector<Seen> want;
  for (size_t i = start; i < lines.size(); ++i) want.push_back(SeenOf(lines[i]));
  if (closed) want.push_back(SeenOf(closing));
  std::vector<Seen> stored;
  for (int64_t after = 0;;) {
    json::value page = Body(daemon.Call("GET", "/v1/sessions/" + session + "/messages?after=" +
                                                  std::to_string(after) + "&limit=200"));
    if (!page.is_object()) break;
    const json::array& rows = page.at("messages").as_array();
    if (rows.empty()) break;
    for (const json::value& row : rows) stored.push_back(SeenOf(row.as_object()));
    after = rows.back().at("seq").to_number<int64_t>();
  }
  EXPECT_EQ(stored.size(), want.size()) << file;
  for (size_t i = 0; i < std::min(stored.size(), want.size()); ++i) {
    EXPECT_EQ(stored[i], want[i]) << file << " stored message " << i + 1;
    if (!(stored[i] == want[i])) break;
  }
  json::value info = Body(daemon.Call("GET", "/v1/sessions/" + session));
  if (info.is_object()) {
    EXPECT_EQ(Str(info.as_object(), "system_prompt"), system) << file;
  }

  // The audit: one proxy.request per upstream request, each within the budget; nothing
  // diverged (the stored history always matched the agent's). The last request's event
  // is emitted after its answer reached the agent: wait for it (bounded).
  json::value events;
  WaitFor(
      [&] {
        events = Body(daemon.Call("GET", "/v1/audit?type=proxy.request&limit=10000"));
        return events.is_object() &&
               events.at("events").as_array().size() >= static_cast<size_t>(f.requests);
      },
      std::chrono::seconds(5));
  const json::array& list_events = events.at("events").as_array();
  EXPECT_EQ(list_events.size(), static_cast<size_t>(f.requests)) << file;
  for (size_t i = 0; i < list_events.size(); ++i) {
    const json::value& e = list_events[i];
    const json::object& d = e.at("detail").as_object();
    const int64_t sent = d.at("sent_tokens").to_number<int64_t>();
    if (i < f.counts.size()) {
      f.max_count_gap = std::max(f.max_count_gap, std::abs(f.counts[i] - sent));
    }
    EXPECT_EQ(e.at("session_id"), json::value(session));
    EXPECT_EQ(d.at("window").to_number<int64_t>(), kWindow) << file;
    EXPECT_LE(sent, kBudget) << file << " event " << e.at("seq");
    EXPECT_EQ(d.at("answer"), "complete") << file << " event " << e.at("seq");
    f.max_audit_sent = std::max(f.max_audit_sent, sent);
    f.with_summaries += d.at("summaries").to_number<int64_t>() > 0;
    f.with_drops += d.at("dropped").to_number<int64_t>() > 0;
  }
  json::value diverged =
      Body(daemon.Call("GET", "/v1/audit?type=proxy.history_diverged&limit=100"));
  EXPECT_TRUE(diverged.at("events").as_array().empty()) << file << ": " << json::serialize(diverged);
  f.summaries_done =
      Body(daemon.Call("GET", "/v1/audit?type=summarization.completed&limit=10000"))
          .at("events")
          .as_array()
          .size();
  EXPECT_EQ(daemon.Stop(), 0) << daemon.log();
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return f;
}

void ProxyReplayTest::RunAll(Shape shape) {
  const char* api = shape == Shape::kChat ? "chat" : "anthropic";
  int64_t reusable = 0, total = 0;
  int requests = 0;
  for (const char* file : kFiles) {
    SCOPED_TRACE(file);
    const Figures f = Replay(shape, file);
    if (::testing::Test::HasFailure()) return;
    reusable += f.reusable;
    total += f.total;
    requests += f.requests;
    std::printf(
        "[ proxy    ] %s %-34s %3d requests: max sent %5lld tokens (audit %5lld, largest gap "
        "%lld) of %lld; %3d with summaries, %2d with drops, %2zu summaries written, %d newest "
        "tool outputs cut; prefix broken in %2d; cache-reusable %4.1f%% of %lld tokens; %.1f s\n",
        api, file, f.requests, static_cast<long long>(f.max_sent),
        static_cast<long long>(f.max_audit_sent), static_cast<long long>(f.max_count_gap),
        static_cast<long long>(kBudget), f.with_summaries, f.with_drops, f.summaries_done,
        f.cut_tool_outputs, f.breaks,
        100.0 * static_cast<double>(f.reusable) / static_cast<double>(std::max<int64_t>(1, f.total)),
        static_cast<long long>(f.total), f.seconds);
    // The short sessions are dominated by their first request (nothing to reuse) and by
    // growth; the long ones by evictions (see below).
    EXPECT_GE(f.reusable * 100, f.total * 75) << file;
  }
  const double share =
      100.0 * static_cast<double>(reusable) / static_cast<double>(std::max<int64_t>(1, total));
  std::printf("[ proxy    ] %s: %d requests, cache-reusable %.1f%% of %lld tokens sent\n", api,
              requests, share, static_cast<long long>(total));
  EXPECT_GT(requests, 500);
  // The issue's target is 90%. Measured here: 95.8% in both shapes (marot__spotter-1
  // 94.7%: 9 breaks in 217 requests, at its evictions). At a 16k window the same replay
  // gives 89.1-89.9%: the long sessions evict every ten or so requests there, and each
  // eviction re-sends everything after the pinned task and the summaries. Some breaks
  // come on top of the evictions: a summary sent whole in one request and "shortened for
  // room" in the next, and the one cache breakpoint moving from the older summaries to a
  // new one (the older message then differs by its cache_control).
  EXPECT_GE(share, 93.0);
}

TEST_F(ProxyReplayTest, AnthropicShape) { RunAll(Shape::kAnthropic); }

TEST_F(ProxyReplayTest, ChatShape) { RunAll(Shape::kChat); }

}  // namespace
}  // namespace missy::testing
