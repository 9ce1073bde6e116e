#include "core/candidate_scan.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstring>

#include "core/summary_text.h"

namespace missy::extractive {

namespace {

// The trigrams (lower case) that find the phrases of ReportsError with no error word
// (PhraseAt in core/summary_text.cpp) for NextCandidate.
bool PhraseTrigram(unsigned char f0, unsigned char f1, unsigned char f2) {
  return (f0 == 'r' && f1 == 'm' && f2 == 'i') || (f0 == 'f' && f1 == 'u' && f2 == 's') ||
         (f0 == 's' && f1 == 'e' && f2 == 'g') || (f0 == 'd' && f1 == 'u' && f2 == 'm') ||
         (f0 == 'e' && f1 == 'f' && f2 == 'e') || (f0 == 'n' && f1 == 'v' && f2 == 'a');
}

// The scalar form of NextCandidate's test at s[i] (n = s.size()).
template <unsigned Set>
bool CandidateAt(const char* s, size_t i, size_t n) {
  const unsigned char r0 = s[i];
  const unsigned char r1 = i + 1 < n ? s[i + 1] : 0, r2 = i + 2 < n ? s[i + 2] : 0;
  const unsigned char f0 = r0 | 0x20, f1 = r1 | 0x20, f2 = r2 | 0x20;
  if constexpr ((Set & kColon) != 0) {
    if (r0 == ':') return true;
  }
  if constexpr ((Set & kPathChars) != 0) {
    if (r0 == '/' || (r0 == '.' && f1 >= 'a' && f1 <= 'z')) return true;
  }
  if constexpr ((Set & kErrorWords) != 0) {
    if ((f0 == 'e' && ((f1 == 'r' && f2 == 'r') || (f1 == 'x' && f2 == 'c'))) ||
        (f0 == 'f' && f1 == 'a' && (f2 == 'i' || f2 == 't')) ||
        (f0 == 'p' && f1 == 'a' && f2 == 'n') || (r0 == 'T' && r1 == 'r' && r2 == 'a') ||
        (r0 == 'N' && r1 == 'o' && r2 == ' ') || (r0 == 'n' && r1 == 'o' && r2 == 't') ||
        (r0 == '*' && r1 == '*' && r2 == ' ') || PhraseTrigram(f0, f1, f2)) {
      return true;
    }
  }
  if constexpr ((Set & kDecisionWords) != 0) {
    if (f0 == 'd' && f1 == 'e' && f2 == 'c') return true;
  }
  return false;
}

template <unsigned Set>
size_t NextCandidateOf(std::string_view text, size_t pos) {
  const char* const s = text.data();
  const size_t n = text.size();
#if defined(__SSE2__)
  // 16 start positions a step; their second and third bytes come from loads at +1 and +2.
  const __m128i lower = _mm_set1_epi8(0x20);
  auto eq = [](__m128i v, char c) { return _mm_cmpeq_epi8(v, _mm_set1_epi8(c)); };
  while (pos + 18 <= n) {
    const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + pos));
    __m128i m = _mm_setzero_si128();
    if constexpr ((Set & kColon) != 0) m = _mm_or_si128(m, eq(r0, ':'));
    if constexpr ((Set & kPathChars) != 0) {
      // '/', or '.' before a letter (an extension; a sentence's final '.' is not one).
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + pos + 1));
      const __m128i d = _mm_sub_epi8(_mm_or_si128(r1, lower), _mm_set1_epi8('a'));
      const __m128i letter1 = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(25)), d);
      m = _mm_or_si128(m, _mm_or_si128(eq(r0, '/'), _mm_and_si128(eq(r0, '.'), letter1)));
    }
    if constexpr ((Set & (kErrorWords | kDecisionWords)) != 0) {
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + pos + 1));
      const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + pos + 2));
      const __m128i f0 = _mm_or_si128(r0, lower), f1 = _mm_or_si128(r1, lower),
                    f2 = _mm_or_si128(r2, lower);
      if constexpr ((Set & kErrorWords) != 0) {
        const __m128i a1 = eq(f1, 'a');
        __m128i e = _mm_or_si128(_mm_and_si128(eq(f1, 'r'), eq(f2, 'r')),
                                 _mm_and_si128(eq(f1, 'x'), eq(f2, 'c')));
        e = _mm_and_si128(e, eq(f0, 'e'));
        e = _mm_or_si128(e, _mm_and_si128(_mm_and_si128(eq(f0, 'f'), a1),
                                          _mm_or_si128(eq(f2, 'i'), eq(f2, 't'))));
        e = _mm_or_si128(e, _mm_and_si128(_mm_and_si128(eq(f0, 'p'), a1), eq(f2, 'n')));
        e = _mm_or_si128(e, _mm_and_si128(_mm_and_si128(eq(r0, 'T'), eq(r1, 'r')), eq(r2, 'a')));
        e = _mm_or_si128(e, _mm_and_si128(_mm_and_si128(eq(r0, 'N'), eq(r1, 'o')), eq(r2, ' ')));
        e = _mm_or_si128(e, _mm_and_si128(_mm_and_si128(eq(r0, 'n'), eq(r1, 'o')), eq(r2, 't')));
        e = _mm_or_si128(e, _mm_and_si128(_mm_and_si128(eq(r0, '*'), eq(r1, '*')), eq(r2, ' ')));
        // PhraseTrigram: rmi, fus, seg, dum, efe, nva.
        const __m128i u1 = eq(f1, 'u');
        __m128i p = _mm_and_si128(_mm_and_si128(eq(f0, 'r'), eq(f1, 'm')), eq(f2, 'i'));
        p = _mm_or_si128(p,
                         _mm_and_si128(u1, _mm_or_si128(_mm_and_si128(eq(f0, 'f'), eq(f2, 's')),
                                                        _mm_and_si128(eq(f0, 'd'), eq(f2, 'm')))));
        p = _mm_or_si128(p, _mm_and_si128(_mm_and_si128(eq(f0, 's'), eq(f1, 'e')), eq(f2, 'g')));
        p = _mm_or_si128(p, _mm_and_si128(_mm_and_si128(eq(f0, 'e'), eq(f1, 'f')), eq(f2, 'e')));
        p = _mm_or_si128(p, _mm_and_si128(_mm_and_si128(eq(f0, 'n'), eq(f1, 'v')), eq(f2, 'a')));
        m = _mm_or_si128(m, _mm_or_si128(e, p));
      }
      if constexpr ((Set & kDecisionWords) != 0) {
        m = _mm_or_si128(m, _mm_and_si128(_mm_and_si128(eq(f0, 'd'), eq(f1, 'e')), eq(f2, 'c')));
      }
    }
    const int bits = _mm_movemask_epi8(m);
    if (bits != 0) return pos + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(bits)));
    pos += 16;
  }
#endif
  for (; pos < n; ++pos) {
    if (CandidateAt<Set>(s, pos, n)) return pos;
  }
  return n;
}

}  // namespace

size_t NextCandidate(std::string_view s, size_t pos, unsigned set) {
  switch (set) {
    case kColon | kErrorWords:
      return NextCandidateOf<kColon | kErrorWords>(s, pos);
    case kErrorWords:
      return NextCandidateOf<kErrorWords>(s, pos);
    case kColon | kDecisionWords:
      return NextCandidateOf<kColon | kDecisionWords>(s, pos);
    case kDecisionWords:
      return NextCandidateOf<kDecisionWords>(s, pos);
    case kPathChars:
      return NextCandidateOf<kPathChars>(s, pos);
    default:
      for (; pos < s.size(); ++pos) {
        const unsigned char c = s[pos];
        if (((set & kColon) && c == ':') ||
            ((set & kPathChars) && CandidateAt<kPathChars>(s.data(), pos, s.size())) ||
            ((set & kErrorWords) && CandidateAt<kErrorWords>(s.data(), pos, s.size())) ||
            ((set & kDecisionWords) && CandidateAt<kDecisionWords>(s.data(), pos, s.size()))) {
          return pos;
        }
      }
      return s.size();
  }
}

std::string_view LineAround(std::string_view s, size_t pos, size_t* line_end) {
  const char* const begin = s.data();
  size_t b = pos;
  while (b > 0 && begin[b - 1] != '\n') --b;
  const void* nl = std::memchr(begin + pos, '\n', s.size() - pos);
  const size_t e = nl ? static_cast<size_t>(static_cast<const char*>(nl) - begin) : s.size();
  *line_end = e;
  return Trim(s.substr(b, e - b));
}

}  // namespace missy::extractive
