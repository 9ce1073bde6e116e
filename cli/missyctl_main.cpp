// missyctl: command-line client of missyd over its Unix sockets.
#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cli/http_client.h"
#include "config/config.h"
#include "config/tokenizers.h"

namespace {

namespace json = boost::json;
using missy::ClientResponse;
using missy::Result;

constexpr const char* kUsage =
    "usage: missyctl [--socket PATH] [--audit-socket PATH] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  health                      daemon status\n"
    "  sessions [--limit N]        list sessions\n"
    "  session ID                  one session\n"
    "  messages ID [--after SEQ]   stored messages of a session\n"
    "  context ID [--message TEXT] [--window N]\n"
    "                              assemble a context (prints the budget report)\n"
    "  config                      effective configuration (secrets redacted)\n"
    "  memory add TEXT [--tag T]... [--session ID]\n"
    "  memory list | memory search TEXT | memory delete ID\n"
    "  learnings add LESSON [--task-type T] [--outcome O] | learnings list\n"
    "  jobs [--state queued|running|done|failed]\n"
    "  import-missy [PATH]         import Missy's memory.db (default $MISSY_HOME/memory.db)\n"
    "  tokens count [--encoding E] [FILE|-]\n"
    "                              count tokens offline (o200k_base, cl100k_base, heuristic)\n"
    "  audit verify                check the audit log's hash chain\n"
    "  audit list [--since SEQ] [--type T] [--limit N]\n"
    "  audit tail [--since SEQ] [--type T]...\n"
    "                              follow the audit stream (Ctrl-C to stop)\n"
    "\n"
    "Sockets default to $MISSY_HOME/missyd.sock and $MISSY_HOME/audit.sock\n"
    "(MISSY_HOME defaults to ~/.missy).\n";

void Indent(std::string& out, int depth) { out.append(static_cast<size_t>(depth) * 2, ' '); }

void Pretty(const json::value& v, std::string& out, int depth) {
  if (v.is_object()) {
    const json::object& o = v.get_object();
    if (o.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    size_t i = 0;
    for (const auto& kv : o) {
      Indent(out, depth + 1);
      out += json::serialize(json::string(kv.key()));
      out += ": ";
      Pretty(kv.value(), out, depth + 1);
      out += ++i < o.size() ? ",\n" : "\n";
    }
    Indent(out, depth);
    out += "}";
  } else if (v.is_array()) {
    const json::array& a = v.get_array();
    if (a.empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    for (size_t i = 0; i < a.size(); ++i) {
      Indent(out, depth + 1);
      Pretty(a[i], out, depth + 1);
      out += i + 1 < a.size() ? ",\n" : "\n";
    }
    Indent(out, depth);
    out += "]";
  } else {
    out += json::serialize(v);
  }
}

void PrintJson(const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) {
    std::fputs(body.c_str(), stdout);
    return;
  }
  std::string out;
  Pretty(v, out, 0);
  std::printf("%s\n", out.c_str());
}

// Prints an API error to stderr and returns the exit code for it.
int ReportError(const Result<ClientResponse>& r, const std::string& socket) {
  if (!r.ok()) {
    std::fprintf(stderr, "missyctl: cannot reach missyd at %s: %s\n", socket.c_str(),
                 r.status().message().c_str());
    return 3;
  }
  boost::system::error_code ec;
  json::value v = json::parse(r->body, ec);
  if (!ec && v.is_object() && v.get_object().contains("error")) {
    const json::object& e = v.at("error").get_object();
    std::string field = e.contains("field") ? std::string(e.at("field").as_string()) : "";
    std::fprintf(stderr, "missyctl: %d %s: %s%s%s\n", r->status,
                 std::string(e.at("code").as_string()).c_str(),
                 field.empty() ? "" : (field + ": ").c_str(),
                 std::string(e.at("message").as_string()).c_str(), "");
  } else {
    std::fprintf(stderr, "missyctl: HTTP %d: %s\n", r->status, r->body.c_str());
  }
  return 1;
}

struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;
  std::string Get(const std::string& key, std::string fallback = {}) const {
    auto it = options.find(key);
    return it == options.end() ? fallback : it->second;
  }
};

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

int Call(const std::string& socket, const std::string& method, const std::string& target,
         const std::string& body, const std::function<void(const json::value&)>& print) {
  Result<ClientResponse> r = missy::UnixHttpCall(socket, method, target, body);
  if (!r.ok() || r->status >= 300) return ReportError(r, socket);
  boost::system::error_code ec;
  json::value v = json::parse(r->body, ec);
  if (ec) {
    std::fprintf(stderr, "missyctl: daemon answered with invalid JSON\n");
    return 1;
  }
  print(v);
  return 0;
}

int AuditTail(const std::string& audit_socket, const Args& args) {
  json::object first;
  if (!args.Get("--since").empty()) first["since"] = std::atoll(args.Get("--since").c_str());
  json::array types;
  auto range = args.options.equal_range("--type");
  for (auto it = range.first; it != range.second; ++it) types.push_back(json::string(it->second));
  if (!types.empty()) first["types"] = std::move(types);
  missy::LineSubscriber sub;
  missy::Status st = sub.Connect(audit_socket, json::serialize(first));
  if (!st.ok()) {
    std::fprintf(stderr, "missyctl: cannot reach the audit socket %s: %s\n", audit_socket.c_str(),
                 st.message().c_str());
    return 3;
  }
  for (;;) {
    Result<std::string> line = sub.ReadLine(std::chrono::hours(24));
    if (!line.ok()) {
      if (sub.timed_out()) continue;
      std::fprintf(stderr, "missyctl: audit stream closed\n");
      return sub.eof() ? 0 : 1;
    }
    std::printf("%s\n", line->c_str());
    std::fflush(stdout);
  }
}

int TokensCount(const Args& args) {
  const std::string encoding = args.Get("--encoding", "o200k_base");
  std::string text;
  const std::string file = args.positional.size() >= 3 ? args.positional[2] : "-";
  std::FILE* in = file == "-" ? stdin : std::fopen(file.c_str(), "rb");
  if (in == nullptr) {
    std::fprintf(stderr, "missyctl: cannot read %s\n", file.c_str());
    return 1;
  }
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) text.append(buf, n);
  if (in != stdin) std::fclose(in);
  missy::TokenizerRegistry registry(args.Get("--data-dir"));
  Result<std::shared_ptr<const missy::TokenCounter>> counter = registry.Get(encoding);
  if (!counter.ok()) {
    std::fprintf(stderr, "missyctl: %s\n", counter.status().message().c_str());
    return 1;
  }
  std::printf("%lld\n", static_cast<long long>((*counter)->Count(text)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string home = missy::ResolveMissyHome();
  std::string socket = home + "/missyd.sock";
  std::string audit_socket = home + "/audit.sock";
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help" || a == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a.rfind("--", 0) == 0) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missyctl: %s needs a value\n\n%s", a.c_str(), kUsage);
        return 2;
      }
      if (a == "--socket") {
        socket = argv[++i];
      } else if (a == "--audit-socket") {
        audit_socket = argv[++i];
      } else {
        args.options.emplace(a, argv[++i]);
      }
    } else {
      args.positional.push_back(a);
    }
  }
  if (args.positional.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string& cmd = args.positional[0];
  auto need_id = [&]() -> bool {
    if (args.positional.size() >= 2) return true;
    std::fprintf(stderr, "missyctl: %s needs a session id\n", cmd.c_str());
    return false;
  };

  if (cmd == "health") {
    return Call(socket, "GET", "/v1/health", "", [](const json::value& v) {
      std::printf("%s: missyd %s, up %.1f s, schema v%lld\n",
                  std::string(v.at("status").as_string()).c_str(),
                  std::string(v.at("version").as_string()).c_str(),
                  static_cast<double>(v.at("uptime_ms").to_number<int64_t>()) / 1000.0,
                  static_cast<long long>(v.at("schema_version").to_number<int64_t>()));
    });
  }
  if (cmd == "sessions") {
    return Call(socket, "GET", "/v1/sessions?limit=" + args.Get("--limit", "100"), "",
                [](const json::value& v) {
                  const json::array& list = v.at("sessions").as_array();
                  std::printf("%-36s %-24s %9s %10s  %s\n", "ID", "MODEL", "MESSAGES", "TOKENS",
                              "UPDATED");
                  for (const json::value& s : list) {
                    std::printf("%-36s %-24s %9lld %10lld  %s\n",
                                std::string(s.at("id").as_string()).c_str(),
                                std::string(s.at("model").as_string()).c_str(),
                                static_cast<long long>(s.at("message_count").to_number<int64_t>()),
                                static_cast<long long>(s.at("total_tokens").to_number<int64_t>()),
                                std::string(s.at("updated_at").as_string()).c_str());
                  }
                  if (list.empty()) std::printf("(no sessions)\n");
                });
  }
  auto print_json = [](const json::value& v) { PrintJson(json::serialize(v)); };
  if (cmd == "session") {
    if (!need_id()) return 2;
    return Call(socket, "GET", "/v1/sessions/" + UrlEncode(args.positional[1]), "", print_json);
  }
  if (cmd == "messages") {
    if (!need_id()) return 2;
    return Call(socket, "GET",
                "/v1/sessions/" + UrlEncode(args.positional[1]) +
                    "/messages?after=" + args.Get("--after", "0"),
                "", print_json);
  }
  if (cmd == "context") {
    if (!need_id()) return 2;
    json::object body;
    if (!args.Get("--message").empty()) {
      body["message"] = json::object{{"role", "user"}, {"content", args.Get("--message")}};
    }
    if (!args.Get("--window").empty())
      body["context_window"] = std::atoll(args.Get("--window").c_str());
    return Call(socket, "POST", "/v1/sessions/" + UrlEncode(args.positional[1]) + "/context",
                json::serialize(body), [](const json::value& v) {
                  std::printf("context %s: %zu messages\n",
                              std::string(v.at("context_id").as_string()).c_str(),
                              v.at("messages").as_array().size());
                  PrintJson(json::serialize(v.at("budget")));
                });
  }
  if (cmd == "config") return Call(socket, "GET", "/v1/config", "", print_json);
  if (cmd == "tokens") {
    if (args.positional.size() < 2 || args.positional[1] != "count") {
      std::fprintf(stderr, "missyctl: usage: missyctl tokens count [--encoding E] [FILE|-]\n");
      return 2;
    }
    return TokensCount(args);
  }
  if (cmd == "import-missy") {
    json::object body;
    if (args.positional.size() >= 2) body["path"] = args.positional[1];
    return Call(socket, "POST", "/v1/import/missy", json::serialize(body),
                [](const json::value& v) {
                  std::printf(
                      "imported from %s: %lld sessions, %lld messages, %lld summaries, %lld "
                      "learnings (%lld already present)\n",
                      std::string(v.at("path").as_string()).c_str(),
                      static_cast<long long>(v.at("sessions").to_number<int64_t>()),
                      static_cast<long long>(v.at("messages").to_number<int64_t>()),
                      static_cast<long long>(v.at("summaries").to_number<int64_t>()),
                      static_cast<long long>(v.at("learnings").to_number<int64_t>()),
                      static_cast<long long>(v.at("skipped").to_number<int64_t>()));
                });
  }
  if (cmd == "jobs") {
    std::string target = "/v1/jobs";
    if (!args.Get("--state").empty()) target += "?state=" + UrlEncode(args.Get("--state"));
    return Call(socket, "GET", target, "", print_json);
  }
  if (cmd == "memory" || cmd == "learnings") {
    const std::string sub = args.positional.size() >= 2 ? args.positional[1] : "list";
    const std::string arg = args.positional.size() >= 3 ? args.positional[2] : "";
    if (sub == "list") return Call(socket, "GET", "/v1/" + cmd, "", print_json);
    if (cmd == "memory" && sub == "search" && !arg.empty()) {
      return Call(socket, "GET", "/v1/memory/search?q=" + UrlEncode(arg), "", print_json);
    }
    if (cmd == "memory" && sub == "delete" && !arg.empty()) {
      return Call(socket, "DELETE", "/v1/memory/" + UrlEncode(arg), "", print_json);
    }
    if (sub == "add" && !arg.empty()) {
      json::object body;
      if (cmd == "memory") {
        body["text"] = arg;
        json::array tags;
        auto range = args.options.equal_range("--tag");
        for (auto it = range.first; it != range.second; ++it)
          tags.push_back(json::string(it->second));
        body["tags"] = std::move(tags);
        if (!args.Get("--session").empty()) body["session_id"] = args.Get("--session");
      } else {
        body["lesson"] = arg;
        body["task_type"] = args.Get("--task-type");
        body["outcome"] = args.Get("--outcome");
      }
      return Call(socket, "POST", "/v1/" + cmd, json::serialize(body), print_json);
    }
    std::fprintf(stderr, "missyctl: usage: see missyctl --help (%s)\n", cmd.c_str());
    return 2;
  }
  if (cmd == "audit") {
    const std::string sub = args.positional.size() >= 2 ? args.positional[1] : "";
    if (sub == "tail") return AuditTail(audit_socket, args);
    if (sub == "verify") {
      int verdict = 0;
      int rc = Call(socket, "GET", "/v1/audit/verify", "", [&verdict](const json::value& v) {
        if (v.at("ok").as_bool()) {
          std::printf("audit chain ok: %lld events (seq %lld..%lld)\n",
                      static_cast<long long>(v.at("checked").to_number<int64_t>()),
                      static_cast<long long>(v.at("first_seq").to_number<int64_t>()),
                      static_cast<long long>(v.at("last_seq").to_number<int64_t>()));
        } else {
          std::printf("audit chain BROKEN at seq %lld: %s\n",
                      static_cast<long long>(v.at("broken_seq").to_number<int64_t>()),
                      std::string(v.at("reason").as_string()).c_str());
          verdict = 4;
        }
      });
      return rc != 0 ? rc : verdict;
    }
    if (sub == "list") {
      std::string target =
          "/v1/audit?since=" + args.Get("--since", "0") + "&limit=" + args.Get("--limit", "100");
      if (!args.Get("--type").empty()) target += "&type=" + UrlEncode(args.Get("--type"));
      return Call(socket, "GET", target, "", [](const json::value& v) {
        for (const json::value& e : v.at("events").as_array()) {
          std::printf("%s\n", json::serialize(e).c_str());
        }
      });
    }
    std::fprintf(stderr, "missyctl: audit needs 'tail', 'list' or 'verify'\n");
    return 2;
  }
  std::fprintf(stderr, "missyctl: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
  return 2;
}
