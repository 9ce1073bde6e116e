// The retrying client over HttpTransport and the wire formats. See provider_client.h.
#include "daemon/provider/provider_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <thread>

#include "core/utf8.h"
#include "daemon/provider/http_transport.h"
#include "daemon/provider/provider_url.h"
#include "daemon/provider/provider_wire.h"
#include "daemon/provider/retry_policy.h"

namespace missy::provider {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr size_t kMaxMessageBytes = 512;
// A key fragment this long found in a provider's text is masked too (a partial echo).
constexpr size_t kKeyFragment = 12;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Masks every run of `text` covered by a kKeyFragment-long piece of the key.
std::string MaskKeyFragments(const std::string& text, std::string_view key) {
  if (key.size() < kKeyFragment || text.size() < kKeyFragment) return text;
  std::vector<bool> masked(text.size(), false);
  bool any = false;
  for (size_t j = 0; j + kKeyFragment <= key.size(); ++j) {
    const std::string_view fragment = key.substr(j, kKeyFragment);
    for (size_t hit = text.find(fragment); hit != std::string::npos;
         hit = text.find(fragment, hit + 1)) {
      std::fill(masked.begin() + hit, masked.begin() + hit + kKeyFragment, true);
      any = true;
    }
  }
  if (!any) return text;
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!masked[i]) {
      out += text[i];
    } else if (i == 0 || !masked[i - 1]) {
      out += "***";
    }
  }
  return out;
}

// A message fit to surface: the key masked, valid UTF-8, one line, at most kMaxMessageBytes.
std::string CleanMessage(std::string_view text, std::string_view key) {
  std::string out = ToValidUtf8(MaskKeyFragments(Redact(text, key), key));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  if (out.size() > kMaxMessageBytes) {
    size_t cut = kMaxMessageBytes;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += "...";
  }
  return out;
}

double JitterUnit() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::optional<milliseconds> RetryAfterOf(const HttpAnswer& answer) {
  if (!answer.retry_after_ms.empty()) {
    if (auto ms = ParseRetryAfterMs(answer.retry_after_ms)) return ms;
  }
  if (!answer.retry_after.empty()) {
    return ParseRetryAfter(answer.retry_after, std::chrono::system_clock::now());
  }
  return std::nullopt;
}

class Client final : public ProviderClient {
 public:
  Client(ProviderKind kind, ProviderConfig config, ProviderOptions options,
         std::unique_ptr<HttpTransport> transport)
      : kind_(kind),
        config_(std::move(config)),
        options_(std::move(options)),
        transport_(std::move(transport)),
        target_(transport_->url().Target(EndpointOf(kind_))),
        description_(std::string(ProviderKindName(kind_)) + " " + config_.model + " at " +
                     transport_->url().ToString()) {}

  CompletionOutcome Complete(const CompletionRequest& request) override {
    const auto deadline = SteadyClock::now() + options_.total_timeout;
    const std::string body = EncodeRequestBody(kind_, config_.model, request);
    const HeaderList headers = AuthHeaders(kind_, config_.api_key);
    for (int attempt = 1;; ++attempt) {
      AttemptLimits limits{options_.connect_timeout, options_.handshake_timeout,
                           options_.first_byte_timeout, deadline, options_.max_response_bytes};
      if (config_.timeout_s > 0) {
        const int64_t attempt_s = std::min<int64_t>(config_.timeout_s, 24 * 3600);
        limits.deadline = std::min(deadline, SteadyClock::now() + std::chrono::seconds(attempt_s));
      }
      ProviderFailure failure;
      failure.attempts = attempt;
      bool retryable = false;
      std::optional<milliseconds> retry_after;
      auto outcome = transport_->Post(target_, headers, body, limits);
      if (auto* transport_failure = std::get_if<TransportFailure>(&outcome)) {
        failure.kind = transport_failure->kind;
        failure.message = std::move(transport_failure->message);
        retryable = IsRetryable(failure.kind);
      } else {
        HttpAnswer& answer = std::get<HttpAnswer>(outcome);
        failure.http_status = answer.status;
        if (answer.status >= 200 && answer.status < 300) {
          auto decoded = DecodeCompletion(kind_, answer.body);
          if (auto* result = std::get_if<CompletionResult>(&decoded)) {
            result->attempts = attempt;
            return std::move(*result);
          }
          failure.kind = ProviderErrorKind::kBadResponse;
          failure.message = "HTTP " + std::to_string(answer.status) + ": " +
                            std::get<DecodeError>(decoded).message;
        } else {
          ErrorVerdict verdict = ClassifyErrorAnswer(kind_, answer.status, answer.body);
          failure.kind = verdict.kind;
          failure.message = std::move(verdict.message);
          retryable = verdict.retryable;
          retry_after = RetryAfterOf(answer);
        }
      }
      failure.message = CleanMessage(failure.message, config_.api_key);
      if (!retryable || attempt >= options_.max_attempts) return failure;
      const milliseconds wait = retry_after.value_or(
          BackoffDelay(attempt, options_.backoff_base, options_.backoff_max, JitterUnit()));
      if (SteadyClock::now() + wait >= deadline) {
        failure.message += " (no time left to retry within " +
                           std::to_string(options_.total_timeout.count()) + " ms)";
        return failure;
      }
      spdlog::warn("provider {}: attempt {}/{} failed ({}: {}); retrying in {} ms", description_,
                   attempt, options_.max_attempts, ProviderErrorKindName(failure.kind),
                   failure.message, wait.count());
      std::this_thread::sleep_for(wait);
    }
  }

  std::string Describe() const override { return description_; }
  ProviderKind kind() const override { return kind_; }

 private:
  const ProviderKind kind_;
  const ProviderConfig config_;
  const ProviderOptions options_;
  const std::unique_ptr<HttpTransport> transport_;
  const std::string target_;
  const std::string description_;
};

}  // namespace

std::string_view ProviderKindName(ProviderKind kind) {
  return kind == ProviderKind::kAnthropic ? "anthropic" : "openai";
}

ProviderKind DetectProviderKind(std::string_view name, std::string_view base_url) {
  if (Lower(name).find("anthropic") != std::string::npos) return ProviderKind::kAnthropic;
  auto url = ParseBaseUrl(base_url);
  if (url.ok() && url->host.find("anthropic") != std::string::npos) {
    return ProviderKind::kAnthropic;
  }
  return ProviderKind::kOpenAi;
}

std::string_view ProviderErrorKindName(ProviderErrorKind kind) {
  switch (kind) {
    case ProviderErrorKind::kNone:
      return "none";
    case ProviderErrorKind::kContextLength:
      return "context_length";
    case ProviderErrorKind::kRateLimited:
      return "rate_limited";
    case ProviderErrorKind::kServer:
      return "server_error";
    case ProviderErrorKind::kTimeout:
      return "timeout";
    case ProviderErrorKind::kNetwork:
      return "network_error";
    case ProviderErrorKind::kTls:
      return "tls_error";
    case ProviderErrorKind::kAuth:
      return "auth_error";
    case ProviderErrorKind::kBadResponse:
      return "bad_response";
    case ProviderErrorKind::kBadRequest:
      return "bad_request";
  }
  return "unknown";
}

Status ToStatus(const ProviderFailure& failure) {
  std::string message = "provider " + std::string(ProviderErrorKindName(failure.kind)) + " after " +
                        std::to_string(failure.attempts) + " attempt(s): " + failure.message;
  if (failure.kind == ProviderErrorKind::kContextLength) {
    return Status::ContextOverflow(std::move(message));
  }
  return Status::Unavailable(std::move(message));
}

Result<std::unique_ptr<ProviderClient>> MakeProviderClient(std::string_view name,
                                                           const ProviderConfig& config,
                                                           const ProviderOptions& options) {
  const std::string field = "providers." + std::string(name);
  if (config.model.empty()) {
    return Status::InvalidArgument("provider has no model", field + ".model");
  }
  if (options.max_attempts < 1 || options.connect_timeout.count() <= 0 ||
      options.handshake_timeout.count() <= 0 || options.first_byte_timeout.count() <= 0 ||
      options.total_timeout.count() <= 0 || options.backoff_base.count() < 0 ||
      options.backoff_max.count() < 0 || options.max_response_bytes == 0) {
    return Status::InvalidArgument("provider options out of range (attempts >= 1, timeouts > 0)");
  }
  const ProviderKind kind = options.kind.value_or(DetectProviderKind(name, config.base_url));
  std::string base_url = config.base_url;
  if (base_url.empty()) {
    base_url = kind == ProviderKind::kAnthropic ? "https://api.anthropic.com"
                                                : "https://api.openai.com/v1";
  }
  auto url = ParseBaseUrl(base_url);
  if (!url.ok()) return Status::InvalidArgument(url.status().message(), field + ".base_url");
  auto transport = HttpTransport::Make(std::move(url).value(), options.ca_file);
  if (!transport.ok()) return transport.status();
  return std::unique_ptr<ProviderClient>(
      new Client(kind, config, options, std::move(transport).value()));
}

Result<std::pair<std::string, ProviderConfig>> SelectProvider(const DaemonConfig& config,
                                                              std::string_view name) {
  std::string chosen(name);
  if (chosen.empty()) chosen = config.default_provider;
  if (chosen.empty()) return Status::NotFound("no default_provider is configured");
  auto it = config.providers.find(chosen);
  if (it == config.providers.end()) {
    return Status::NotFound("no provider '" + chosen + "' under providers", "providers");
  }
  return std::make_pair(it->first, it->second);
}

}  // namespace missy::provider
