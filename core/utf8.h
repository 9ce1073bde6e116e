// UTF-8 validity: text that reaches JSON (errors echoing a path or a query, config
// values) must be valid UTF-8, or the JSON is not.
#pragma once

#include <string>
#include <string_view>

namespace missy {

// The byte offset of the first invalid UTF-8 sequence (overlong forms, surrogates and
// code points above U+10FFFF are invalid), or std::string_view::npos.
size_t InvalidUtf8At(std::string_view text);

// `text` with each invalid byte replaced by U+FFFD.
std::string ToValidUtf8(std::string_view text);

}  // namespace missy
