// Helpers for the tests of the proxy listeners: a plain TCP client and a parser for the
// HTTP responses it reads (headers in wire order, chunks as sent).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace missy::net_test {

// Connects to "127.0.0.1:PORT" or "[::1]:PORT".
class TcpClient {
 public:
  explicit TcpClient(const std::string& address) {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) return;
    std::string host = address.substr(0, colon);
    const int port = std::stoi(address.substr(colon + 1));
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (!host.empty() && host.front() == '[') {
      host = host.substr(1, host.size() - 2);
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
      in6->sin6_family = AF_INET6;
      in6->sin6_port = htons(static_cast<uint16_t>(port));
      if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) != 1) return;
      len = sizeof(sockaddr_in6);
    } else {
      auto* in = reinterpret_cast<sockaddr_in*>(&ss);
      in->sin_family = AF_INET;
      in->sin_port = htons(static_cast<uint16_t>(port));
      if (inet_pton(AF_INET, host.c_str(), &in->sin_addr) != 1) return;
      len = sizeof(sockaddr_in);
    }
    fd_ = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0) Close();
  }
  ~TcpClient() { Close(); }
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  bool ok() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Reads until `needle` was received, EOF or the timeout; returns everything read.
  std::string ReadUntil(const std::string& needle, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (received_.find(needle) == std::string::npos && !eof_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        eof_ = true;
      } else {
        received_.append(buf, static_cast<size_t>(n));
      }
    }
    return received_;
  }
  // Reads until the peer closes (or the timeout).
  std::string ReadAll(std::chrono::milliseconds timeout) {
    return ReadUntil(std::string(1, '\0') + "never sent", timeout);
  }
  bool eof() const { return eof_; }

 private:
  int fd_ = -1;
  std::string received_;
  bool eof_ = false;
};

// One HTTP response as it came over the wire.
struct WireResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // in order; names lower-cased
  std::vector<std::string> chunks;                           // chunked bodies only
  std::string body;

  // The value of the first header named `name` (lower case), or "<absent>".
  std::string Header(const std::string& name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return "<absent>";
  }
  // Where `name` first appears among the headers; headers.size() when absent.
  size_t HeaderIndex(const std::string& name) const {
    for (size_t i = 0; i < headers.size(); ++i) {
      if (headers[i].first == name) return i;
    }
    return headers.size();
  }
};

// Parses one complete response (Content-Length or chunked); nullopt if incomplete.
inline std::optional<WireResponse> ParseWireResponse(const std::string& raw) {
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos || raw.compare(0, 9, "HTTP/1.1 ") != 0) return std::nullopt;
  WireResponse out;
  out.status = std::stoi(raw.substr(9, 3));
  size_t pos = raw.find("\r\n") + 2;
  while (pos < head_end) {
    const size_t end = raw.find("\r\n", pos);
    const std::string line = raw.substr(pos, end - pos);
    pos = end + 2;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return std::nullopt;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    size_t value_start = line.find_first_not_of(' ', colon + 1);
    out.headers.emplace_back(name,
                             value_start == std::string::npos ? "" : line.substr(value_start));
  }
  std::string rest = raw.substr(head_end + 4);
  if (out.Header("transfer-encoding") == "chunked") {
    size_t at = 0;
    for (;;) {
      const size_t line_end = rest.find("\r\n", at);
      if (line_end == std::string::npos) return std::nullopt;
      const size_t size = std::stoul(rest.substr(at, line_end - at), nullptr, 16);
      if (size == 0) return out;
      if (rest.size() < line_end + 2 + size + 2) return std::nullopt;
      out.chunks.push_back(rest.substr(line_end + 2, size));
      out.body += out.chunks.back();
      at = line_end + 2 + size + 2;
    }
  }
  const std::string length = out.Header("content-length");
  if (length == "<absent>") return std::nullopt;
  const size_t n = std::stoul(length);
  if (rest.size() < n) return std::nullopt;
  out.body = rest.substr(0, n);
  return out;
}

// One request with Connection: close; the response read until the server closes.
inline std::optional<WireResponse> TcpCall(
    const std::string& address, const std::string& method, const std::string& target,
    const std::string& body, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  TcpClient client(address);
  if (!client.ok()) return std::nullopt;
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: " + address +
                        "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\n\r\n" + body;
  if (!client.Send(request)) return std::nullopt;
  return ParseWireResponse(client.ReadAll(timeout));
}

}  // namespace missy::net_test
