// Extra response headers. See response_headers.h.
#include "daemon/net/response_headers.h"

#include <spdlog/spdlog.h>

#include <array>
#include <cctype>

namespace missy::net {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool TokenChar(unsigned char c) {
  if (std::isalnum(c)) return true;
  static constexpr std::string_view kOthers = "!#$%&'*+-.^_`|~";
  return kOthers.find(static_cast<char>(c)) != std::string_view::npos;
}

}  // namespace

bool ServerOwnedHeader(std::string_view name) {
  static constexpr std::array<std::string_view, 4> kOwned = {"content-type", "content-length",
                                                             "transfer-encoding", "connection"};
  for (std::string_view owned : kOwned) {
    if (EqualsIgnoreCase(name, owned)) return true;
  }
  return false;
}

bool ValidHeaderField(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!TokenChar(static_cast<unsigned char>(c))) return false;
  }
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool SendExtraHeader(std::string_view name, std::string_view value, std::string_view what) {
  if (ServerOwnedHeader(name)) return false;
  if (!ValidHeaderField(name, value)) {
    spdlog::warn("answer to {}: header '{}' dropped (not a valid HTTP field)", what, name);
    return false;
  }
  return true;
}

}  // namespace missy::net
