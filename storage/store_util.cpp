#include "storage/store_util.h"

#include <random>

namespace missy::store_util {

std::string GenerateId(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   (static_cast<uint64_t>(std::random_device{}()) << 32)};
  static const char kHex[] = "0123456789abcdef";
  const uint64_t r = rng();
  std::string out(prefix);
  for (int i = 0; i < 16; ++i) out += kHex[(r >> (60 - 4 * i)) & 0xf];
  return out;
}

void BindPage(sqlite::Statement& q, const ListOptions& options) {
  q.Bind(1, static_cast<int64_t>(options.limit < 0 ? -1 : options.limit))
      .Bind(2, static_cast<int64_t>(options.offset < 0 ? 0 : options.offset));
}

}  // namespace missy::store_util
