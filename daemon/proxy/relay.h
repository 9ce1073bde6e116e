// Relay: one upstream call for one agent request. A 2xx answer is streamed to the agent
// as it arrives (status, headers, then each piece of the body, unchanged) and kept for the
// AnswerReader that rebuilds the assistant message (ReadBack, once the agent has it: no
// parse on the relay's path), except what must wait until the caller has settled the
// request (EndRelayed): from the piece that names a stream's last event on, a JSON body
// whole (the agent's request is stored before it has the whole answer). The next piece is
// read only once the agent's connection has taken the last ones (back-pressure), and an
// agent that goes away cancels the upstream call. A non-2xx answer is held back whole for
// the caller, which may retry (a context-length refusal) or pass it on (SendHeld).
// Blocking: run it on a relay thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/net/server.h"
#include "daemon/provider/http_transport.h"
#include "daemon/proxy/upstreams.h"
#include "daemon/proxy/wire.h"

namespace missy::metrics {
class DaemonMetrics;
}

namespace missy::proxy {

struct RelayOutcome {
  int status = 0;            // the upstream's status (0: no answer)
  bool relayed = false;      // the answer went to the agent (head at least)
  bool complete = false;     // the whole answer was received and handed on
  bool client_gone = false;  // the agent went away mid-answer: the upstream call was cut
  bool failed = false;       // no complete answer: `failure` says why
  provider::TransportFailure failure;
  // A non-2xx answer, held back.
  std::string held_body;
  std::string held_content_type;
  HttpHeaderList held_headers;
  int64_t first_byte_ms = 0;  // from the upstream call's start to the answer's head
  std::chrono::steady_clock::time_point head_at{};  // when the answer's head came
  int64_t bytes = 0;                                // body bytes relayed
  // A complete answer's stream to the agent, left open with its held tail: the caller
  // stores the request, then ends it (EndRelayed).
  std::shared_ptr<BodyStream> open_stream;
  // The answer's pieces as relayed (with a reader; shared with the agent's stream, not
  // copied), for ReadBack; from piece `held_from` on, not sent yet (the tail EndRelayed
  // sends).
  std::vector<std::shared_ptr<const std::string>> answer;
  size_t held_from = 0;
};

// Headers of the agent's request to send on: all but hop-by-hop ones, Host,
// Content-Length, Accept-Encoding (the answer must be readable here), the proxy's own
// (x-missy-*) and, when `credentials` is not empty, the ones it replaces.
provider::HeaderList ForwardHeaders(const std::map<std::string, std::string>& from_agent,
                                    const provider::HeaderList& credentials);

// `reader` null: nothing is rebuilt or held (a request passed through). `streamed`: the
// answer is a stream (else a JSON body, held whole until EndRelayed).
RelayOutcome Relay(const UpstreamTarget& upstream, const std::string& method,
                   const provider::HeaderList& headers, const std::string& body,
                   HttpExchange& exchange, AnswerReader* reader, bool streamed = true);

// Sends the held tail and ends the agent's stream of a complete answer (idempotent);
// returns once the agent's socket took it, or after 20 ms.
void EndRelayed(RelayOutcome& outcome);

// Hands the answer's bytes to `reader` (once the agent has them: the parse is kept off the
// relay's path) and lets them go.
void ReadBack(RelayOutcome& outcome, AnswerReader& reader);

// Counts a finished proxied request in /metrics (`metrics` may be null).
void CountRequest(metrics::DaemonMetrics* metrics, std::string_view api,
                  const std::string& upstream, const RelayOutcome& outcome,
                  std::chrono::steady_clock::time_point start);

// Passes a held answer on to the agent as it came.
void SendHeld(HttpExchange& exchange, const RelayOutcome& outcome);

}  // namespace missy::proxy
