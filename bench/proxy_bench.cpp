// Proxy mode (issue 28): what missyd's proxy adds to an agent's request, against calling
// the upstream directly. A real missyd with its proxy listener on loopback TCP, and a
// fake Anthropic upstream of the bench's own (proxy_bench_upstream.h: plain POSIX sockets
// on 127.0.0.1, answering at once, writing its SSE streams piece by piece as a provider
// does; the tests' FakeProviderServer sends each body whole, which would make the relay's
// throughput meaningless). The agent's side (the conversation, the timed requests) is in
// proxy_bench_agent.h; this file runs the daemon, measures and prints the tables.
//
// 1. Added latency. The bench is the agent: an Anthropic-shaped conversation of 10,001
//    messages (the user's task, then 5,000 tool loops: an assistant text + tool_use, a
//    user tool_result, built from the real trajectories in ../shared/data/trajectories,
//    sizes as recorded), with a Claude-Code-sized system prompt and tool list (about 90 KB,
//    ~20k tokens), model claude-sonnet-4-5 (a 200,000-token window in the model table:
//    the context is assembled from the last few hundred messages plus summaries), max_tokens
//    32,000, stream: true, the cache marker on the last block as Claude Code puts it. The
//    whole list is sent each turn; each turn appends the answer the upstream streamed (a
//    text block and a tool_use) and a new tool_result, as an agent does. Every turn is
//    sent twice, straight to the fake upstream and through the proxy (alternating which
//    goes first), and the time to first byte (the request's first byte sent to the
//    answer's first SSE bytes received) is taken for each. The first request through the
//    proxy stores the 10,001 messages: reported on its own line (until aaef552 the proxy
//    refused it with a 500, its one append capped at 10,000 engine messages; a refusal
//    fails the bench, and so does a first request not taken whole as new messages).
//    Background summarization is then let finish, a few warm-up turns go unmeasured, and
//    the measured turns follow with a short pause between requests (an agent runs its tool
//    meanwhile).
// 2. Relay throughput: a 1 MB streamed answer (SSE text deltas of ~40 characters, written
//    by the fake in 16 KB pieces), direct and through the proxy (a new one-message
//    conversation each run), MB/s from the answer's first byte to its last data byte, and
//    from its first byte to the end of the stream (the proxy ends it once the request is
//    stored); the time to the first byte is printed beside them (a new conversation's
//    first request stores the session before it goes upstream). The fake starts this
//    answer --large-delay-ms (30) after the request, as a provider starts after thinking
//    (hundreds of ms): the daemon stores the request while the upstream works, and a fake
//    that streamed 1 MB at once ran the whole stream beside that commit, on 2 cores, which
//    no agent's stream does (0 gives the old measure).
//
// Targets (issue 28): p50 added <= 5 ms; relay throughput within 10% of direct.
// Bounded: every call has a 120 s timeout, the whole run a deadline (--deadline-s, 1200 s)
// past which the daemon is killed and its home removed; SIGINT, SIGTERM and SIGHUP do the
// same, a crash kills it. Exit status 1 on any error (the first request refused included),
// not on a missed target.
// Usage: proxy_bench PATH_TO_MISSYD [--messages N] [--turns N] [--warmup N]
//                    [--pause-ms N] [--relay-runs N] [--large-delay-ms N] [--deadline-s N]
// MISSY_BENCH_KEEP_HOME=1 keeps the daemon's home (its audit log has every proxy.request).
// MISSY_BENCH_PROFILE_PAUSE=N waits N seconds before the measured turns and prints the
// daemon's pid (to attach `perf record -p PID`).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "bench_daemon.h"
#include "cli/http_client.h"
#include "proxy_bench_agent.h"     // the conversation, the timed requests
#include "proxy_bench_upstream.h"  // the fake upstream, its answers

namespace json = boost::json;
using namespace std::chrono_literals;
using namespace missy::bench::proxy;

namespace {

constexpr double kTargetAddedMs = 5.0;
constexpr double kTargetRatio = 0.90;
constexpr int64_t kMaxTokens = 32000;

std::atomic<pid_t> g_daemon_pid{-1};
std::mutex g_home_mu;
std::string g_daemon_home;  // set once the daemon started (under g_home_mu)

// The watchdog's way out (a deadline, SIGINT, SIGTERM, SIGHUP): the daemon must not outlive
// the bench. Kills it, waits for it, removes its home.
[[noreturn]] void KillDaemonAndExit(int code) {
  const pid_t pid = g_daemon_pid.load();
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    std::lock_guard<std::mutex> lock(g_home_mu);
    std::error_code ec;
    if (!g_daemon_home.empty() && getenv("MISSY_BENCH_KEEP_HOME") == nullptr) {
      std::filesystem::remove_all(g_daemon_home, ec);
    }
  }
  _exit(code);
}

// A crash: only what is safe in a signal handler (the home stays).
void OnCrash(int sig) {
  static const char kMsg[] = "proxy_bench: crashed; the daemon is killed\n";
  (void)!write(2, kMsg, sizeof kMsg - 1);
  const pid_t pid = g_daemon_pid.load();
  if (pid > 0) kill(pid, SIGKILL);
  _exit(128 + sig);
}

uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}
double P(const std::vector<double>& v, double p) { return missy::bench::Percentile(v, p); }

std::string Config(uint16_t proxy_port, const std::string& upstream) {
  return "context:\n  proxy:\n    enabled: true\n    listen: 127.0.0.1:" +
         std::to_string(proxy_port) + "\n    upstreams:\n      anthropic: " + upstream +
         "\n      openai: " + upstream + "/v1\n";
}

// The proxy.request events' detail objects, oldest first.
std::vector<json::object> ProxyEvents(missy::UnixHttpConnection& api) {
  std::vector<json::object> out;
  auto r = api.Call("GET", "/v1/audit?type=proxy.request&limit=10000", "", 60s);
  if (!r.ok() || r->status != 200) return out;
  const json::value v = json::parse(r->body);
  for (const json::value& e : v.at("events").as_array()) {
    out.push_back(e.at("detail").as_object());
  }
  return out;
}

int64_t Int(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_number() ? v->to_number<int64_t>() : -1;
}

struct Options {
  size_t messages = 10000;
  int turns = 100;
  int warmup = 5;
  int pause_ms = 50;
  int relay_runs = 30;
  int large_delay_ms = 30;
  int deadline_s = 1200;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s PATH_TO_MISSYD [--messages N] [--turns N] [--warmup N] "
                 "[--pause-ms N] [--relay-runs N] [--large-delay-ms N] [--deadline-s N]\n",
                 argv[0]);
    return 2;
  }
  Options opt;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--messages")
      opt.messages = static_cast<size_t>(value);
    else if (flag == "--turns")
      opt.turns = static_cast<int>(value);
    else if (flag == "--warmup")
      opt.warmup = static_cast<int>(value);
    else if (flag == "--pause-ms")
      opt.pause_ms = static_cast<int>(value);
    else if (flag == "--relay-runs")
      opt.relay_runs = static_cast<int>(value);
    else if (flag == "--large-delay-ms")
      opt.large_delay_ms = static_cast<int>(value);
    else if (flag == "--deadline-s")
      opt.deadline_s = static_cast<int>(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  // The whole run is bounded: past the deadline, or on SIGINT/SIGTERM/SIGHUP, the watchdog
  // thread kills the daemon, removes its home and exits. Those signals are blocked in every
  // thread (this one's mask is inherited) and taken by the watchdog with sigtimedwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, sig);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // ... but not in the daemon: a mask survives fork and exec.
  pthread_atfork(nullptr, nullptr, [] {
    sigset_t all;
    sigemptyset(&all);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&all, sig);
    sigprocmask(SIG_UNBLOCK, &all, nullptr);
  });
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS}) signal(sig, OnCrash);
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    const auto deadline = Clock::now() + std::chrono::seconds(opt.deadline_s);
    while (!finished) {
      timespec tick{0, 200000000};
      const int sig = sigtimedwait(&stop_signals, nullptr, &tick);
      if (sig > 0) {
        std::fprintf(stderr, "proxy_bench: %s; stopping the daemon\n", strsignal(sig));
        KillDaemonAndExit(128 + sig);
      }
      if (Clock::now() > deadline) {
        std::fprintf(stderr, "proxy_bench: over its %d s deadline; stopping the daemon\n",
                     opt.deadline_s);
        KillDaemonAndExit(3);
      }
    }
  });
  struct StopWatchdog {
    std::atomic<bool>& finished;
    std::thread& t;
    ~StopWatchdog() {
      finished = true;
      t.join();
    }
  } stop_watchdog{finished, watchdog};

  const Material material = LoadMaterial();
  if (material.loops.empty() || material.outputs.empty()) {
    std::fprintf(stderr, "no trajectories under %s/../shared/data/trajectories\n",
                 MISSY_SOURCE_DIR);
    return 1;
  }
  const std::string large = LargeStream(material.prose);
  StreamingUpstream upstream(large, std::chrono::milliseconds(opt.large_delay_ms));
  const uint16_t proxy_port = FreePort();
  missy::bench::BenchDaemon daemon;
  const bool started = daemon.Start(argv[1], Config(proxy_port, upstream.Url()), "/var/tmp");
  {
    std::lock_guard<std::mutex> lock(g_home_mu);
    g_daemon_home = daemon.home();
  }
  g_daemon_pid = daemon.pid();
  if (!started) return 1;
  missy::UnixHttpConnection api;
  if (missy::Status st = api.Connect(daemon.socket()); !st.ok()) {
    std::fprintf(stderr, "connect: %s\n", st.ToString().c_str());
    return 1;
  }
  const std::string proxy_addr = "tcp:127.0.0.1:" + std::to_string(proxy_port);
  const std::string direct_addr = "tcp:127.0.0.1:" + std::to_string(upstream.port());
  missy::UnixHttpConnection via_proxy(proxy_addr);
  missy::UnixHttpConnection direct(direct_addr);

  // ---- 1. Added latency on a 10,000-message conversation --------------------------------
  json::object request{{"model", kModel},
                       {"max_tokens", kMaxTokens},
                       {"system", SystemBlocks(material.prose)},
                       {"tools", Tools(material.prose)},
                       {"metadata", json::object{{"user_id", "user_bench_account__session_bench"}}},
                       {"thinking", json::object{{"type", "enabled"}, {"budget_tokens", 16000}}},
                       {"stream", true},
                       {"messages", json::array{}}};
  json::array& messages = request["messages"].as_array();
  messages.push_back(json::object{
      {"role", "user"},
      {"content", json::array{json::object{{"type", "text"},
                                           {"text",
                                            "<system-reminder>\nThe working directory "
                                            "is /work/project.\n</system-reminder>"}},
                              json::object{{"type", "text"}, {"text", material.task}}}}});
  for (size_t i = 0; messages.size() < opt.messages; ++i) {
    auto [assistant, user] = Loop(material, i);
    messages.push_back(std::move(assistant));
    messages.push_back(std::move(user));
  }
  const size_t initial = messages.size();
  // Claude Code marks the last block of the last message for the prompt cache, and moves the
  // marker each turn (which missyd does not count as a change).
  const auto mark_last = [&](bool on) {
    json::array& blocks = messages.back().as_object()["content"].as_array();
    if (on) {
      blocks.back().as_object()["cache_control"] = json::object{{"type", "ephemeral"}};
    } else {
      blocks.back().as_object().erase("cache_control");
    }
  };
  const std::string proxy_target = "/s/bench-latency/v1/messages?beta=true";
  const std::string direct_target = "/v1/messages?beta=true";
  const auto turn_header = [](int64_t turn) {
    return "x-bench-turn: " + std::to_string(turn) + "\r\n";
  };

  mark_last(true);
  std::string body = json::serialize(request);
  const double body_mb = static_cast<double>(body.size()) / 1e6;
  const std::string fixed =
      json::serialize(request.at("system")) + json::serialize(request.at("tools"));
  std::printf(
      "Proxy mode: a real missyd (proxy on 127.0.0.1, home under /var/tmp) against a fake "
      "Anthropic upstream on loopback that answers the turns at once (the 1 MB answer after "
      "%d ms)\n",
      opt.large_delay_ms);
  std::printf(
      "conversation: %zu messages (tool loops from the trajectories), request body %.2f MB; "
      "system + tools %.1f KB; %s (window 200,000), max_tokens %lld, stream\n",
      initial, body_mb, static_cast<double>(fixed.size()) / 1000.0, kModel,
      static_cast<long long>(kMaxTokens));

  // The first request: direct once (for scale), then through the proxy, which stores it all.
  int64_t turn = 0;
  int status = 0;
  const Timed first_direct = Send(direct, direct_target, body, turn_header(turn));
  if (!first_direct.ok) {
    std::fprintf(stderr, "first request, direct, failed: %s\n", first_direct.error.c_str());
    return 1;
  }
  // Before aaef552 the proxy stored a request's new messages in one append, capped at
  // 10,000 engine messages (a user message of N tool results is N), and refused this
  // request with a 500; it now stores them in batches. A refusal is the bench's error.
  const Timed first_proxy = Send(via_proxy, proxy_target, body, turn_header(turn));
  if (!first_proxy.ok) {
    std::fprintf(stderr,
                 "first request (stores %zu messages): REFUSED by the proxy after %.1f ms: %s\n"
                 "%s\n",
                 initial, first_proxy.end_ms, first_proxy.error.c_str(), daemon.Log().c_str());
    return 1;
  }
  char first_line[512];
  std::snprintf(first_line, sizeof first_line,
                "first request (stores %zu messages): through the proxy TTFB %.1f ms, answer "
                "ended %.1f ms\n",
                initial, first_proxy.first_ms, first_proxy.end_ms);
  const auto summarize_start = Clock::now();
  const bool idle = missy::bench::WaitForIdleJobs(api, std::chrono::seconds(300));
  const double summarize_s = Ms(summarize_start, Clock::now()) / 1000.0;
  if (!idle) {
    std::fprintf(stderr, "background summarization still running after 300 s\n");
    return 1;
  }
  // The proxy must have taken all of it as new (its proxy.request event, written just after
  // the answer's end).
  const std::vector<json::object> first_events = ProxyEvents(api);
  const int64_t first_new = first_events.empty() ? -1 : Int(first_events.back(), "new_messages");
  if (first_new != static_cast<int64_t>(initial)) {
    std::fprintf(stderr, "first request: the proxy took %lld new messages, not %zu\n%s\n",
                 static_cast<long long>(first_new), initial, daemon.Log().c_str());
    return 1;
  }
  std::printf("%s", first_line);
  std::printf(
      "  the same request direct: TTFB %.1f ms; the background summarization it queued: "
      "%.1f s\n",
      first_direct.first_ms, summarize_s);

  std::vector<double> direct_ttfb, proxy_ttfb, diff_ttfb, direct_end, proxy_end, proxy_head;
  size_t mismatched = 0;
  const auto next_turn = [&](int64_t answered) {
    mark_last(false);
    messages.push_back(TurnAssistant(answered));
    messages.push_back(json::object{
        {"role", "user"},
        {"content",
         json::array{json::object{
             {"type", "tool_result"},
             {"tool_use_id", TurnToolId(answered)},
             {"content",
              material.outputs[static_cast<size_t>(answered) % material.outputs.size()]}}}}});
    mark_last(true);
    body = json::serialize(request);
  };
  next_turn(turn);
  if (const char* pause = std::getenv("MISSY_BENCH_PROFILE_PAUSE")) {
    std::fprintf(stderr, "measured turns in %s s: missyd pid %d\n", pause,
                 static_cast<int>(daemon.pid()));
    std::this_thread::sleep_for(std::chrono::seconds(std::atoi(pause)));
  }
  const size_t events_before_measured = ProxyEvents(api).size() + static_cast<size_t>(opt.warmup);
  const size_t first_measured_messages = initial + 2 * static_cast<size_t>(1 + opt.warmup);
  for (int k = 0; k < opt.warmup + opt.turns; ++k) {
    ++turn;
    const bool measured = k >= opt.warmup;
    Timed d, p;
    for (int order = 0; order < 2; ++order) {
      const bool proxy_now = (order == 0) == (turn % 2 == 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(opt.pause_ms));
      if (proxy_now) {
        p = Send(via_proxy, proxy_target, body, turn_header(turn));
      } else {
        d = Send(direct, direct_target, body, turn_header(turn));
      }
    }
    if (!d.ok || !p.ok) {
      std::fprintf(stderr, "turn %lld failed: direct %s; proxy %s\n%s\n",
                   static_cast<long long>(turn), d.error.c_str(), p.error.c_str(),
                   daemon.Log().c_str());
      return 1;
    }
    if (WithoutInputTokens(d.body) != WithoutInputTokens(p.body)) ++mismatched;
    if (measured) {
      direct_ttfb.push_back(d.first_ms);
      proxy_ttfb.push_back(p.first_ms);
      diff_ttfb.push_back(p.first_ms - d.first_ms);
      direct_end.push_back(d.end_ms);
      proxy_end.push_back(p.end_ms);
      proxy_head.push_back(p.head_ms);
    }
    next_turn(turn);
  }
  const size_t last_messages = messages.size() - 2;  // what the last measured turn sent

  // What the daemon did on the measured turns (its proxy.request events, written just after
  // each answer's end).
  std::this_thread::sleep_for(500ms);
  std::vector<double> sent_messages, sent_tokens, new_messages, dropped, summarized, summaries,
      daemon_first_byte, daemon_duration, daemon_body_read, daemon_parsed;
  const std::vector<json::object> events = ProxyEvents(api);
  for (size_t i = events_before_measured; i < events.size(); ++i) {
    const json::object& e = events[i];
    sent_messages.push_back(static_cast<double>(Int(e, "sent_messages")));
    sent_tokens.push_back(static_cast<double>(Int(e, "sent_tokens")));
    new_messages.push_back(static_cast<double>(Int(e, "new_messages")));
    dropped.push_back(static_cast<double>(Int(e, "dropped")));
    summarized.push_back(static_cast<double>(Int(e, "summarized")));
    summaries.push_back(static_cast<double>(Int(e, "summaries")));
    daemon_first_byte.push_back(static_cast<double>(Int(e, "first_byte_ms")));
    daemon_duration.push_back(static_cast<double>(Int(e, "duration_ms")));
    daemon_body_read.push_back(static_cast<double>(Int(e, "body_read_ms")));
    daemon_parsed.push_back(static_cast<double>(Int(e, "parsed_messages")));
  }
  auto diverged = api.Call("GET", "/v1/audit?type=proxy.history_diverged", "", 60s);
  const bool branched = !diverged.ok() || diverged->status != 200 ||
                        !json::parse(diverged->body).at("events").as_array().empty();
  const std::vector<size_t> bodies = upstream.bodies();
  // The upstream's requests alternate: the last 2 * turns are the measured ones.
  std::vector<double> proxied_bodies, direct_bodies;
  for (size_t i = bodies.size() - 2 * static_cast<size_t>(opt.turns); i < bodies.size(); ++i) {
    (bodies[i] > body.size() / 2 ? direct_bodies : proxied_bodies)
        .push_back(static_cast<double>(bodies[i]) / 1e6);
  }

  std::printf(
      "measured turns: %d (%zu to %zu messages sent), after %d warm-up turns; %d ms pause "
      "between requests; direct and proxied alternate which goes first\n",
      opt.turns, first_measured_messages, last_messages, opt.warmup, opt.pause_ms);
  std::printf("%-44s %9s %9s %9s\n", "time to first byte (ms)", "p50", "p99", "mean");
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "(a) direct to the fake upstream", P(direct_ttfb, 0.5),
              P(direct_ttfb, 0.99), Mean(direct_ttfb));
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "(b) through missyd's proxy", P(proxy_ttfb, 0.5),
              P(proxy_ttfb, 0.99), Mean(proxy_ttfb));
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "added: (b) - (a)",
              P(proxy_ttfb, 0.5) - P(direct_ttfb, 0.5), P(proxy_ttfb, 0.99) - P(direct_ttfb, 0.99),
              Mean(proxy_ttfb) - Mean(direct_ttfb));
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "added, per turn (b_i - a_i)", P(diff_ttfb, 0.5),
              P(diff_ttfb, 0.99), Mean(diff_ttfb));
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "proxy: answer head (status + headers)",
              P(proxy_head, 0.5), P(proxy_head, 0.99), Mean(proxy_head));
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "direct: answer ended", P(direct_end, 0.5),
              P(direct_end, 0.99), Mean(direct_end));
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "proxy: answer ended", P(proxy_end, 0.5),
              P(proxy_end, 0.99), Mean(proxy_end));
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "daemon: proxy.request duration_ms",
              P(daemon_duration, 0.5), P(daemon_duration, 0.99), Mean(daemon_duration));
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "daemon: proxy.request first_byte_ms",
              P(daemon_first_byte, 0.5), P(daemon_first_byte, 0.99), Mean(daemon_first_byte));
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "daemon: body read (head read -> handler)",
              P(daemon_body_read, 0.5), P(daemon_body_read, 0.99), Mean(daemon_body_read));
  std::printf("%-44s %9.2f %9.2f %9.2f\n", "daemon: messages parsed (not reused)",
              P(daemon_parsed, 0.5), P(daemon_parsed, 0.99), Mean(daemon_parsed));
  std::printf(
      "upstream request body: direct %.2f MB, proxied %.2f MB (p50); sent upstream: %.0f "
      "messages, %.0f tokens; %.0f dropped, %.0f summarized in %.0f summaries; %.0f new "
      "messages stored a turn (p50)\n",
      P(direct_bodies, 0.5), P(proxied_bodies, 0.5), P(sent_messages, 0.5), P(sent_tokens, 0.5),
      P(dropped, 0.5), P(summarized, 0.5), P(summaries, 0.5), P(new_messages, 0.5));
  std::printf("answers relayed byte-identical: %s; history branched: %s\n",
              mismatched == 0 ? "yes" : (std::to_string(mismatched) + " differed").c_str(),
              branched ? "YES (the bench's resent answers did not match)" : "no");
  const double added_p50 = P(proxy_ttfb, 0.5) - P(direct_ttfb, 0.5);
  std::printf("target: p50 added <= %.1f ms: %s (%.2f ms)\n", kTargetAddedMs,
              added_p50 <= kTargetAddedMs ? "met" : "NOT met", added_p50);
  if (mismatched != 0 || branched) status = 1;

  // ---- 2. Relay throughput on a 1 MB streamed answer ------------------------------------
  // What the turns queued in the background is let finish first: the relay alone is measured.
  if (!missy::bench::WaitForIdleJobs(api, std::chrono::seconds(300))) {
    std::fprintf(stderr, "background summarization still running after 300 s\n");
    return 1;
  }
  json::object small{{"model", kModel},
                     {"max_tokens", kMaxTokens},
                     {"stream", true},
                     {"messages", json::array{json::object{
                                      {"role", "user"}, {"content", "Write the long report."}}}}};
  const std::string small_body = json::serialize(small);
  std::vector<double> d_mbps, p_mbps, d_end_mbps, p_end_mbps, d_first, p_first, d_span, p_span,
      d_end, p_end, p_held_mbps, p_held_wait;
  size_t answer_bytes = 0;
  for (int run = -1; run < opt.relay_runs; ++run) {  // run -1: warm-up
    std::this_thread::sleep_for(std::chrono::milliseconds(opt.pause_ms));
    const Timed d = Send(direct, direct_target, small_body, "x-bench-answer: large\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(opt.pause_ms));
    const Timed p = Send(via_proxy, "/s/bench-relay-" + std::to_string(run + 1) + "/v1/messages",
                         small_body, "x-bench-answer: large\r\n");
    if (!d.ok || !p.ok || d.body != p.body) {
      std::fprintf(stderr, "relay run %d failed: direct %s; proxy %s; %zu vs %zu bytes\n%s\n", run,
                   d.error.c_str(), p.error.c_str(), d.body.size(), p.body.size(),
                   daemon.Log().c_str());
      return 1;
    }
    if (run < 0) continue;
    answer_bytes = d.body.size();
    // The rates count the bytes after the first piece (a chunk is read whole, and the
    // proxy's are larger than the fake's 16 KB), over the time after it.
    const auto rate = [&](const Timed& t, double to_ms) {
      return static_cast<double>(answer_bytes - t.first_piece_bytes) / 1e6 /
             ((to_ms - t.first_ms) / 1000.0);
    };
    d_mbps.push_back(rate(d, d.last_data_ms));
    p_mbps.push_back(rate(p, p.last_data_ms));
    // To the end from the first byte: what comes before it (a new conversation's first
    // request through the proxy stores the session) is latency, measured in section 1.
    d_end_mbps.push_back(rate(d, d.end_ms));
    p_end_mbps.push_back(rate(p, p.end_ms));
    d_first.push_back(d.first_ms);
    p_first.push_back(p.first_ms);
    d_span.push_back(d.last_data_ms - d.first_ms);
    p_span.push_back(p.last_data_ms - p.first_ms);
    d_end.push_back(d.end_ms);
    p_end.push_back(p.end_ms);
    p_held_mbps.push_back(static_cast<double>(answer_bytes - p.last_piece_bytes) / 1e6 /
                          ((p.before_last_ms - p.first_ms) / 1000.0));
    p_held_wait.push_back(p.last_data_ms - p.before_last_ms);
  }
  size_t deltas = 0;
  for (size_t at = 0; (at = large.find("text_delta", at)) != std::string::npos; ++at) ++deltas;
  std::printf(
      "\nRelay of a %zu-byte SSE answer (%zu text deltas of 40 characters; the fake starts it "
      "%d ms after the request and writes it in 16 KB pieces), %d runs, medians\n",
      answer_bytes, deltas, opt.large_delay_ms, opt.relay_runs);
  std::printf("%-10s %9s %12s %14s %12s %14s\n", "", "TTFB ms", "first→last", "MB/s (stream)",
              "end ms", "MB/s (→ end)");
  std::printf("%-10s %9.2f %12.2f %14.1f %12.2f %14.1f\n", "direct", P(d_first, 0.5),
              P(d_span, 0.5), P(d_mbps, 0.5), P(d_end, 0.5), P(d_end_mbps, 0.5));
  std::printf("%-10s %9.2f %12.2f %14.1f %12.2f %14.1f\n", "proxy", P(p_first, 0.5), P(p_span, 0.5),
              P(p_mbps, 0.5), P(p_end, 0.5), P(p_end_mbps, 0.5));
  std::printf(
      "proxy, all but its last piece (held until the request is stored): %.1f MB/s; the last "
      "piece came %.2f ms after the one before\n",
      P(p_held_mbps, 0.5), P(p_held_wait, 0.5));
  // The spread: on 2 cores a run's stream shares them with the fake, the agent and the
  // daemon's other threads, and one late wake-up doubles a 0.2 ms span.
  std::printf("MB/s (stream) p25 / p50 / p75: direct %.0f / %.0f / %.0f, proxy %.0f / %.0f / %.0f\n",
              P(d_mbps, 0.25), P(d_mbps, 0.5), P(d_mbps, 0.75), P(p_mbps, 0.25), P(p_mbps, 0.5),
              P(p_mbps, 0.75));
  const double ratio = P(p_mbps, 0.5) / P(d_mbps, 0.5);
  const double ratio_end = P(p_end_mbps, 0.5) / P(d_end_mbps, 0.5);
  std::printf("proxy/direct: %.3f while streaming, %.3f to the end; target >= %.2f: %s\n", ratio,
              ratio_end, kTargetRatio,
              ratio >= kTargetRatio && ratio_end >= kTargetRatio ? "met" : "NOT met");
  std::printf("fake upstream: %zu requests on %d connections\n", upstream.bodies().size(),
              upstream.connections());

  if (!daemon.alive()) {
    std::fprintf(stderr, "missyd died:\n%s\n", daemon.Log().c_str());
    return 1;
  }
  const int stopped = daemon.Stop();
  g_daemon_pid = -1;
  if (stopped != 0) {
    std::fprintf(stderr, "missyd exited %d:\n%s\n", stopped, daemon.Log().c_str());
    status = 1;
  }
  return status;
}
