// HttpTransport over httpclient::Connection (the one HTTP client, on Beast): connect and,
// for https, shake hands unless a kept-alive connection is reused; write; read the head;
// read the body, each phase bounded by its own deadline. A connection the answer keeps
// alive goes back to the transport's pool for the next request: a compaction's hundred
// requests cost one TCP connect and one TLS handshake, not a hundred.
#include "daemon/provider/http_transport.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <vector>

#include "httpclient/connection.h"

namespace missy::provider {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Idle connections kept per transport, and for how long: servers close idle connections
// after a while of their own (a reused one they closed is replaced at once, see Post).
constexpr std::size_t kMaxIdleConnections = 4;
constexpr auto kMaxIdle = std::chrono::seconds(30);

TransportFailure ToTransportFailure(const httpclient::Failure& f) {
  switch (f.kind) {
    case httpclient::FailureKind::kTimeout:
      return TransportFailure{ProviderErrorKind::kTimeout, f.message};
    case httpclient::FailureKind::kTls:
      return TransportFailure{ProviderErrorKind::kTls, f.message};
    case httpclient::FailureKind::kMalformed:
    case httpclient::FailureKind::kTooLarge:
      return TransportFailure{ProviderErrorKind::kBadResponse, f.message};
    default:
      return TransportFailure{ProviderErrorKind::kNetwork, f.message};
  }
}

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string HeaderValue(const HeaderList& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (SameName(n, name)) return v;
  }
  return {};
}

// Sets `name`, replacing any header of that name.
void SetHeader(HeaderList* headers, const std::string& name, const std::string& value) {
  std::erase_if(*headers, [&](const auto& h) { return SameName(h.first, name); });
  headers->emplace_back(name, value);
}

// A connection of the pool.
struct Pooled {
  httpclient::Connection conn;
  SteadyClock::time_point idle_since{};
};

}  // namespace

struct HttpTransport::Impl {
  BaseUrl url;
  httpclient::Endpoint endpoint;
  std::mutex mu;
  std::vector<std::unique_ptr<Pooled>> idle;  // guarded by mu; the newest last

  // The newest idle connection not idle too long, or a new (unconnected) one.
  std::unique_ptr<Pooled> Take(bool& reused) {
    {
      std::lock_guard lock(mu);
      const auto now = SteadyClock::now();
      while (!idle.empty()) {
        std::unique_ptr<Pooled> p = std::move(idle.back());
        idle.pop_back();
        if (now - p->idle_since < kMaxIdle) {
          reused = true;
          return p;
        }
      }
    }
    reused = false;
    return std::make_unique<Pooled>();
  }

  void GiveBack(std::unique_ptr<Pooled> p) {
    if (!p->conn.open()) return;
    p->idle_since = SteadyClock::now();
    std::lock_guard lock(mu);
    if (idle.size() < kMaxIdleConnections) idle.push_back(std::move(p));
  }

  // Connects unless the connection is open, writes `request` and reads the answer's head,
  // the write and the head by the first-byte deadline.
  std::optional<httpclient::Failure> SendAndReadHead(Pooled& p, const std::string& request,
                                                     const AttemptLimits& limits,
                                                     const httpclient::ReadOptions& options,
                                                     httpclient::ResponseHead* head) {
    if (!p.conn.open()) {
      if (auto failure = p.conn.Connect(endpoint, limits.connect_timeout, limits.handshake_timeout,
                                        limits.deadline)) {
        return failure;
      }
    }
    const auto first_byte =
        std::min(SteadyClock::now() + limits.first_byte_timeout, limits.deadline);
    if (auto failure = p.conn.Write(request, first_byte)) return failure;
    return p.conn.ReadHead(first_byte, options, head);
  }

  // One POST on `p`, its answer read whole.
  std::variant<HttpAnswer, httpclient::Failure> PostOn(Pooled& p, const std::string& request,
                                                       const AttemptLimits& limits) {
    httpclient::ReadOptions options;
    options.body_limit = limits.max_response_bytes;
    httpclient::ResponseHead head;
    if (auto failure = SendAndReadHead(p, request, limits, options, &head)) return *failure;
    HttpAnswer answer;
    answer.status = head.status;
    answer.retry_after = HeaderValue(head.headers, "retry-after");
    answer.retry_after_ms = HeaderValue(head.headers, "retry-after-ms");
    std::string piece;
    while (p.conn.body_pending()) {
      if (auto failure =
              p.conn.ReadBody(limits.deadline, httpclient::BodyPiece::kAllArrived, &piece)) {
        return *failure;
      }
      answer.body += piece;
    }
    return answer;
  }

  // One request on `p`, its answer handed to `sink`. *before_answer: the connection ended
  // before any byte of an answer (resending is safe).
  StreamOutcome StreamOn(Pooled& p, const std::string& request, bool head_request,
                         const AttemptLimits& limits, const StreamSink& sink, bool* before_answer) {
    StreamOutcome out;
    *before_answer = false;
    httpclient::ReadOptions options;  // no limit on the body
    options.no_body = head_request;
    httpclient::ResponseHead head;
    if (auto failure = SendAndReadHead(p, request, limits, options, &head)) {
      *before_answer = failure->before_answer;
      out.failure = ToTransportFailure(*failure);
      return out;
    }
    out.got_head = true;
    if (!sink.on_head(HttpHead{head.status, std::move(head.headers)})) {
      p.conn.Close();
      out.abandoned = true;
      return out;
    }
    std::string piece;
    while (p.conn.body_pending()) {
      // The first-byte timeout bounds each wait for the next piece (an idle stream).
      const auto idle_deadline =
          std::min(SteadyClock::now() + limits.first_byte_timeout, limits.deadline);
      if (auto failure =
              p.conn.ReadBody(idle_deadline, httpclient::BodyPiece::kAllArrived, &piece)) {
        out.failure = ToTransportFailure(*failure);
        return out;
      }
      if (!piece.empty() && !sink.on_body(piece)) {
        p.conn.Close();
        out.abandoned = true;
        return out;
      }
    }
    out.complete = true;
    return out;
  }
};

HttpTransport::HttpTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpTransport::~HttpTransport() = default;

const BaseUrl& HttpTransport::url() const { return impl_->url; }

Result<std::unique_ptr<HttpTransport>> HttpTransport::Make(BaseUrl url,
                                                           const std::string& ca_file) {
  auto impl = std::make_unique<Impl>();
  impl->endpoint.host = url.host;
  impl->endpoint.port = url.port;
  impl->endpoint.numeric_host = url.ip_literal;
  if (url.tls) {
    auto tls = httpclient::TlsContext::Make(ca_file);
    if (!tls.ok()) return tls.status();
    impl->endpoint.tls = std::move(tls).value();
  }
  impl->url = std::move(url);
  return std::unique_ptr<HttpTransport>(new HttpTransport(std::move(impl)));
}

std::variant<HttpAnswer, TransportFailure> HttpTransport::Post(const std::string& target,
                                                               const HeaderList& headers,
                                                               const std::string& body,
                                                               const AttemptLimits& limits) const {
  try {
    HeaderList all = {{"Host", impl_->url.HostHeader()},
                      {"User-Agent", "missyd"},
                      {"Content-Type", "application/json"},
                      {"Accept", "application/json"}};
    for (const auto& [name, value] : headers) SetHeader(&all, name, value);
    const std::string request = httpclient::FormatRequest("POST", target, all, body);
    bool reused = false;
    std::unique_ptr<Pooled> p = impl_->Take(reused);
    auto result = impl_->PostOn(*p, request, limits);
    const auto* failure = std::get_if<httpclient::Failure>(&result);
    if (reused && failure != nullptr && failure->before_answer &&
        SteadyClock::now() < limits.deadline) {
      // The server closed the pooled connection while it was idle: a new one at once.
      p = std::make_unique<Pooled>();
      result = impl_->PostOn(*p, request, limits);
    }
    impl_->GiveBack(std::move(p));
    if (auto* f = std::get_if<httpclient::Failure>(&result)) return ToTransportFailure(*f);
    return std::get<HttpAnswer>(std::move(result));
  } catch (const std::exception& e) {
    // Failures come back as values; this is allocation failure and the like.
    return TransportFailure{ProviderErrorKind::kNetwork,
                            std::string("request failed: ") + e.what()};
  }
}

StreamOutcome HttpTransport::Stream(const std::string& method, const std::string& target,
                                    const HeaderList& headers, const std::string& body,
                                    const AttemptLimits& limits, const StreamSink& sink) const {
  try {
    HeaderList all = {{"Host", impl_->url.HostHeader()}};
    all.insert(all.end(), headers.begin(), headers.end());
    if (HeaderValue(headers, "user-agent").empty()) all.emplace_back("User-Agent", "missyd");
    const std::string request = httpclient::FormatRequest(method, target, all, body);
    const bool head_request = method == "HEAD";
    bool reused = false;
    std::unique_ptr<Pooled> p = impl_->Take(reused);
    bool before_answer = false;
    StreamOutcome result = impl_->StreamOn(*p, request, head_request, limits, sink, &before_answer);
    if (reused && !result.got_head && before_answer && SteadyClock::now() < limits.deadline) {
      // The server closed the pooled connection while it was idle: a new one at once.
      p = std::make_unique<Pooled>();
      result = impl_->StreamOn(*p, request, head_request, limits, sink, &before_answer);
    }
    if (result.complete) impl_->GiveBack(std::move(p));
    return result;
  } catch (const std::exception& e) {
    StreamOutcome out;
    out.failure =
        TransportFailure{ProviderErrorKind::kNetwork, std::string("request failed: ") + e.what()};
    return out;
  }
}

}  // namespace missy::provider
