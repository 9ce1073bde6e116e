// Journal and console logging. See logging.h.
#include "daemon/ops/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace missy::ops {
namespace {

// Writes "<N>text\n"; a message of several lines gets the prefix on each line, so that
// journald files each with the message's priority.
class JournalSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit JournalSink(std::FILE* out) : out_(out) {
    set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%v", spdlog::pattern_time_type::local, std::string()));
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    const std::string_view prefix = JournalPrefix(msg.level);
    std::string line;
    line.reserve(formatted.size() + prefix.size() + 1);
    line += prefix;
    for (char c : std::string_view(formatted.data(), formatted.size())) {
      line += c;
      if (c == '\n') line += prefix;
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
  }
  void flush_() override { std::fflush(out_); }

 private:
  std::FILE* out_;
};

}  // namespace

bool StderrIsJournal() {
  const char* env = std::getenv("JOURNAL_STREAM");
  if (env == nullptr || *env == '\0') return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st;
  if (fstat(2, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

std::string_view JournalPrefix(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return "<2>";
    case spdlog::level::err:
      return "<3>";
    case spdlog::level::warn:
      return "<4>";
    case spdlog::level::info:
      return "<6>";
    default:
      return "<7>";
  }
}

std::shared_ptr<spdlog::logger> MakeJournalLogger(const std::string& name, std::FILE* out) {
  return std::make_shared<spdlog::logger>(name, std::make_shared<JournalSink>(out));
}

std::shared_ptr<spdlog::logger> MakeStderrLogger(const std::string& name, bool journal) {
  if (journal) return MakeJournalLogger(name, stderr);
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(name, sink);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  return logger;
}

}  // namespace missy::ops
