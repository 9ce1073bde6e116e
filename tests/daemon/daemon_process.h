// DaemonProcess: runs the real missyd binary on a temporary MISSY_HOME for integration
// tests, and stops it on destruction. Output goes to <home>/missyd.log.
#pragma once

#include <sys/types.h>

#include <boost/json.hpp>
#include <chrono>
#include <initializer_list>
#include <string>
#include <vector>

#include "cli/http_client.h"
#include "core/status.h"

namespace missy::testing {

class DaemonProcess {
 public:
  // `config_yaml` (if not empty) is written to <home>/config.yaml before starting.
  explicit DaemonProcess(std::string home, std::string config_yaml = {});
  ~DaemonProcess();

  // Starts missyd and waits (up to `timeout`) until its API socket answers /v1/health.
  Status Start(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Sends `signal` and waits for the exit; returns the exit code (or 128+signal).
  int Stop(int signal = 15, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Runs missyd with `args` to completion (e.g. --check-config); returns the exit code
  // and fills `output` with stdout+stderr.
  int RunOnce(const std::vector<std::string>& args, std::string* output) const;

  const std::string& home() const { return home_; }
  std::string socket() const { return home_ + "/missyd.sock"; }
  std::string audit_socket() const { return home_ + "/audit.sock"; }
  std::string log() const;
  static std::string Binary(const std::string& name = "missyd");

  // One request; aborts the test's expectations with the log when the call fails.
  Result<ClientResponse> Call(const std::string& method, const std::string& target,
                              const std::string& body = {});

 private:
  std::string home_;
  pid_t pid_ = -1;
  UnixHttpConnection conn_;
};

// The JSON body of a response (a failed expectation when the call failed or the body is
// not JSON).
boost::json::value Body(const Result<ClientResponse>& r);
// The number at a path of keys: Int(v, {"budget", "total"}).
int64_t Int(const boost::json::value& v, std::initializer_list<const char*> path);
double Num(const boost::json::value& v, std::initializer_list<const char*> path);

}  // namespace missy::testing
