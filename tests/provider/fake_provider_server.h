// A scripted HTTP(S) server on 127.0.0.1 standing in for an LLM provider in tests. It runs
// on its own thread from construction to destruction (which stops it, cutting any reply
// still pending); the n-th request received gets the n-th scripted reply (then 500), or,
// built with RespondWith(responder), the reply the responder returns. A connection serves
// requests while the client keeps it alive and the replies allow it.
// No Asio here: only fake_provider_server.cpp includes it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace missy::provider_test {

struct Reply {
  enum class Action {
    kRespond,        // send status, headers and body
    kResetMidBody,   // send a header promising more body than sent, then reset (RST)
    kCloseNoAnswer,  // close the connection without answering
  };
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds delay{0};  // before sending anything
  Action action = Action::kRespond;
  // kRespond: answer as keeping the connection alive, then close it anyway (what a
  // server's idle timeout does to a connection the client has pooled).
  bool close_after = false;
};

struct RecordedRequest {
  std::string method, target, body;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string sni;                             // TLS server name the client sent, if any
  std::chrono::steady_clock::time_point at;    // when it was fully read
};

struct FakeServerOptions {
  std::string cert_file;  // PEM chain; with key_file, the server speaks TLS
  std::string key_file;
  bool stall_handshake = false;  // TLS: accept, then never answer the handshake
};

// Computes the reply to one request. Called on the server's thread, one request at a
// time, after the request is recorded (requests() includes it).
using Responder = std::function<Reply(const RecordedRequest&)>;
// Wraps a Responder for the constructor (so that `FakeProviderServer server({})` still
// means an empty script).
struct RespondWith {
  explicit RespondWith(Responder f) : responder(std::move(f)) {}
  Responder responder;
};

class FakeProviderServer {
 public:
  explicit FakeProviderServer(std::vector<Reply> script, FakeServerOptions options = {});
  explicit FakeProviderServer(RespondWith respond, FakeServerOptions options = {});
  ~FakeProviderServer();
  FakeProviderServer(const FakeProviderServer&) = delete;
  FakeProviderServer& operator=(const FakeProviderServer&) = delete;

  uint16_t port() const;
  // "http://127.0.0.1:PORT" (https when TLS), then `suffix` ("/v1").
  std::string Url(const std::string& suffix = "", const std::string& host = "127.0.0.1") const;
  std::vector<RecordedRequest> requests() const;
  int connections() const;  // accepted so far

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Canned answers.
std::string OpenAiAnswer(const std::string& text, const std::string& model = "gpt-test");
std::string AnthropicAnswer(const std::string& text, const std::string& model = "claude-test");
Reply Json(int status, std::string body);

}  // namespace missy::provider_test
