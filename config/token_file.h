// The proxy's optional token (context.proxy.token_file), read where it is checked: the
// proxy listener and the inspector page read it per request, so a changed file takes
// effect without a reload.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace missy {

// The token in `path` (surrounding blanks and newlines trimmed): "" for an empty path,
// kInternal naming the key when the file cannot be read or holds no token. The error
// never holds the file's content.
Result<std::string> ReadTokenFile(const std::string& path);

// Whether a token the client gave equals the expected one, in a time that does not
// depend on where they differ.
bool TokenEquals(std::string_view given, std::string_view expected);

}  // namespace missy
