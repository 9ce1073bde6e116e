#include "test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/json/parse.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/message_json.h"

namespace missy::testing {

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/missy-test-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFileOrDie(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << content;
}

std::string TestDataPath(const std::string& name) {
  return std::string(MISSY_TEST_DATA_DIR) + "/" + name;
}

std::string TrajectoryPath(const std::string& name) {
  std::filesystem::path p =
      std::filesystem::path(MISSY_SOURCE_DIR).parent_path() / "shared/data/trajectories" / name;
  return std::filesystem::exists(p) ? p.string() : std::string();
}

std::vector<Message> LoadTrajectory(const std::string& path) {
  std::vector<Message> out;
  std::ifstream f(path);
  std::string line;
  size_t n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.empty()) continue;
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(line, ec);
    Result<Message> m = ec ? Result<Message>(Status::InvalidArgument(ec.message()))
                           : ParseMessage(v, "line " + std::to_string(n));
    if (!m.ok()) {
      ADD_FAILURE() << path << ":" << n << ": " << m.status().ToString();
      continue;
    }
    out.push_back(std::move(*m));
  }
  return out;
}

}  // namespace missy::testing
