// Small pure utilities used across layers, defined once: SHA-256 as hex (audit chain,
// rank-file checks) and random hex ids (session, context, summary, memory ids).
#pragma once

#include <string>
#include <string_view>

namespace missy {

// 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

// 16 lowercase hex digits of a per-thread 64-bit generator seeded from
// std::random_device: unique in practice, not a secret.
std::string RandomHexId();

}  // namespace missy
