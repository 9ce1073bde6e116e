// ProxyService: proxy mode (DESIGN.md §14, docs/PROXY.md). The handler of the proxy
// listeners: an agent that points its provider base URL here sends its whole
// conversation every turn; the service stores what is new, assembles the context for
// the request's model with everything the daemon does (summaries, pruning, the pinned
// task, pair-safe cuts, memory), sends it upstream in the agent's own API shape, relays
// the answer as it streams and stores the assistant message it carried.
//
// Managed: POST /v1/messages (Anthropic), POST /v1/chat/completions and POST
// /v1/responses (OpenAI; a Responses request chained by previous_response_id is not: the
// provider holds its history). POST /v1/messages/count_tokens of a stored conversation
// counts what missyd would send. Every other request (models, ...) is forwarded unchanged
// and audited as unmanaged. A path may start with /s/{session} to name the session.
//
// Thread safety: Handle may be called from any thread; each request runs on a relay
// thread of its own, an idle one reused (RelayThreads; requests of one conversation one
// after the other). Stop() waits for them; the Services must outlive it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/net/server.h"
#include "daemon/proxy/conversations.h"
#include "daemon/proxy/parse_cache.h"
#include "daemon/proxy/relay_threads.h"
#include "daemon/proxy/upstreams.h"
#include "daemon/proxy/wire.h"

namespace missy {
struct Services;
}

namespace missy::proxy {

class ProxyService {
 public:
  explicit ProxyService(Services& services);
  ~ProxyService();  // Stop(10 s)

  void Handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange);
  // NetOptions::proxy_body_watch: for a managed request's large body, a watch comparing it
  // with the last turns' bodies as it arrives (null for the others). Any thread.
  std::shared_ptr<BodyWatch> WatchBody(const HttpRequest& head) const;
  // New requests get 503; those in progress get up to `grace` (their upstream calls are
  // not cut: an agent's answer in flight is worth finishing).
  void Stop(std::chrono::milliseconds grace);
  int in_flight() const { return active_.load(); }

 private:
  struct Call;
  void Run(const std::shared_ptr<Call>& call);
  void Managed(Call& call, Api api);
  // POST /v1/messages/count_tokens: the count of what missyd would send.
  void CountTokens(Call& call);
  // Forwarded unchanged; `reason` says why in the audit event ("" : not managed).
  void Passthrough(Call& call, std::string reason = {});

  Services& services_;
  Conversations conversations_;
  ParseCache parse_cache_;  // the last requests, so that a turn parses only what changed
  Upstreams upstreams_;
  std::atomic<int> active_{0};
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable idle_;
  RelayThreads relay_threads_;  // last: its threads are let go first (Stop waited for the tasks)
};

}  // namespace missy::proxy
