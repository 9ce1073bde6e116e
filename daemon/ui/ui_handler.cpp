#include "daemon/ui/ui_handler.h"

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "config/token_file.h"
#include "core/digest.h"
#include "daemon/http/json_io.h"
#include "daemon/ui/ui_assets.h"

namespace missy::ui {
namespace {

constexpr std::string_view kApiPrefix = "/ui/api/";
constexpr std::string_view kCookie = "missy_ui_token";

// The resources under /v1 the page may read (GET); everything else is refused.
constexpr std::array<std::string_view, 8> kReadable = {
    "health", "sessions", "summaries", "contexts", "audit", "jobs", "memory", "learnings"};

std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }


std::string Header(const HttpRequest& request, const std::string& name) {
  auto it = request.headers.find(name);
  return it == request.headers.end() ? std::string() : it->second;
}

// The host part of a Host header ("127.0.0.1:8788" -> "127.0.0.1", "[::1]:8788" -> "::1").
std::string_view HostName(std::string_view host) {
  if (host.starts_with('[')) {
    const size_t end = host.find(']');
    return end == std::string_view::npos ? std::string_view() : host.substr(1, end - 1);
  }
  return host.substr(0, host.find(':'));
}

// 127.x.y.z (four decimal parts), ::1 or localhost: names only this machine resolves.
bool LoopbackName(std::string_view name) {
  if (name == "localhost" || name == "::1") return true;
  if (!name.starts_with("127.")) return false;
  int parts = 0;
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) dot = name.size();
    const std::string_view part = name.substr(start, dot - start);
    if (part.empty() || part.size() > 3 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(std::string(part)) > 255) {
      return false;
    }
    ++parts;
    start = dot + 1;
  }
  return parts == 4;
}

std::string CookieValue(const std::string& header, std::string_view name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string_view pair = std::string_view(header).substr(pos, end - pos);
    while (pair.starts_with(' ')) pair.remove_prefix(1);
    if (pair.starts_with(name) && pair.size() > name.size() && pair[name.size()] == '=') {
      return std::string(pair.substr(name.size() + 1));
    }
    pos = end + 1;
  }
  return {};
}

// The headers every answer of the page carries.
HttpHeaderList PageHeaders(std::string_view cache) {
  return {{"Content-Security-Policy", std::string(kContentSecurityPolicy)},
          {"X-Content-Type-Options", "nosniff"},
          {"X-Frame-Options", "DENY"},
          {"Referrer-Policy", "no-referrer"},
          {"Cross-Origin-Resource-Policy", "same-origin"},
          {"Cache-Control", std::string(cache)}};
}

HttpResponse Text(int status, std::string body,
                  std::string_view content_type = "text/plain; charset=utf-8") {
  HttpResponse r;
  r.status = status;
  r.content_type = std::string(content_type);
  r.body = std::move(body);
  r.headers = PageHeaders("no-store");
  return r;
}

HttpResponse Error(int status, std::string_view code, const std::string& message) {
  HttpResponse r = http::JsonResponse(status, http::ErrorBody(code, message, ""));
  r.headers = PageHeaders("no-store");
  return r;
}

// Hands an API answer on with the page's headers added (streams included: the audit
// stream is SSE).
class PageExchange final : public HttpExchange {
 public:
  explicit PageExchange(std::shared_ptr<HttpExchange> inner) : inner_(std::move(inner)) {}
  void Send(HttpResponse response) override {
    HttpHeaderList headers = PageHeaders("no-store");
    headers.insert(headers.end(), response.headers.begin(), response.headers.end());
    response.headers = std::move(headers);
    inner_->Send(std::move(response));
  }
  std::shared_ptr<BodyStream> Stream(int status, std::string content_type) override {
    return Stream(status, std::move(content_type), {});
  }
  std::shared_ptr<BodyStream> Stream(int status, std::string content_type,
                                     HttpHeaderList extra) override {
    HttpHeaderList headers = PageHeaders("no-store");
    headers.insert(headers.end(), extra.begin(), extra.end());
    return inner_->Stream(status, std::move(content_type), std::move(headers));
  }

 private:
  std::shared_ptr<HttpExchange> inner_;
};

const UiAsset* FindAsset(std::string_view name) {
  for (const UiAsset& asset : EmbeddedAssets()) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

}  // namespace

std::string_view ContentTypeOf(std::string_view name) {
  struct Type {
    std::string_view ext, type;
  };
  static constexpr Type kTypes[] = {{".html", "text/html; charset=utf-8"},
                                    {".js", "text/javascript; charset=utf-8"},
                                    {".mjs", "text/javascript; charset=utf-8"},
                                    {".css", "text/css; charset=utf-8"},
                                    {".json", "application/json"},
                                    {".svg", "image/svg+xml"},
                                    {".png", "image/png"},
                                    {".txt", "text/plain; charset=utf-8"}};
  for (const Type& t : kTypes) {
    if (name.ends_with(t.ext)) return t.type;
  }
  return "application/octet-stream";
}

// "https://user:key@host/v1" -> "https://host/v1": a base URL may carry credentials.
std::string WithoutUserinfo(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t host = scheme + 3;
  const size_t end = url.find_first_of("/?#", host);
  const size_t at = url.rfind('@', end == std::string::npos ? url.size() : end);
  return at == std::string::npos || at < host ? url : url.substr(0, host) + url.substr(at + 1);
}

std::string ProxySummaryJson(const DaemonConfig& config) {
  boost::json::array routes;
  for (const ProxyRoute& r : config.proxy.routes) {
    auto p = config.providers.find(r.provider);
    routes.push_back(boost::json::object{
        {"model", r.model},
        {"provider", r.provider},
        {"base_url", p == config.providers.end() ? "" : WithoutUserinfo(p->second.base_url)}});
  }
  return boost::json::serialize(boost::json::object{
      {"enabled", config.proxy.enabled},
      {"upstreams",
       boost::json::object{{"anthropic", WithoutUserinfo(config.proxy.anthropic_upstream)},
                           {"openai", WithoutUserinfo(config.proxy.openai_upstream)}}},
      {"routes", std::move(routes)}});
}

UiHandler::UiHandler(UiOptions options) : options_(std::move(options)) {}

bool UiHandler::Claims(std::string_view target) {
  const std::string_view path = PathOf(target);
  return path == "/ui" || path.starts_with("/ui/");
}

// Host, Origin and token, in that order: the answer refusing `request`, or none.
std::optional<HttpResponse> UiHandler::Refusal(const HttpRequest& request,
                                               const std::string& path) const {
  // DNS rebinding: a page of another site whose name resolves to 127.0.0.1 is same-origin
  // with that name, not with ours; its requests carry its name in Host.
  const std::string host = Header(request, "host");
  if (!LoopbackName(HostName(host))) {
    return Text(403,
                "missyd inspector: open it at a loopback address "
                "(http://127.0.0.1:PORT/ui/), not by a host name\n");
  }
  const std::string origin = Header(request, "origin");
  if (!origin.empty() && origin != "http://" + host) {
    return Text(403, "missyd inspector: requests from another origin are refused\n");
  }
  Result<std::string> token =
      options_.token ? options_.token() : Result<std::string>(std::string());
  if (!token.ok()) return Text(500, "missyd inspector: " + token.status().message() + "\n");
  if (token->empty()) return std::nullopt;
  const std::string cookie = Sha256Hex(*token);
  const http::RequestTarget target = http::ParseTarget(request.target);
  auto given = target.query.find("token");
  if (given != target.query.end() && !path.starts_with(kApiPrefix) &&
      TokenEquals(given->second, *token)) {
    // Once, from the link the user opened: the cookie carries it from now on (a hash of
    // it, so the token itself is not kept by the browser), and the address bar forgets it.
    HttpResponse r = Text(303, "");
    r.headers.emplace_back("Location", path);
    r.headers.emplace_back("Set-Cookie", std::string(kCookie) + "=" + cookie +
                                             "; Path=/ui; HttpOnly; SameSite=Strict");
    return r;
  }
  const std::string header = Header(request, "x-missy-token");
  const bool ok = !header.empty()
                      ? TokenEquals(header, *token)
                      : TokenEquals(CookieValue(Header(request, "cookie"), kCookie), cookie);
  if (ok) return std::nullopt;
  return Text(401,
              "missyd inspector: a token is required (context.proxy.token_file). Open the "
              "page once as http://HOST:PORT/ui/?token=TOKEN, or send X-Missy-Token.\n");
}

void UiHandler::Handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange) const {
  const std::string path(PathOf(request.target));
  if (options_.enabled && !options_.enabled()) {
    return exchange->Send(Text(404, "missyd inspector: off (context.ui.enabled: false)\n"));
  }
  if (std::optional<HttpResponse> refused = Refusal(request, path)) {
    return exchange->Send(std::move(*refused));
  }
  // On a listener of its own (context.ui.listen) every path arrives here.
  if (path == "/ui" || path == "/") {
    HttpResponse r = Text(301, "");
    r.headers.emplace_back("Location", "/ui/");
    return exchange->Send(std::move(r));
  }
  if (!Claims(path)) return exchange->Send(Text(404, "missyd inspector: the page is at /ui/\n"));
  if (path.starts_with(kApiPrefix)) {
    return ServeApi(std::move(request), std::string_view(path).substr(kApiPrefix.size() - 1),
                    std::move(exchange));
  }
  ServeAsset(request, std::string_view(path).substr(4), *exchange);
}

void UiHandler::ServeAsset(const HttpRequest& request, std::string_view name,
                           HttpExchange& exchange) const {
  if (name.empty()) name = "index.html";
  const UiAsset* asset = FindAsset(name);
  if (asset == nullptr) return exchange.Send(Text(404, "missyd inspector: no such file\n"));
  if (request.method != "GET") {
    HttpResponse r = Text(405, "missyd inspector: only GET is served here\n");
    r.headers.emplace_back("Allow", "GET");
    return exchange.Send(std::move(r));
  }
  HttpResponse r;
  r.content_type = std::string(ContentTypeOf(asset->name));
  r.body = std::string(asset->body);
  r.headers = PageHeaders("no-cache");
  exchange.Send(std::move(r));
}

void UiHandler::ServeApi(HttpRequest request, std::string_view rest,
                         std::shared_ptr<HttpExchange> exchange) const {
  const size_t query = request.target.find('?');
  std::string target(rest);
  if (query != std::string::npos) target += request.target.substr(query);
  const http::RequestTarget parsed = http::ParseTarget(target);
  const std::vector<std::string>& seg = parsed.segments;
  if (request.method == "GET" && seg.size() == 1 && seg[0] == "proxy" && options_.config) {
    HttpResponse r;
    r.body = ProxySummaryJson(*options_.config()) + "\n";
    r.headers = PageHeaders("no-store");
    return exchange->Send(std::move(r));
  }
  bool allowed = false;
  if (request.method == "GET") {
    allowed = (seg.size() == 1 && seg[0] == "metrics") ||
              (seg.size() >= 2 && seg[0] == "v1" &&
               std::find(kReadable.begin(), kReadable.end(), seg[1]) != kReadable.end());
  } else if (request.method == "POST") {
    // Recall searches and pages a session's originals; it stores nothing. A JSON body
    // cannot be sent across origins without a preflight this handler never answers.
    allowed = seg.size() == 4 && seg[0] == "v1" && seg[1] == "sessions" && seg[3] == "recall" &&
              Header(request, "content-type").starts_with("application/json");
  } else {
    return exchange->Send(Error(405, "method_not_allowed",
                                "the inspector's API window is read-only (GET; POST recall)"));
  }
  for (const std::string& s : seg) {  // no way around the list: the router takes ".." as is
    if (s.empty() || s == "." || s == ".." || s.find('/') != std::string::npos) allowed = false;
  }
  if (!allowed) {
    return exchange->Send(Error(403, "forbidden",
                                "not readable from the inspector: " + parsed.path +
                                    " (the page reads sessions, summaries, contexts, audit, "
                                    "jobs, health and recall only)"));
  }
  request.target = std::move(target);
  options_.api(std::move(request), std::make_shared<PageExchange>(std::move(exchange)));
}

}  // namespace missy::ui
