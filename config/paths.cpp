#include "config/paths.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "config/config.h"

namespace missy {
namespace {

namespace fs = std::filesystem;

std::string WithoutTrailingSlash(std::string path) {
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

std::string HomeDir() {
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return home;
  struct passwd pw;
  struct passwd* result = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &result) == 0 && result != nullptr) {
    return result->pw_dir;
  }
  return "/";
}

Result<std::string> ResolveConfigPath(const std::string& value, const std::string& missy_home,
                                      const std::string& key_path) {
  fs::path p;
  if (value == "~" || value.starts_with("~/")) {
    p = fs::path(HomeDir()) / value.substr(value.size() > 1 ? 2 : 1);
  } else if (value.starts_with("~")) {
    return Status::InvalidArgument(
        key_path + ": '~user' paths are not supported, got '" + value + "'", key_path);
  } else if (fs::path(value).is_absolute()) {
    p = value;
  } else {
    p = fs::path(missy_home) / value;
  }
  return WithoutTrailingSlash(p.lexically_normal().string());
}

std::string ResolveMissyHome() {
  const char* env = std::getenv("MISSY_HOME");
  std::string home = (env != nullptr && *env != '\0') ? env : HomeDir() + "/.missy";
  if (home == "~" || home.starts_with("~/")) home = HomeDir() + home.substr(1);
  std::error_code ec;
  fs::path abs = fs::absolute(home, ec);
  return WithoutTrailingSlash((ec ? fs::path(home) : abs).lexically_normal().string());
}

}  // namespace missy
