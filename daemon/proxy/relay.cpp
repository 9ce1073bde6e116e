#include "daemon/proxy/relay.h"

#include <algorithm>
#include <cctype>
#include <thread>

#include "daemon/metrics/daemon_metrics.h"

namespace missy::proxy {
namespace {

using SteadyClock = std::chrono::steady_clock;

// What the agent's connection may hold unsent before the relay waits for it.
constexpr size_t kMaxUnsent = 1 << 20;
constexpr size_t kMaxHeldBody = 8 << 20;

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

}  // namespace

provider::HeaderList ForwardHeaders(const std::map<std::string, std::string>& from_agent,
                                    const provider::HeaderList& credentials) {
  provider::HeaderList out;
  for (const auto& [name, value] : from_agent) {
    if (HopByHop(name) || name == "accept-encoding" || name.starts_with("x-missy-")) continue;
    const bool replaced = std::any_of(credentials.begin(), credentials.end(), [&](const auto& c) {
      return Lower(c.first) == name ||
             (name == "authorization" && Lower(c.first) == "x-api-key") ||
             (name == "x-api-key" && Lower(c.first) == "authorization");
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
  const std::string_view marker = reader == nullptr ? std::string_view() : reader->end_marker();
  bool holding = reader != nullptr && !streamed;
  sink.on_body = [&](std::string_view piece) {
    if (hold) {
      if (out.held_body.size() + piece.size() > kMaxHeldBody) return false;
      out.held_body.append(piece);
      return true;
    }
    out.bytes += static_cast<int64_t>(piece.size());
    if (reader != nullptr) {
      const size_t before = out.answer.size();
      out.answer.append(piece);  // read back once the agent has it (ReadBack)
      if (holding) return !stream->closed();
      if (!marker.empty()) {
        const size_t at = std::string_view(out.answer)
                              .find(marker, before - std::min(before, marker.size() - 1));
        holding = at != std::string_view::npos;
        if (holding) piece = piece.substr(0, std::max(at, before) - before);
      }
      out.held_from = before + piece.size();  // the rest is sent once the request is stored
      if (piece.empty()) return !stream->closed();
    }
    // Back-pressure: the next piece is read once the agent took most of the last ones.
    while (stream->buffered() > kMaxUnsent && !stream->closed()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (stream->closed()) {
      out.client_gone = true;
      return false;
    }
    stream->Write(std::string(piece));
    return true;
  };
  provider::StreamOutcome result =
      upstream.transport->Stream(method, upstream.target, headers, body, limits, sink);
  if (stream) {
    if (result.complete && !out.client_gone) {
      out.open_stream = stream;
    } else if (!out.client_gone) {
      // The upstream broke off: the agent sees its stream end early (and its SDK says so).
      if (out.held_from < out.answer.size()) stream->Write(out.answer.substr(out.held_from));
      out.held_from = out.answer.size();
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
  if (outcome.held_from < outcome.answer.size()) {
    outcome.open_stream->Write(outcome.answer.substr(outcome.held_from));
  }
  outcome.held_from = outcome.answer.size();
  outcome.open_stream->End();
  outcome.open_stream.reset();
}

void ReadBack(RelayOutcome& outcome, AnswerReader& reader) {
  reader.Feed(outcome.answer);
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
