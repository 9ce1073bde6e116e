#include "config/token_file.h"

#include <fstream>
#include <sstream>

namespace missy {

Result<std::string> ReadTokenFile(const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string token = text.str();
  const size_t end = token.find_last_not_of(" \t\r\n");
  const size_t start = token.find_first_not_of(" \t\r\n");
  if (!in || end == std::string::npos) {
    return Status::Internal("context.proxy.token_file cannot be read or is empty");
  }
  return token.substr(start, end - start + 1);
}

bool TokenEquals(std::string_view given, std::string_view expected) {
  if (given.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected[i]);
  }
  return diff == 0;
}

}  // namespace missy
