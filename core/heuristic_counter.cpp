#include "core/token_counter.h"

namespace missy {

// First version: one token per 3 bytes of ASCII, one per UTF-8 code point otherwise.
// Conservative on code, JSON and logs; refined by the tokenizer work.
int64_t HeuristicTokenCounter::Count(std::string_view text) const {
  int64_t ascii = 0;
  int64_t multibyte_chars = 0;
  for (unsigned char c : text) {
    if (c < 0x80) {
      ++ascii;
    } else if ((c & 0xC0) != 0x80) {
      ++multibyte_chars;
    }
  }
  return (ascii + 2) / 3 + multibyte_chars;
}

}  // namespace missy
