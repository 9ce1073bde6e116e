#include "core/digest.h"

#include <openssl/evp.h>

#include <cstdint>
#include <random>

namespace missy {

namespace {
constexpr char kHex[] = "0123456789abcdef";
}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) return {};
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string RandomHexId() {
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   (static_cast<uint64_t>(std::random_device{}()) << 32)};
  const uint64_t r = rng();
  std::string out;
  out.reserve(16);
  for (int i = 0; i < 16; ++i) out += kHex[(r >> (60 - 4 * i)) & 0xf];
  return out;
}

}  // namespace missy
