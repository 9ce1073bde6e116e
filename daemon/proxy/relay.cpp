#include "daemon/proxy/relay.h"

#include <algorithm>
#include <cctype>
#include <thread>

#include "daemon/metrics/daemon_metrics.h"
#include "daemon/proxy/end_marker.h"

namespace missy::proxy {
namespace {

using SteadyClock = std::chrono::steady_clock;

// What the agent's connection may hold unsent before the relay waits for it.
constexpr size_t kMaxUnsent = 1 << 20;
constexpr size_t kMaxHeldBody = 8 << 20;
// How long the end of a relayed answer waits for the agent's socket to take its bytes.
constexpr std::chrono::milliseconds kSentWait{20};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool HopByHop(const std::string& name) {
  static const char* const kNames[] = {"connection", "keep-alive", "proxy-connection",
                                       "transfer-encoding", "te", "trailer", "upgrade",
                                       "content-length", "host", "proxy-authorization",
                                       "proxy-authenticate", "server"};
  return std::any_of(std::begin(kNames), std::end(kNames),
                     [&](const char* n) { return name == n; });
}

HttpHeaderList AnswerHeaders(const provider::HeaderList& upstream, std::string* content_type) {
  HttpHeaderList out;
  for (const auto& [name, value] : upstream) {
    const std::string lower = Lower(name);
    if (lower == "content-type") {
      *content_type = value;
      continue;
    }
    if (HopByHop(lower) || lower == "content-encoding") continue;
    out.emplace_back(name, value);
  }
  return out;
}

// Writes the pieces held from outcome.held_from on.
void SendHeldPieces(RelayOutcome& outcome, BodyStream& stream) {
  for (size_t i = outcome.held_from; i < outcome.answer.size(); ++i) {
    stream.WriteShared(outcome.answer[i]);
  }
  outcome.held_from = outcome.answer.size();
}

}  // namespace

provider::HeaderList ForwardHeaders(const std::map<std::string, std::string>& from_agent,
                                    const provider::HeaderList& credentials) {
  provider::HeaderList out;
  for (const auto& [name, value] : from_agent) {
    if (HopByHop(name) || name == "accept-encoding" || name.starts_with("x-missy-")) continue;
    // (An init-capture of the binding: clang before 16 cannot capture one as it is.)
    const bool replaced =
        std::any_of(credentials.begin(), credentials.end(), [&h = name](const auto& c) {
          return Lower(c.first) == h || (h == "authorization" && Lower(c.first) == "x-api-key") ||
                 (h == "x-api-key" && Lower(c.first) == "authorization");
        });
    if (replaced) continue;
    out.emplace_back(name, value);
  }
  for (const auto& c : credentials) {
    const std::string lower = Lower(c.first);
    const bool present = std::any_of(out.begin(), out.end(),
                                     [&](const auto& h) { return Lower(h.first) == lower; });
    if (!present) out.push_back(c);
  }
  return out;
}

RelayOutcome Relay(const UpstreamTarget& upstream, const std::string& method,
                   const provider::HeaderList& headers, const std::string& body,
                   HttpExchange& exchange, AnswerReader* reader, bool streamed) {
  RelayOutcome out;
  const auto start = SteadyClock::now();
  provider::AttemptLimits limits;
  limits.connect_timeout = std::chrono::milliseconds(10000);
  limits.handshake_timeout = std::chrono::milliseconds(10000);
  limits.first_byte_timeout = std::chrono::milliseconds(std::min<int64_t>(upstream.timeout_ms, 600000));
  limits.deadline = start + std::chrono::milliseconds(upstream.timeout_ms);

  std::shared_ptr<BodyStream> stream;
  bool hold = false;
  provider::StreamSink sink;
  sink.on_head = [&](const provider::HttpHead& head) {
    out.status = head.status;
    out.head_at = SteadyClock::now();
    out.first_byte_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start).count();
    std::string content_type;
    HttpHeaderList answer_headers = AnswerHeaders(head.headers, &content_type);
    if (head.status < 200 || head.status >= 300) {
      hold = true;
      out.held_content_type = content_type.empty() ? "application/json" : content_type;
      out.held_headers = std::move(answer_headers);
      return true;
    }
    stream = exchange.Stream(head.status, content_type, std::move(answer_headers));
    out.relayed = true;
    if (stream->closed()) out.client_gone = true;
    return !out.client_gone;
  };
  // A stream's bytes from the name of its last event on are held (the agent's SDK cannot
  // read that event before the rest comes); the name may straddle two pieces.
  EndMarkerSearch end(reader == nullptr ? std::string_view() : reader->end_marker());
  bool holding = reader != nullptr && !streamed;
  sink.on_body = [&](std::string& bytes) {
    if (hold) {
      if (out.held_body.size() + bytes.size() > kMaxHeldBody) return false;
      out.held_body.append(bytes);
      return true;
    }
    out.bytes += static_cast<int64_t>(bytes.size());
    if (holding) {
      out.answer.push_back(std::make_shared<const std::string>(std::move(bytes)));
      return !stream->closed();
    }
    const size_t send = end.Next(bytes);  // the rest is sent once the request is stored
    holding = send < bytes.size();
    // Back-pressure: the next piece is read once the agent took most of the last ones.
    while (stream->buffered() > kMaxUnsent && !stream->closed()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (stream->closed()) {
      out.client_gone = true;
      return false;
    }
    std::shared_ptr<const std::string> sent;
    if (send == bytes.size()) {
      sent = std::make_shared<const std::string>(std::move(bytes));
    } else {  // the piece naming the end: its head goes now, the rest is held
      if (send > 0) sent = std::make_shared<const std::string>(bytes.substr(0, send));
      bytes.erase(0, send);
    }
    if (sent) {
      if (reader != nullptr) out.answer.push_back(sent);  // read back once the agent has it
      stream->WriteShared(std::move(sent));
      out.held_from = out.answer.size();
    }
    if (holding) out.answer.push_back(std::make_shared<const std::string>(std::move(bytes)));
    return true;
  };
  provider::StreamOutcome result =
      upstream.transport->Stream(method, upstream.target, headers, body, limits, sink);
  if (stream) {
    if (result.complete && !out.client_gone) {
      out.open_stream = stream;
    } else if (!out.client_gone) {
      // The upstream broke off: the agent sees its stream end early (and its SDK says so).
      SendHeldPieces(out, *stream);
      stream->End();
    }
  }
  out.complete = result.complete && !out.client_gone && !hold;
  if (!result.complete && !result.abandoned) {
    out.failed = true;
    out.failure = result.failure;
  }
  if (result.abandoned && hold) {
    out.failed = true;
    out.failure = provider::TransportFailure{provider::ProviderErrorKind::kBadResponse,
                                             "the upstream's error answer is too large"};
  }
  return out;
}

void CountRequest(metrics::DaemonMetrics* metrics, std::string_view api, const std::string& upstream,
                  const RelayOutcome& outcome, std::chrono::steady_clock::time_point start) {
  if (metrics == nullptr) return;
  const std::string status = outcome.status == 0 ? "none"
                                                 : std::to_string(outcome.status / 100) + "xx";
  const std::string a(api);
  metrics->proxy_requests.With({a, upstream, status}).Inc();
  if (outcome.status != 0) {
    metrics->proxy_first_byte.With({a, upstream})
        .Observe(std::chrono::duration<double>(outcome.head_at - start).count());
  }
  metrics->proxy_duration.With({a, upstream})
      .Observe(std::chrono::duration<double>(SteadyClock::now() - start).count());
  if (outcome.bytes > 0) {
    metrics->proxy_relayed_bytes.With({a, upstream}).Inc(static_cast<uint64_t>(outcome.bytes));
  }
}

void EndRelayed(RelayOutcome& outcome) {
  if (!outcome.open_stream) return;
  SendHeldPieces(outcome, *outcome.open_stream);
  outcome.open_stream->End();
  // What follows (reading the answer back, storing it) holds this thread's CPU for
  // milliseconds on a large answer, and the I/O thread just woken to write the last pieces
  // may be queued on this same CPU: it waited behind it while the other core idled (2.2 ms,
  // in the scheduler's trace of the bench). The socket takes the answer first; a reader
  // that does not keep up holds the store back by kSentWait at most.
  outcome.open_stream->WaitSent(kSentWait);
  outcome.open_stream.reset();
}

void ReadBack(RelayOutcome& outcome, AnswerReader& reader) {
  for (const auto& piece : outcome.answer) reader.Feed(*piece);
  outcome.answer.clear();
  outcome.answer.shrink_to_fit();
  outcome.held_from = 0;
}

void SendHeld(HttpExchange& exchange, const RelayOutcome& outcome) {
  HttpResponse response;
  response.status = outcome.status;
  response.content_type = outcome.held_content_type;
  response.body = outcome.held_body;
  response.headers = outcome.held_headers;
  exchange.Send(std::move(response));
}

}  // namespace missy::proxy
