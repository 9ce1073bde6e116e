// Small helpers shared by the test binaries.
#pragma once

#include <cstdint>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/message.h"
#include "tests/free_port.h"

namespace missy::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes all of `s` to the socket `fd` (no SIGPIPE); stops at the first failed send.
void SendAll(int fd, const std::string& s);

std::string ReadFileOrDie(const std::string& path);
void WriteFileOrDie(const std::string& path, const std::string& content);

// Path of a file under the repository's tests/data directory.
std::string TestDataPath(const std::string& name);
// Path of ../shared/data/trajectories/<name> next to the repository (empty if absent).
std::string TrajectoryPath(const std::string& name);
// The messages of a trajectory file (one OpenAI-shaped message per line); a line that
// does not parse is a test failure naming the file and line.
std::vector<Message> LoadTrajectory(const std::string& path);

// Polls `pred` every 50 ms until it holds (true) or `timeout` has passed (false).
template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// The lines of `text` (without their "\n").
inline std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Display columns of a UTF-8 line, counted apart from the code under test ("…" is one
// column, three bytes).
inline size_t CodePoints(const std::string& line) {
  size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

}  // namespace missy::testing
