#include "core/bpe_encoding.h"

#include "core/bpe_ascii_split.h"
#include "core/bpe_unicode.h"
#include "core/count_memo.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <queue>
#include <utility>

namespace missy {
namespace {

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();
// Pieces up to this many bytes use tiktoken's quadratic merge on a stack array; longer
// ones use a heap over a linked list (O(n log n)).
constexpr size_t kSmallPiece = 128;

// Unicode White_Space, as Rust's regex `\s` (the reference tokenizer) defines it.
// PCRE2's `\s` differs (e.g. U+180E in some versions), so it is never used.
constexpr const char* kWhiteSpace =
    "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}"
    "\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

// The split patterns are tiktoken's pat_str with `\s` spelled out and each Unicode
// class extended by the code points PCRE2's older Unicode tables lack (bpe_unicode.h).
std::string SplitPattern(std::string_view name) {
  namespace u = bpe_unicode;
  const std::string ws = kWhiteSpace;
  const std::string letter = std::string("\\p{L}") + u::kExtraLetter;
  const std::string number = std::string("\\p{N}") + u::kExtraNumber;
  const std::string not_letter_number = "[^\\r\\n" + letter + number + "]";
  const std::string punct = "[^" + ws + letter + number + "]";
  const std::string tail = "|[" + ws + "]*[\\r\\n]+|[" + ws + "]+(?![^" + ws + "])|[" + ws + "]+";
  if (name == "cl100k_base") {
    // Possessive quantifiers are added only where they cannot change the match (what
    // follows cannot match what the quantified item would give back).
    return "(?i:'s|'t|'re|'ve|'m|'ll|'d)|" + not_letter_number + "?+[" + letter + "]++|[" + number +
           "]{1,3}+| ?" + punct + "++[\\r\\n]*+" + tail;
  }
  if (name == "o200k_base") {
    const std::string upper =
        std::string("[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}") + u::kExtraUpperish + "]";
    const std::string lower = std::string("[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}") + u::kExtraLowerish + "]";
    const std::string contraction = "(?i:'s|'t|'re|'ve|'m|'ll|'d)?";
    return not_letter_number + "?" + upper + "*" + lower + "+" + contraction + "|" +
           not_letter_number + "?" + upper + "+" + lower + "*" + contraction + "|[" + number +
           "]{1,3}| ?" + punct + "+[\\r\\n/]*" + tail;
  }
  return {};
}

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The bytes of a string of at most 8 bytes packed in one word: with its length, an
// exact key (the loads cover every byte). Reads only p[0, len).
inline uint64_t PackShort(const uint8_t* p, size_t len) {
  if (len >= 4) return Load32(p) | (uint64_t{Load32(p + len - 4)} << 32);
  if (len > 0) return uint64_t{p[0]} | (uint64_t{p[len / 2]} << 8) | (uint64_t{p[len - 1]} << 16);
  return 0;
}

inline uint64_t Mix(uint64_t h) {
  h *= 0x94D049BB133111EBull;
  h ^= h >> 32;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return h;
}

inline uint64_t HashShort(uint64_t packed, size_t len) {
  return Mix(packed ^ ((len + 1) * 0x9E3779B97F4A7C15ull));
}

// Fast non-cryptographic hash of a byte string longer than 8 bytes.
inline uint64_t HashLong(const uint8_t* p, size_t len) {
  uint64_t h = (len + 1) * 0x9E3779B97F4A7C15ull;
  while (len > 8) {
    h = (h ^ Load64(p)) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    p += 8;
    len -= 8;
  }
  h ^= Load64(p + len - 8);  // the last 8 bytes, overlapping the previous chunk
  return Mix(h);
}

// Open-addressing map from token bytes to rank. Keys of up to 8 bytes are compared as
// one packed word; longer keys live in an arena and are compared with memcmp.
class RankTable {
 public:
  void Reserve(size_t n, size_t arena_bytes) {
    size_t cap = 16;
    while (cap < n * 2 + 16) cap <<= 1;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    arena_.reserve(arena_bytes);
  }

  // False if the key is already present.
  bool Insert(std::string_view key, uint32_t rank) {
    const auto* p = reinterpret_cast<const uint8_t*>(key.data());
    if (key.empty() || Find(p, key.size()) != kNoRank) return false;
    const size_t len = key.size();
    const uint64_t packed = len <= 8 ? PackShort(p, len) : 0;
    const uint64_t h = len <= 8 ? HashShort(packed, len) : HashLong(p, len);
    size_t i = h & mask_;
    while (slots_[i].len != 0) i = (i + 1) & mask_;
    slots_[i] =
        Slot{packed, static_cast<uint32_t>(len), rank, static_cast<uint32_t>(arena_.size())};
    arena_.append(key);
    max_len_ = std::max(max_len_, len);
    ++size_;
    return true;
  }

  uint32_t Find(const uint8_t* p, size_t len) const {
    if (len <= 8) {
      if (len == 0) return kNoRank;
      const uint64_t packed = PackShort(p, len);
      for (size_t i = HashShort(packed, len) & mask_;; i = (i + 1) & mask_) {
        const Slot& s = slots_[i];
        if (s.len == len && s.packed == packed) return s.rank;
        if (s.len == 0) return kNoRank;
      }
    }
    if (len > max_len_) return kNoRank;
    for (size_t i = HashLong(p, len) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.len == len && std::memcmp(arena_.data() + s.offset, p, len) == 0) return s.rank;
      if (s.len == 0) return kNoRank;
    }
  }

  // Bytes of every token, by rank (for TokenBytes).
  std::vector<std::pair<uint32_t, uint32_t>> SpansByRank(uint32_t max_rank) const {
    std::vector<std::pair<uint32_t, uint32_t>> spans(size_t{max_rank} + 1, {0, 0});
    for (const Slot& s : slots_) {
      if (s.len != 0) spans[s.rank] = {s.offset, s.len};
    }
    return spans;
  }

  const std::string& arena() const { return arena_; }
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t packed = 0;  // PackShort of keys up to 8 bytes
    uint32_t len = 0;     // 0: empty slot (tokens are never empty)
    uint32_t rank = 0;
    uint32_t offset = 0;  // of the key in arena_
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  std::string arena_;
  size_t max_len_ = 0;
  size_t size_ = 0;
};

// Standard base64 (with padding) into `out`; false on a malformed string.
bool DecodeBase64(std::string_view in, std::string& out) {
  static const auto kTable = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(alphabet[i])] = static_cast<int8_t>(i);
    return t;
  }();
  out.clear();
  if (in.empty() || in.size() % 4 != 0) return false;
  size_t pad = 0;
  if (in.back() == '=') ++pad;
  if (in.size() >= 2 && in[in.size() - 2] == '=') ++pad;
  uint32_t acc = 0;
  for (size_t i = 0; i < in.size() - pad; ++i) {
    int8_t v = kTable[static_cast<uint8_t>(in[i])];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    if (i % 4 == 3) {
      out.push_back(static_cast<char>(acc >> 16));
      out.push_back(static_cast<char>(acc >> 8));
      out.push_back(static_cast<char>(acc));
      acc = 0;
    }
  }
  if (pad == 1) {
    acc <<= 6;
    out.push_back(static_cast<char>(acc >> 16));
    out.push_back(static_cast<char>(acc >> 8));
  } else if (pad == 2) {
    acc <<= 12;
    out.push_back(static_cast<char>(acc >> 16));
  }
  return true;
}

// Per-thread PCRE2 match state: match data (one ovector pair) and a JIT stack that may
// grow to 8 MiB, shared by every encoding used on the thread.
struct MatchScratch {
  MatchScratch() {
    match_data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (context != nullptr && jit_stack != nullptr) {
      pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
  }
  ~MatchScratch() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(match_data);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;

  pcre2_match_data* match_data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
};

MatchScratch& ThreadScratch() {
  thread_local MatchScratch scratch;
  return scratch;
}

// Per-thread buffers for the merge of long pieces.
struct MergeScratch {
  std::vector<uint32_t> next;
  std::vector<uint32_t> prev;
  std::vector<uint32_t> pair_rank;
  std::vector<uint64_t> sorted;  // candidate pairs, ascending
  std::vector<uint64_t> merged;  // scratch for folding the heap into `sorted`
  std::vector<uint64_t> heap;    // candidate pairs formed by merges (min-heap)
};

MergeScratch& ThreadMergeScratch() {
  thread_local MergeScratch scratch;
  return scratch;
}

}  // namespace

class BpeEncoding::Impl {
 public:
  ~Impl() { pcre2_code_free(code_); }

  CountMemo memo;  // large texts counted again and again (system prompts, tools)

  using AsciiMatchFn = size_t (*)(const uint8_t*, size_t, size_t);

  Status Init(const std::string& pattern, AsciiMatchFn ascii_match, std::string_view contents) {
    ascii_match_ = ascii_match;
    MISSY_RETURN_IF_ERROR(LoadRanks(contents));
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
    if (code_ == nullptr) {
      PCRE2_UCHAR buffer[256];
      pcre2_get_error_message(error, buffer, sizeof(buffer));
      return Status::Internal("split pattern does not compile at offset " + std::to_string(offset) +
                              ": " + reinterpret_cast<const char*>(buffer));
    }
    jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
    return Status::Ok();
  }

  // Calls piece(begin, size) for each pre-tokenizer piece of `text`, in order. Bytes the
  // pattern cannot match (invalid UTF-8) become pieces of their own.
  template <typename PieceFn>
  void Split(std::string_view text, PieceFn&& piece) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    const size_t n = text.size();
    MatchScratch& scratch = ThreadScratch();
    if (scratch.match_data == nullptr) {  // out of memory: still count every byte
      if (n > 0) piece(subject, n);
      return;
    }
    size_t pos = 0;
    while (pos < n) {
      if (subject[pos] < 0x80) {
        const size_t end = ascii_match_(subject, n, pos);
        if (end != 0) {
          piece(subject + pos, end - pos);
          pos = end;
          continue;
        }
      }
      int rc = jit_
                   ? pcre2_jit_match(code_, subject, n, pos, 0, scratch.match_data, scratch.context)
                   : pcre2_match(code_, subject, n, pos, 0, scratch.match_data, scratch.context);
      if (rc < 0) {
        // No match (or a resource limit): the rest is one piece.
        piece(subject + pos, n - pos);
        return;
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(scratch.match_data);
      size_t start = ov[0];
      size_t end = ov[1];
      if (start > pos) piece(subject + pos, start - pos);
      if (end <= start) {  // cannot happen with these patterns; never loop forever
        end = start + 1;
      }
      piece(subject + start, end - start);
      pos = end;
    }
  }

  // Merges one piece; emit(rank) is called for each token when kIds, and the number of
  // tokens is returned.
  template <bool kIds, typename Emit>
  size_t EncodePiece(const uint8_t* p, size_t n, Emit&& emit) const {
    if (n == 1) {
      if constexpr (kIds) emit(byte_rank_[p[0]]);
      return 1;
    }
    uint32_t whole = ranks_.Find(p, n);
    if (whole != kNoRank) {
      if constexpr (kIds) emit(whole);
      return 1;
    }
    if (n <= kSmallPiece) return MergeSmall<kIds>(p, n, emit);
    return MergeLarge<kIds>(p, n, emit);
  }

  template <bool kIds, typename Emit>
  size_t MergeSmall(const uint8_t* p, size_t n, Emit& emit) const {
    // tiktoken's byte_pair_merge: parts[i] = (start, rank of the pair starting there).
    struct Part {
      uint32_t start;
      uint32_t rank;
    };
    Part parts[kSmallPiece + 1];
    size_t m = n + 1;
    for (size_t i = 0; i + 1 < n; ++i) parts[i] = {uint32_t(i), ranks_.Find(p + i, 2)};
    parts[n - 1] = {uint32_t(n - 1), kNoRank};
    parts[n] = {uint32_t(n), kNoRank};
    auto rank_of = [&](size_t i) {  // rank of parts[i] merged with the next two boundaries
      return i + 3 < m ? ranks_.Find(p + parts[i].start, parts[i + 3].start - parts[i].start)
                       : kNoRank;
    };
    for (;;) {
      uint32_t min_rank = kNoRank;
      size_t at = 0;
      for (size_t i = 0; i + 1 < m; ++i) {
        if (parts[i].rank < min_rank) {
          min_rank = parts[i].rank;
          at = i;
        }
      }
      if (min_rank == kNoRank) break;
      if (at > 0) parts[at - 1].rank = rank_of(at - 1);
      parts[at].rank = rank_of(at);
      std::memmove(&parts[at + 1], &parts[at + 2], (m - at - 2) * sizeof(Part));
      --m;
    }
    if constexpr (kIds) {
      for (size_t i = 0; i + 1 < m; ++i) {
        emit(ranks_.Find(p + parts[i].start, parts[i + 1].start - parts[i].start));
      }
    }
    return m - 1;
  }

  // Same merge order as MergeSmall (lowest rank first, leftmost on ties) over a linked
  // list of parts, in O(n log n). Candidate pairs are keyed (rank << 32 | start); the
  // next one is the smaller of the head of a sorted array (read in order) and the top
  // of a min-heap that receives the pairs formed by merges. When the heap grows as
  // large as what is left of the array, it is sorted and merged into the array: long
  // runs are then handled mostly by sequential sweeps instead of heap operations. A
  // candidate whose part no longer has that pair rank is stale and skipped.
  template <bool kIds, typename Emit>
  size_t MergeLarge(const uint8_t* p, size_t n, Emit& emit) const {
    MergeScratch& s = ThreadMergeScratch();
    s.next.resize(n + 1);
    s.prev.resize(n + 1);
    s.pair_rank.resize(n + 1);
    s.sorted.clear();
    s.heap.clear();
    auto pair_rank = [&](uint32_t i) -> uint32_t {
      uint32_t j = s.next[i];
      if (j >= n) return kNoRank;
      return ranks_.Find(p + i, s.next[j] - i);
    };
    for (uint32_t i = 0; i <= n; ++i) {
      s.next[i] = i + 1;
      s.prev[i] = i == 0 ? kNoRank : i - 1;
    }
    for (uint32_t i = 0; i + 1 < n; ++i) {
      s.pair_rank[i] = ranks_.Find(p + i, 2);
      if (s.pair_rank[i] != kNoRank) s.sorted.push_back((uint64_t{s.pair_rank[i]} << 32) | i);
    }
    s.pair_rank[n - 1] = kNoRank;
    std::sort(s.sorted.begin(), s.sorted.end());
    const auto greater = std::greater<uint64_t>();
    auto push = [&](uint32_t i) {
      s.heap.push_back((uint64_t{s.pair_rank[i]} << 32) | i);
      std::push_heap(s.heap.begin(), s.heap.end(), greater);
    };
    size_t parts = n;
    size_t cursor = 0;
    for (;;) {
      if (s.heap.size() >= 64 && s.heap.size() >= s.sorted.size() - cursor) {
        std::sort(s.heap.begin(), s.heap.end());
        s.merged.clear();
        std::merge(s.sorted.begin() + static_cast<ptrdiff_t>(cursor), s.sorted.end(),
                   s.heap.begin(), s.heap.end(), std::back_inserter(s.merged));
        s.sorted.swap(s.merged);
        s.heap.clear();
        cursor = 0;
      }
      uint64_t top;
      if (!s.heap.empty() && (cursor == s.sorted.size() || s.heap.front() < s.sorted[cursor])) {
        std::pop_heap(s.heap.begin(), s.heap.end(), greater);
        top = s.heap.back();
        s.heap.pop_back();
      } else if (cursor < s.sorted.size()) {
        top = s.sorted[cursor++];
      } else {
        break;
      }
      const uint32_t rank = static_cast<uint32_t>(top >> 32);
      const uint32_t i = static_cast<uint32_t>(top);
      if (s.pair_rank[i] != rank) continue;  // stale (merged away, or its pair changed)
      const uint32_t j = s.next[i];
      const uint32_t k = s.next[j];
      s.next[i] = k;
      if (k <= n) s.prev[k] = i;
      s.pair_rank[j] = kNoRank;
      --parts;
      s.pair_rank[i] = pair_rank(i);
      if (s.pair_rank[i] != kNoRank) push(i);
      const uint32_t h = s.prev[i];
      if (h != kNoRank) {
        s.pair_rank[h] = pair_rank(h);
        if (s.pair_rank[h] != kNoRank) push(h);
      }
    }
    if constexpr (kIds) {
      for (uint32_t i = 0; i < n; i = s.next[i]) emit(ranks_.Find(p + i, s.next[i] - i));
    }
    return parts;
  }

  size_t vocab_size() const { return ranks_.size(); }

  std::optional<std::string_view> TokenBytes(uint32_t id) const {
    if (id >= spans_.size() || spans_[id].second == 0) return std::nullopt;
    return std::string_view(ranks_.arena()).substr(spans_[id].first, spans_[id].second);
  }

 private:
  Status LoadRanks(std::string_view contents) {
    size_t lines = static_cast<size_t>(std::count(contents.begin(), contents.end(), '\n')) + 1;
    ranks_.Reserve(lines, contents.size());
    std::string token;
    uint32_t max_rank = 0;
    size_t line_no = 0;
    while (!contents.empty()) {
      ++line_no;
      size_t eol = contents.find('\n');
      std::string_view line = contents.substr(0, eol);
      contents = eol == std::string_view::npos ? std::string_view() : contents.substr(eol + 1);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      auto where = [line_no] { return "rank file line " + std::to_string(line_no); };
      size_t space = line.find(' ');
      if (space == std::string_view::npos) {
        return Status::Corruption(where() + ": expected '<base64> <rank>'");
      }
      if (!DecodeBase64(line.substr(0, space), token)) {
        return Status::Corruption(where() + ": bad base64 token");
      }
      std::string_view num = line.substr(space + 1);
      uint32_t rank = 0;
      auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), rank);
      if (ec != std::errc() || ptr != num.data() + num.size() || rank == kNoRank) {
        return Status::Corruption(where() + ": bad rank '" + std::string(num) + "'");
      }
      if (!ranks_.Insert(token, rank)) {
        return Status::Corruption(where() + ": duplicate token");
      }
      max_rank = std::max(max_rank, rank);
    }
    if (ranks_.size() == 0) return Status::Corruption("rank file is empty");
    for (int b = 0; b < 256; ++b) {
      uint8_t byte = static_cast<uint8_t>(b);
      byte_rank_[b] = ranks_.Find(&byte, 1);
      if (byte_rank_[b] == kNoRank) {
        return Status::Corruption("rank file has no token for byte " + std::to_string(b));
      }
    }
    spans_ = ranks_.SpansByRank(max_rank);
    return Status::Ok();
  }

  pcre2_code* code_ = nullptr;
  bool jit_ = false;
  AsciiMatchFn ascii_match_ = nullptr;  // the pattern's ASCII fast path (bpe_ascii_split.h)
  RankTable ranks_;
  std::array<uint32_t, 256> byte_rank_{};
  std::vector<std::pair<uint32_t, uint32_t>> spans_;  // rank -> (arena offset, length)
};

BpeEncoding::BpeEncoding(std::string name, std::unique_ptr<Impl> impl)
    : name_(std::move(name)), impl_(std::move(impl)) {}

BpeEncoding::~BpeEncoding() = default;

bool BpeEncoding::IsKnownEncoding(std::string_view name) {
  return name == "o200k_base" || name == "cl100k_base";
}

Result<std::shared_ptr<const BpeEncoding>> BpeEncoding::FromTiktoken(
    std::string_view name, std::string_view file_contents) {
  if (!IsKnownEncoding(name)) {
    return Status::InvalidArgument("unknown BPE encoding '" + std::string(name) +
                                   "' (known: o200k_base, cl100k_base)");
  }
  auto impl = std::make_unique<Impl>();
  Status st = impl->Init(SplitPattern(name),
                         name == "o200k_base" ? bpe_ascii::O200kMatch : bpe_ascii::Cl100kMatch,
                         file_contents);
  if (!st.ok()) return Status(st.code(), std::string(name) + ": " + st.message());
  return std::shared_ptr<const BpeEncoding>(new BpeEncoding(std::string(name), std::move(impl)));
}

std::vector<uint32_t> BpeEncoding::Encode(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 1);
  auto emit = [&out](uint32_t id) { out.push_back(id); };
  impl_->Split(text,
               [&](const uint8_t* p, size_t n) { impl_->EncodePiece</*kIds=*/true>(p, n, emit); });
  return out;
}

int64_t BpeEncoding::Count(std::string_view text) const {
  if (std::optional<int64_t> known = impl_->memo.Find(text)) return *known;
  int64_t count = 0;
  auto ignore = [](uint32_t) {};
  impl_->Split(text, [&](const uint8_t* p, size_t n) {
    count += static_cast<int64_t>(impl_->EncodePiece</*kIds=*/false>(p, n, ignore));
  });
  impl_->memo.Put(text, count);
  return count;
}

size_t BpeEncoding::vocab_size() const { return impl_->vocab_size(); }

std::optional<std::string_view> BpeEncoding::TokenBytes(uint32_t id) const {
  return impl_->TokenBytes(id);
}

}  // namespace missy
