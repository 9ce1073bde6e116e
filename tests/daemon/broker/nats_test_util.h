// A real nats-server for the broker tests: `nats-server -js` on 127.0.0.1 with its store
// in a test's directory, started and SIGKILLed by the test; and a reader of a stream.
#pragma once

#include <arpa/inet.h>
#include <nats/nats.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/free_port.h"

namespace missy::testing {

inline bool Accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// nats-server -js on 127.0.0.1:port with its store under `dir`.
class NatsServer {
 public:
  // `extra`: more nats-server arguments (e.g. {"--user", "u", "--pass", "p"}).
  NatsServer(int port, std::string dir, std::vector<std::string> extra = {})
      : port_(port), dir_(std::move(dir)), extra_(std::move(extra)) {}
  ~NatsServer() { Stop(); }
  bool Start() {
    pid_ = fork();
    if (pid_ == 0) {
      const std::string p = std::to_string(port_);
      const std::string log = dir_ + "/nats.log";
      std::vector<std::string> args = {"nats-server", "-js", "-a", "127.0.0.1", "-p", p,
                                        "-sd", dir_, "-l", log};
      args.insert(args.end(), extra_.begin(), extra_.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp("nats-server", argv.data());
      _exit(127);
    }
    for (int i = 0; i < 200; ++i) {  // up to 10 s
      if (Accepts(port_)) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);  // as a crash: nothing is flushed politely
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  std::string dir_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
};

struct StreamMessage {
  std::string subject, data, msg_id;
};

// Every message of `stream`, by stream sequence, read with a connection of its own.
inline std::vector<StreamMessage> ReadStream(const std::string& url, const std::string& stream) {
  std::vector<StreamMessage> out;
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  if (natsConnection_ConnectTo(&nc, url.c_str()) != NATS_OK) return out;
  if (natsConnection_JetStream(&js, nc, nullptr) == NATS_OK) {
    for (uint64_t seq = 1;; ++seq) {
      natsMsg* m = nullptr;
      jsErrCode jerr = static_cast<jsErrCode>(0);
      if (js_GetMsg(&m, js, stream.c_str(), seq, nullptr, &jerr) != NATS_OK) break;
      StreamMessage sm;
      sm.subject = natsMsg_GetSubject(m);
      sm.data.assign(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m)));
      const char* id = nullptr;
      if (natsMsgHeader_Get(m, "Nats-Msg-Id", &id) == NATS_OK && id != nullptr) sm.msg_id = id;
      out.push_back(std::move(sm));
      natsMsg_Destroy(m);
    }
    jsCtx_Destroy(js);
  }
  natsConnection_Destroy(nc);
  return out;
}

}  // namespace missy::testing
