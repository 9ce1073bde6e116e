// proxy_bench's fake Anthropic upstream: plain POSIX sockets on 127.0.0.1, a thread per
// connection, answering at once and writing its SSE streams piece by piece as a provider
// does (the tests' FakeProviderServer sends each body whole, which would make the relay's
// throughput meaningless). Also the answers it streams, which the agent side resends as
// history. Header-only: every bench/*_bench.cpp is its own executable.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace missy::bench::proxy {

namespace json = boost::json;

inline constexpr size_t kPiece = 16384;          // the fake's streamed writes
inline constexpr size_t kLargeAnswer = 1000000;  // bytes of SSE, at least
inline constexpr char kModel[] = "claude-sonnet-4-5";

inline std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// ---------------------------------------------------------------------------------------
// The answers. Turn t's answer is the same bytes whoever asks (the fake reads t from the
// x-bench-turn header, which the proxy forwards), so the agent can resend it next turn
// and the direct and proxied answers can be compared byte for byte.

inline constexpr const char* kCommands[] = {
    "git status --porcelain",      "pytest -x -q tests/test_parser.py", "ls -la src/",
    "grep -rn \"def parse\" src/", "sed -n 1,80p src/parser.py",        "make -j2 test",
};

inline json::object TurnInput(int64_t turn) {
  return json::object{{"command", kCommands[turn % std::size(kCommands)]},
                      {"description", "Check the state after step " + std::to_string(turn)}};
}
inline std::string TurnText(int64_t turn) {
  return "Step " + std::to_string(turn) + ": the last command worked; running the next check.";
}
inline std::string TurnToolId(int64_t turn) { return "toolu_bench_t" + std::to_string(turn); }

// The assistant message the agent keeps for turn t (what the stream below carries).
inline json::object TurnAssistant(int64_t turn) {
  return json::object{
      {"role", "assistant"},
      {"content", json::array{json::object{{"type", "text"}, {"text", TurnText(turn)}},
                              json::object{{"type", "tool_use"},
                                           {"id", TurnToolId(turn)},
                                           {"name", "Bash"},
                                           {"input", TurnInput(turn)}}}}};
}

inline std::string Event(const char* name, const json::object& data) {
  return std::string("event: ") + name + "\ndata: " + json::serialize(data) + "\n\n";
}

inline json::object MessageStart(const std::string& id, int64_t input_tokens) {
  return json::object{
      {"type", "message_start"},
      {"message", json::object{{"id", id},
                               {"type", "message"},
                               {"role", "assistant"},
                               {"model", kModel},
                               {"content", json::array{}},
                               {"stop_reason", nullptr},
                               {"stop_sequence", nullptr},
                               {"usage", json::object{{"input_tokens", input_tokens},
                                                      {"cache_creation_input_tokens", 0},
                                                      {"cache_read_input_tokens", 0},
                                                      {"output_tokens", 1}}}}}};
}

inline std::string TextDelta(int index, const std::string& text) {
  return Event("content_block_delta",
               json::object{{"type", "content_block_delta"},
                            {"index", index},
                            {"delta", json::object{{"type", "text_delta"}, {"text", text}}}});
}

inline std::string Tail(const char* stop_reason, int64_t output_tokens) {
  return Event("message_delta",
               json::object{{"type", "message_delta"},
                            {"delta", json::object{{"stop_reason", stop_reason},
                                                   {"stop_sequence", nullptr}}},
                            {"usage", json::object{{"output_tokens", output_tokens}}}}) +
         Event("message_stop", json::object{{"type", "message_stop"}});
}

// Turn t's small stream (about 1.6 KB): its first event, then the rest.
inline std::pair<std::string, std::string> SmallStream(int64_t turn, int64_t input_tokens) {
  std::string first =
      Event("message_start", MessageStart("msg_bench_" + std::to_string(turn), input_tokens));
  std::string rest = Event("ping", json::object{{"type", "ping"}});
  rest += Event("content_block_start",
                json::object{{"type", "content_block_start"},
                             {"index", 0},
                             {"content_block", json::object{{"type", "text"}, {"text", ""}}}});
  const std::string text = TurnText(turn);
  rest += TextDelta(0, text.substr(0, text.size() / 2));
  rest += TextDelta(0, text.substr(text.size() / 2));
  rest += Event("content_block_stop", json::object{{"type", "content_block_stop"}, {"index", 0}});
  rest += Event("content_block_start",
                json::object{{"type", "content_block_start"},
                             {"index", 1},
                             {"content_block", json::object{{"type", "tool_use"},
                                                            {"id", TurnToolId(turn)},
                                                            {"name", "Bash"},
                                                            {"input", json::object{}}}}});
  const std::string input = json::serialize(TurnInput(turn));
  for (const std::string& part :
       {input.substr(0, input.size() / 2), input.substr(input.size() / 2)}) {
    rest +=
        Event("content_block_delta",
              json::object{
                  {"type", "content_block_delta"},
                  {"index", 1},
                  {"delta", json::object{{"type", "input_json_delta"}, {"partial_json", part}}}});
  }
  rest += Event("content_block_stop", json::object{{"type", "content_block_stop"}, {"index", 1}});
  rest += Tail("tool_use", 48);
  return {first, rest};
}

// A 1 MB answer: one text block of ~40-character deltas (prose from the trajectories).
inline std::string LargeStream(const std::string& prose) {
  std::string sse = Event("message_start", MessageStart("msg_bench_large", 20));
  sse += Event("content_block_start",
               json::object{{"type", "content_block_start"},
                            {"index", 0},
                            {"content_block", json::object{{"type", "text"}, {"text", ""}}}});
  size_t at = 0;
  int64_t deltas = 0;
  const std::string tail = Tail("end_turn", 1);
  const std::string stop =
      Event("content_block_stop", json::object{{"type", "content_block_stop"}, {"index", 0}});
  while (sse.size() + stop.size() + tail.size() < kLargeAnswer) {
    if (at + 40 > prose.size()) at = 0;
    sse += TextDelta(0, prose.substr(at, 40));
    at += 40;
    ++deltas;
  }
  return sse + stop + Tail("end_turn", deltas);
}

// ---------------------------------------------------------------------------------------
// The fake upstream: 127.0.0.1, a thread per connection, HTTP/1.1 keep-alive, requests with
// a Content-Length body. It reads the whole request, then answers with a chunked SSE
// stream: at once the small stream of the x-bench-turn header's turn, or with
// "x-bench-answer: large" the 1 MB one, one HTTP chunk (and one send) per 16 KB piece, after
// `large_delay` (a provider thinks before it streams; see proxy_bench.cpp, section 2).

class StreamingUpstream {
 public:
  StreamingUpstream(std::string large, std::chrono::milliseconds large_delay)
      : large_(std::move(large)), large_delay_(large_delay) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(listen_fd_, 64) != 0) {
      std::perror("fake upstream: bind/listen");
      std::exit(1);
    }
    socklen_t len = sizeof a;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~StreamingUpstream() {
    stop_ = true;
    acceptor_.join();
    close(listen_fd_);
    std::vector<std::thread> workers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : fds_) shutdown(fd, SHUT_RDWR);
      workers.swap(workers_);
    }
    for (std::thread& t : workers) t.join();
  }
  StreamingUpstream(const StreamingUpstream&) = delete;
  StreamingUpstream& operator=(const StreamingUpstream&) = delete;

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  uint16_t port() const { return port_; }
  // Body sizes of the requests received, in order.
  std::vector<size_t> bodies() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  int connections() const { return connections_.load(); }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 100) != 1) continue;
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      timeval tv{30, 0};  // no blocking send or recv lasts longer
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ++connections_;
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(fd);
      workers_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  static bool SendAll(int fd, std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        return false;
      }
    }
    return true;
  }

  static std::string Chunk(std::string_view data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string out(size);
    out.append(data);
    out += "\r\n";
    return out;
  }

  void Serve(int fd) {
    std::string buf;
    char tmp[65536];
    // An idle keep-alive connection is closed after 120 s (recv's 30 s timeouts).
    for (int idle = 0; !stop_ && idle < 4;) {
      const size_t head_end = buf.find("\r\n\r\n");
      if (head_end == std::string::npos) {
        const ssize_t n = recv(fd, tmp, sizeof tmp, 0);
        if (n == 0) break;
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) {
            ++idle;
            continue;
          }
          break;
        }
        idle = 0;
        buf.append(tmp, static_cast<size_t>(n));
        continue;
      }
      // The head: the request line, then lower-cased headers.
      std::string length_text, answer, turn_text;
      bool close_after = false;
      size_t line_start = buf.find("\r\n") + 2;
      while (line_start < head_end) {
        const size_t eol = buf.find("\r\n", line_start);
        const std::string line = buf.substr(line_start, eol - line_start);
        line_start = eol + 2;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string name = Lower(line.substr(0, colon));
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        if (name == "content-length") length_text = value;
        if (name == "x-bench-answer") answer = value;
        if (name == "x-bench-turn") turn_text = value;
        if (name == "connection" && Lower(value) == "close") close_after = true;
        if (name == "transfer-encoding") {
          SendAll(fd, "HTTP/1.1 411 Length Required\r\nContent-Length: 0\r\n\r\n");
          shutdown(fd, SHUT_RDWR);
          return;
        }
      }
      const size_t length = length_text.empty() ? 0 : std::stoul(length_text);
      while (buf.size() < head_end + 4 + length && !stop_) {
        const ssize_t n = recv(fd, tmp, sizeof tmp, 0);
        if (n <= 0) {
          if (n < 0 && errno == EINTR) continue;
          return;
        }
        buf.append(tmp, static_cast<size_t>(n));
      }
      buf.erase(0, head_end + 4 + length);
      {
        std::lock_guard<std::mutex> lock(mu_);
        bodies_.push_back(length);
      }
      std::string head =
          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
          "Transfer-Encoding: chunked\r\nrequest-id: req_bench\r\n";
      if (close_after) head += "Connection: close\r\n";
      head += "\r\n";
      bool ok = true;
      if (answer == "large") {
        std::this_thread::sleep_for(large_delay_);
        ok = SendAll(fd, head);
        for (size_t at = 0; ok && at < large_.size(); at += kPiece) {
          ok = SendAll(fd, Chunk(std::string_view(large_).substr(at, kPiece)));
        }
      } else {
        const int64_t turn = turn_text.empty() ? 0 : std::stoll(turn_text);
        // A usage the calibration can live with: about 4 bytes of JSON a token.
        const auto [first, rest] = SmallStream(turn, static_cast<int64_t>(length / 4));
        ok = SendAll(fd, head + Chunk(first)) && SendAll(fd, Chunk(rest));
      }
      ok = ok && SendAll(fd, "0\r\n\r\n");
      if (!ok || close_after) break;
    }
    shutdown(fd, SHUT_RDWR);
  }

  std::string large_;
  std::chrono::milliseconds large_delay_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<int> fds_;
  std::vector<size_t> bodies_;
};

}  // namespace missy::bench::proxy
