// Where config paths point: the user's home, the Missy home, and how a configured path
// is made absolute. Reads the environment and the passwd entry; touches no file.
#pragma once

#include <string>

#include "core/status.h"

namespace missy {

// $HOME, or the passwd entry's home directory when $HOME is unset or empty ("/" if neither).
std::string HomeDir();

// A configured path made absolute and lexically normal, without a trailing '/': "~" and
// "~/x" are under HomeDir(), an absolute path stays, a relative one is under missy_home.
// InvalidArgument naming `key_path` for "~user/x" (not supported).
Result<std::string> ResolveConfigPath(const std::string& value, const std::string& missy_home,
                                      const std::string& key_path);

}  // namespace missy
