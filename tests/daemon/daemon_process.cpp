#include "daemon_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace missy::testing {

namespace {

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::trunc);
  out << content;
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

DaemonProcess::DaemonProcess(std::string home, std::string config_yaml) : home_(std::move(home)) {
  if (!config_yaml.empty()) WriteFile(home_ + "/config.yaml", config_yaml);
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) Stop(SIGKILL);
}

std::string DaemonProcess::Binary(const std::string& name) {
  return std::string(MISSY_BINARY_DIR) + "/bin/" + name;
}

std::string DaemonProcess::log() const {
  std::ifstream in(home_ + "/missyd.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status DaemonProcess::Start(std::chrono::milliseconds timeout) {
  const std::string binary = Binary();
  const std::string log_path = home_ + "/missyd.log";
  pid_t pid = fork();
  if (pid < 0) return Status::Internal("fork failed");
  if (pid == 0) {
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    setenv("MISSY_HOME", home_.c_str(), 1);
    execl(binary.c_str(), binary.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  pid_ = pid;
  conn_.Close();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Status::Internal("missyd exited with " + std::to_string(ExitCodeOf(status)) +
                              " during start:\n" + log());
    }
    Result<ClientResponse> r =
        UnixHttpCall(socket(), "GET", "/v1/health", "", std::chrono::milliseconds(500));
    if (r.ok() && r->status == 200) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return Status::Unavailable("missyd did not answer within the timeout:\n" + log());
}

int DaemonProcess::Stop(int signal, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  conn_.Close();
  kill(pid_, signal);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return ExitCodeOf(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return -2;  // did not stop in time
}

int DaemonProcess::RunOnce(const std::vector<std::string>& args, std::string* output) const {
  const std::string out_path = home_ + "/runonce.out";
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    setenv("MISSY_HOME", home_.c_str(), 1);
    std::vector<char*> argv;
    std::string binary = Binary();
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {  // it should have exited by itself
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (output != nullptr) {
    std::ifstream in(out_path);
    std::stringstream ss;
    ss << in.rdbuf();
    *output = ss.str();
  }
  return ExitCodeOf(status);
}

Result<ClientResponse> DaemonProcess::Call(const std::string& method, const std::string& target,
                                           const std::string& body) {
  if (!conn_.connected()) {
    Status st = conn_.Connect(socket());
    if (!st.ok()) return st;
  }
  return conn_.Call(method, target, body);
}

boost::json::value Body(const Result<ClientResponse>& r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return boost::json::value();
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(r->body, ec);
  EXPECT_FALSE(ec) << "not JSON: " << r->body;
  return v;
}

namespace {
const boost::json::value& At(const boost::json::value& v, std::initializer_list<const char*> path) {
  const boost::json::value* cur = &v;
  for (const char* key : path) cur = &cur->at(key);
  return *cur;
}
}  // namespace

int64_t Int(const boost::json::value& v, std::initializer_list<const char*> path) {
  return At(v, path).to_number<int64_t>();
}

double Num(const boost::json::value& v, std::initializer_list<const char*> path) {
  return At(v, path).to_number<double>();
}

}  // namespace missy::testing
