// The uid of a loopback TCP peer from the kernel's socket table. See tcp_peer.h.
#include "daemon/net/tcp_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <vector>

namespace missy::net {
namespace {

constexpr std::array<uint8_t, 12> kV4MappedPrefix = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
constexpr unsigned kTcpTimeWait = 0x06;  // include/net/tcp_states.h

template <typename T>
bool ParseNumber(std::string_view text, int base, T* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out, base);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

// One 32-bit word as the kernel printed it (%08X of the value in host byte order), back
// to its bytes in memory (network order).
bool ParseWord(std::string_view hex, uint8_t* bytes) {
  uint32_t word = 0;
  if (hex.size() != 8 || !ParseNumber(hex, 16, &word)) return false;
  std::memcpy(bytes, &word, sizeof(word));
  return true;
}

// "0100007F:1F90" (IPv4) or 32 hex digits, ':', 4 hex digits (IPv6).
std::optional<SockAddr> ParseProcAddress(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view ip = text.substr(0, colon);
  SockAddr out;
  if (!ParseNumber(text.substr(colon + 1), 16, &out.port)) return std::nullopt;
  if (ip.size() == 8) {
    std::memcpy(out.addr.data(), kV4MappedPrefix.data(), kV4MappedPrefix.size());
    if (!ParseWord(ip, out.addr.data() + 12)) return std::nullopt;
    return out;
  }
  if (ip.size() != 32) return std::nullopt;
  for (size_t i = 0; i < 4; ++i) {
    if (!ParseWord(ip.substr(i * 8, 8), out.addr.data() + i * 4)) return std::nullopt;
  }
  return out;
}

// Splits `line` on spaces into at most `max` fields; returns how many it found.
size_t SplitFields(std::string_view line, std::string_view* fields, size_t max) {
  size_t n = 0;
  size_t pos = 0;
  while (n < max) {
    pos = line.find_first_not_of(" \t", pos);
    if (pos == std::string_view::npos) break;
    size_t end = line.find_first_of(" \t", pos);
    if (end == std::string_view::npos) end = line.size();
    fields[n++] = line.substr(pos, end - pos);
    pos = end;
  }
  return n;
}

// The whole of a /proc file (its size is not known before reading it).
std::optional<std::string> ReadProcFile(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[16384];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

}  // namespace

std::optional<SockAddr> SockAddr::Parse(std::string_view ip, uint16_t port) {
  const std::string text(ip);
  SockAddr out;
  out.port = port;
  in_addr a4{};
  if (inet_pton(AF_INET, text.c_str(), &a4) == 1) {
    std::memcpy(out.addr.data(), kV4MappedPrefix.data(), kV4MappedPrefix.size());
    std::memcpy(out.addr.data() + 12, &a4, 4);
    return out;
  }
  in6_addr a6{};
  if (inet_pton(AF_INET6, text.c_str(), &a6) == 1) {
    std::memcpy(out.addr.data(), &a6, 16);
    return out;
  }
  return std::nullopt;
}

std::optional<SockAddr> SockAddr::From(const sockaddr* sa, socklen_t len) {
  SockAddr out;
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    std::memcpy(out.addr.data(), kV4MappedPrefix.data(), kV4MappedPrefix.size());
    std::memcpy(out.addr.data() + 12, &in->sin_addr, 4);
    out.port = ntohs(in->sin_port);
    return out;
  }
  if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    std::memcpy(out.addr.data(), &in6->sin6_addr, 16);
    out.port = ntohs(in6->sin6_port);
    return out;
  }
  return std::nullopt;
}

bool SockAddr::IsV4Mapped() const {
  return std::memcmp(addr.data(), kV4MappedPrefix.data(), kV4MappedPrefix.size()) == 0;
}

std::string SockAddr::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (IsV4Mapped()) {
    inet_ntop(AF_INET, addr.data() + 12, buf, sizeof(buf));
    return std::string(buf) + ":" + std::to_string(port);
  }
  inet_ntop(AF_INET6, addr.data(), buf, sizeof(buf));
  return "[" + std::string(buf) + "]:" + std::to_string(port);
}

std::optional<uint32_t> FindSocketUid(std::string_view proc_net_text,
                                      const SockAddr& local_of_client,
                                      const SockAddr& remote_of_client) {
  // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
  constexpr size_t kLocal = 1, kRemote = 2, kState = 3, kUid = 7, kFields = 8;
  size_t pos = 0;
  while (pos < proc_net_text.size()) {
    size_t end = proc_net_text.find('\n', pos);
    if (end == std::string_view::npos) end = proc_net_text.size();
    const std::string_view line = proc_net_text.substr(pos, end - pos);
    pos = end + 1;
    std::string_view f[kFields];
    if (SplitFields(line, f, kFields) < kFields || f[0].empty() || f[0].back() != ':') continue;
    std::optional<SockAddr> local = ParseProcAddress(f[kLocal]);
    if (!local || *local != local_of_client) continue;
    std::optional<SockAddr> remote = ParseProcAddress(f[kRemote]);
    if (!remote || *remote != remote_of_client) continue;
    unsigned state = 0;
    uint32_t uid = 0;
    if (!ParseNumber(f[kState], 16, &state) || state == kTcpTimeWait) continue;
    if (!ParseNumber(f[kUid], 10, &uid)) continue;
    return uid;
  }
  return std::nullopt;
}

std::optional<uint32_t> TcpPeerUid(int fd) {
  sockaddr_storage peer{};
  sockaddr_storage self{};
  socklen_t peer_len = sizeof(peer);
  socklen_t self_len = sizeof(self);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0) {
    return std::nullopt;
  }
  std::optional<SockAddr> client = SockAddr::From(reinterpret_cast<sockaddr*>(&peer), peer_len);
  std::optional<SockAddr> us = SockAddr::From(reinterpret_cast<sockaddr*>(&self), self_len);
  if (!client || !us) return std::nullopt;
  // An IPv4 connection's client may be an IPv4 socket (tcp) or an IPv6 one using a
  // mapped address (tcp6); an IPv6 connection's client is in tcp6.
  // /proc/self/net, not /proc/net (a link to it): under ProcSubset=pid (missyd.service)
  // only the process directories are visible in /proc.
  const bool v4 = client->IsV4Mapped() && us->IsV4Mapped();
  std::vector<const char*> files;
  if (v4) files.push_back("/proc/self/net/tcp");
  files.push_back("/proc/self/net/tcp6");
  for (const char* path : files) {
    std::optional<std::string> text = ReadProcFile(path);
    if (!text) continue;
    if (std::optional<uint32_t> uid = FindSocketUid(*text, *client, *us)) return uid;
  }
  return std::nullopt;
}

}  // namespace missy::net
