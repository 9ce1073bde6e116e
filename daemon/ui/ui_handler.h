// UiHandler: the inspector page (docs/INSPECTOR.md) on a loopback listener: GET /ui/ and
// its files, compiled into the binary (ui_assets.h), and /ui/api/..., a read-only window
// on the API (the browser cannot reach the API's Unix socket).
//
// Guarantees:
//  - Every answer carries a Content-Security-Policy that lets the page load, connect to
//    and frame nothing but its own origin (kContentSecurityPolicy), and
//    X-Content-Type-Options: nosniff.
//  - Only requests whose Host names a loopback address (127.x.y.z, [::1], localhost) are
//    served, and a request with an Origin must come from that host: a web page that
//    rebinds its own name to 127.0.0.1 gets 403 (the listener's uid check cannot tell a
//    browser's tabs apart).
//  - With a token (context.proxy.token_file), every request must carry it: the
//    X-Missy-Token header, the missy_ui_token cookie, or once ?token=... on a page, which
//    is answered by a redirect that sets the cookie (HttpOnly, SameSite=Strict).
//  - /ui/api/ passes to the API only GET on the read-only resources (health, sessions,
//    summaries, contexts, audit, jobs, memory, learnings, /metrics) and POST
//    /v1/sessions/{id}/recall (a search, nothing stored). GET /v1/config, imports, reloads
//    and every other write are refused (403) and never reach the API. GET /ui/api/proxy
//    is the page's own: whether proxy mode is on and where its requests go (base URLs
//    without credentials, route models and providers; never a key).
// Thread-safe; Handle never blocks (API answers complete through the exchange).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "core/status.h"
#include "daemon/net/server.h"

namespace missy::ui {

inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; "
    "script-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

struct UiOptions {
  // The in-process API (http::Api::Handle); requests arrive with their target rewritten
  // from /ui/api/v1/... to /v1/....
  HttpHandler api;
  // The token the page requires, read per request: "" when none is configured; an error
  // (an unreadable token file) refuses every request with 500.
  std::function<Result<std::string>()> token;
  // context.ui.enabled, read per request; false: every /ui request is answered 404.
  std::function<bool()> enabled;
  // The running config, for GET /ui/api/proxy (absent: that answers 404).
  std::function<std::shared_ptr<const DaemonConfig>()> config;
};

// What GET /ui/api/proxy answers for `config`: {"enabled","upstreams":{"anthropic",
// "openai"},"routes":[{"model","provider","base_url"}]}, URLs without their userinfo.
std::string ProxySummaryJson(const DaemonConfig& config);

class UiHandler {
 public:
  explicit UiHandler(UiOptions options);

  // True for the paths this handler answers: "/ui" and everything under "/ui/".
  static bool Claims(std::string_view target);

  void Handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange) const;

 private:
  std::optional<HttpResponse> Refusal(const HttpRequest& request, const std::string& path) const;
  void ServeAsset(const HttpRequest& request, std::string_view path, HttpExchange& exchange) const;
  void ServeApi(HttpRequest request, std::string_view path,
                std::shared_ptr<HttpExchange> exchange) const;

  UiOptions options_;
};

// The content type of a file by its extension ("app.js" -> "text/javascript; ...").
std::string_view ContentTypeOf(std::string_view name);

}  // namespace missy::ui
