// proxy_bench's agent side: the Anthropic-shaped conversation built from the recorded
// trajectories (tool loops, a Claude-Code-sized system prompt and tool list), and one
// request sent and timed over HTTP (head, first SSE bytes, last data bytes, end).
// Header-only: every bench/*_bench.cpp is its own executable.
#pragma once

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/http_client.h"
#include "trajectory_files.h"

namespace missy::bench::proxy {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

inline constexpr auto kCallTimeout = std::chrono::seconds(120);

inline double Ms(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// ---------------------------------------------------------------------------------------
// The conversation, from the trajectories: every assistant message with tool calls becomes
// an Anthropic assistant message (its text, a tool_use per call) followed by a user message
// of its tool_results (the recorded outputs, whole).

struct Material {
  std::vector<std::pair<json::object, json::object>> loops;  // assistant, user; ids to fill
  std::vector<std::string> outputs;                          // tool outputs, for new turns
  std::string task;                                          // a first user message
  std::string prose;                                         // text for prompts, tools, answers
};

inline Material LoadMaterial() {
  Material m;
  for (const auto& file : missy::bench::TrajectoryFiles()) {
    std::vector<json::object> lines;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      if (!ec && v.is_object()) lines.push_back(std::move(v.get_object()));
    }
    for (size_t i = 0; i < lines.size(); ++i) {
      const json::object& o = lines[i];
      const auto text = [&](const json::object& x) -> std::string {
        const json::value* c = x.if_contains("content");
        return c != nullptr && c->is_string() ? std::string(c->get_string()) : std::string();
      };
      const std::string role = o.contains("role") && o.at("role").is_string()
                                   ? std::string(o.at("role").get_string())
                                   : "";
      if (role == "system" || role == "user") {
        m.prose += text(o) + "\n";
        if (role == "user" && m.task.empty()) m.task = text(o);
      }
      if (role == "tool") m.outputs.push_back(text(o).empty() ? "(no output)" : text(o));
      const json::value* calls = o.if_contains("tool_calls");
      if (role != "assistant" || calls == nullptr || !calls->is_array() ||
          calls->get_array().empty()) {
        continue;
      }
      json::array blocks;
      if (!text(o).empty()) {
        blocks.push_back(json::object{{"type", "text"}, {"text", text(o)}});
        m.prose += text(o) + "\n";
      }
      json::array results;
      for (const json::value& call : calls->get_array()) {
        const json::object& fn = call.at("function").as_object();
        const std::string args = fn.contains("arguments") && fn.at("arguments").is_string()
                                     ? std::string(fn.at("arguments").get_string())
                                     : "{}";
        boost::system::error_code ec;
        json::value input = json::parse(args, ec);
        if (ec || !input.is_object()) input = json::object{{"input", args}};
        const std::string id(call.at("id").as_string());
        blocks.push_back(json::object{{"type", "tool_use"},
                                      {"id", ""},
                                      {"name", fn.at("name").as_string()},
                                      {"input", input}});
        std::string output = "(no output)";
        for (size_t j = i + 1; j < lines.size(); ++j) {
          const json::value* tid = lines[j].if_contains("tool_call_id");
          if (tid != nullptr && tid->is_string() && tid->get_string() == id) {
            if (!text(lines[j]).empty()) output = text(lines[j]);
            break;
          }
        }
        results.push_back(
            json::object{{"type", "tool_result"}, {"tool_use_id", ""}, {"content", output}});
      }
      m.loops.emplace_back(json::object{{"role", "assistant"}, {"content", std::move(blocks)}},
                           json::object{{"role", "user"}, {"content", std::move(results)}});
    }
  }
  return m;
}

// The i-th tool loop of the history, its ids made unique.
inline std::pair<json::object, json::object> Loop(const Material& m, size_t i) {
  auto [assistant, user] = m.loops[i % m.loops.size()];
  size_t k = 0;
  for (json::value& b : assistant["content"].as_array()) {
    if (b.at("type") != "tool_use") continue;
    b.as_object()["id"] = "toolu_bench_h" + std::to_string(i) + "_" + std::to_string(k++);
  }
  k = 0;
  for (json::value& b : user["content"].as_array()) {
    b.as_object()["tool_use_id"] = "toolu_bench_h" + std::to_string(i) + "_" + std::to_string(k++);
  }
  return {assistant, user};
}

// A system prompt and tool list of Claude Code's size (about 20k tokens in all).
inline json::array SystemBlocks(const std::string& prose) {
  std::string body;
  while (body.size() < 16000) body += prose.substr(0, std::min<size_t>(prose.size(), 16000));
  body.resize(16000);
  return json::array{
      json::object{{"type", "text"},
                   {"text", "You are Claude Code, Anthropic's official CLI for Claude."}},
      json::object{{"type", "text"},
                   {"text", body},
                   {"cache_control", json::object{{"type", "ephemeral"}}}}};
}

inline json::array Tools(const std::string& prose) {
  json::array tools;
  const char* const names[] = {"Bash",      "Read",         "Edit",         "Write",
                               "Glob",      "Grep",         "Task",         "TodoWrite",
                               "WebFetch",  "WebSearch",    "NotebookEdit", "BashOutput",
                               "KillShell", "ExitPlanMode", "SlashCommand", "ListMcpResources"};
  size_t at = 0;
  for (const char* name : names) {
    std::string description;
    while (description.size() < 4000) {
      if (at >= prose.size()) at = 0;
      const size_t n = std::min<size_t>(prose.size() - at, 4000 - description.size());
      description += prose.substr(at, n);
      at += n;
    }
    json::object schema{
        {"type", "object"},
        {"properties",
         json::object{
             {"command", json::object{{"type", "string"}, {"description", "The command to run"}}},
             {"path", json::object{{"type", "string"}, {"description", "An absolute path"}}},
             {"timeout",
              json::object{{"type", "number"}, {"description", "Milliseconds, at most 600000"}}}}},
        {"required", json::array{"command"}},
        {"additionalProperties", false},
        {"$schema", "http://json-schema.org/draft-07/schema#"}};
    tools.push_back(json::object{
        {"name", name}, {"description", description}, {"input_schema", std::move(schema)}});
  }
  return tools;
}

// ---------------------------------------------------------------------------------------
// The agent's side: one request, timed.

struct Timed {
  bool ok = false;
  int status = 0;
  std::string error;
  double head_ms = 0;       // status line and headers read
  double first_ms = 0;      // first body bytes (the first SSE event) read
  double last_data_ms = 0;  // last body bytes read
  // The piece before the last one: through the proxy, the last piece holds the stream's
  // end, which waits until the answer is stored (a durable commit).
  double before_last_ms = 0;
  size_t last_piece_bytes = 0;
  size_t first_piece_bytes = 0;  // read at first_ms (a chunk is read whole)
  double end_ms = 0;        // the body's end (the last chunk)
  std::string body;
};

inline const std::string kAgentHeaders =
    "x-api-key: sk-ant-bench\r\nanthropic-version: 2023-06-01\r\n"
    "anthropic-beta: claude-code-20250219,interleaved-thinking-2025-05-14,"
    "fine-grained-tool-streaming-2025-05-14\r\nx-stainless-lang: js\r\n"
    "Accept: application/json\r\n";

inline Timed Send(missy::UnixHttpConnection& conn, const std::string& target,
                  const std::string& body, const std::string& extra_headers) {
  Timed t;
  conn.set_extra_headers(kAgentHeaders + extra_headers);
  const auto t0 = Clock::now();
  missy::Result<missy::ClientResponse> head = conn.Start("POST", target, body, kCallTimeout);
  if (!head.ok()) {
    t.error = head.status().ToString();
    return t;
  }
  t.head_ms = Ms(t0, Clock::now());
  t.status = head->status;
  bool first = true;
  for (;;) {
    missy::Result<std::optional<std::string>> piece = conn.ReadBodyChunk(kCallTimeout);
    if (!piece.ok()) {
      t.error = piece.status().ToString();
      return t;
    }
    const auto now = Clock::now();
    if (!piece->has_value()) {
      t.end_ms = Ms(t0, now);
      break;
    }
    if ((*piece)->empty()) continue;
    if (first) {
      t.first_ms = Ms(t0, now);
      t.first_piece_bytes = (*piece)->size();
    }
    first = false;
    t.before_last_ms = t.last_data_ms;
    t.last_data_ms = Ms(t0, now);
    t.last_piece_bytes = (*piece)->size();
    t.body += **piece;
  }
  if (head->status != 200) {
    t.error = "status " + std::to_string(head->status) + ": " + t.body.substr(0, 500);
    return t;
  }
  t.ok = true;
  return t;
}

// An answer without the figures the fake derives from the request's size (the usage in
// message_start): what must reach the agent unchanged.
inline std::string WithoutInputTokens(std::string body) {
  const std::string key = "\"input_tokens\":";
  for (size_t at = body.find(key); at != std::string::npos; at = body.find(key, at + 1)) {
    size_t end = at + key.size();
    while (end < body.size() && std::isdigit(static_cast<unsigned char>(body[end]))) ++end;
    body.erase(at + key.size(), end - at - key.size());
  }
  return body;
}

}  // namespace missy::bench::proxy
