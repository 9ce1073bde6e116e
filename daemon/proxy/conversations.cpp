#include "daemon/proxy/conversations.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/digest.h"

namespace missy::proxy {
namespace {

std::string Header(const std::map<std::string, std::string>& headers, const std::string& name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

}  // namespace

std::string SafeSessionId(std::string_view name, size_t max) {
  std::string out;
  for (char c : name) {
    if (out.size() >= max) break;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    out.push_back(ok ? c : '_');
  }
  if (out.empty()) out = "_";
  return out;
}

Identity IdentifyConversation(const std::string& path_name,
                              const std::map<std::string, std::string>& headers,
                              const ParsedRequest& request) {
  const std::string first =
      request.messages.empty() ? std::string() : request.messages.front().hash;
  std::string named = path_name;
  std::string source = "path";
  if (named.empty()) {
    named = Header(headers, "x-missy-session");
    source = "header";
  }
  if (!named.empty()) {
    std::string id = SafeSessionId(named);
    return Identity{"name:" + id, id, source};
  }
  for (const char* h : {"x-claude-code-session-id", "session-id", "session_id"}) {
    std::string agent = Header(headers, h);
    if (agent.empty()) continue;
    // The agent's side calls (titles, summaries of its own) share its session header but
    // not its first message: each conversation is its own session.
    std::string id = "px-" + SafeSessionId(agent, 80) + "." + first.substr(0, 8);
    return Identity{"agent:" + id, id, "agent_header"};
  }
  const std::string h =
      Sha256Hex(std::string(ApiName(request.api)) + "\n" + request.system_text + "\n" + first)
          .substr(0, 16);
  return Identity{"hash:" + h, "px-" + h, "hash"};
}

size_t CommonPrefix(const std::vector<ProxyNativeRow>& stored,
                    const std::vector<NativeMessage>& incoming) {
  size_t n = 0;
  while (n < stored.size() && n < incoming.size() && stored[n].hash == incoming[n].hash) ++n;
  return n;
}

Conversations::Held Conversations::Hold(const Identity& id) {
  Slot* slot = nullptr;
  std::shared_ptr<std::mutex> mu;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<Slot>& s = slots_[id.key];
    if (!s) {
      s = std::make_unique<Slot>();
      s->conversation.key = id.key;
      s->conversation.session_id = id.session_id;
    }
    s->last_held = ++clock_;
    slot = s.get();
    mu = slot->mu;
    if (slots_.size() > kMaxLoaded) EvictLocked();
  }
  return Held(std::move(mu), &slot->conversation);
}

void Conversations::EvictLocked() {
  // Oldest first, skipping the ones held now (their mutex is taken) and the newest.
  std::vector<std::pair<uint64_t, std::string>> order;
  for (const auto& [key, slot] : slots_) order.emplace_back(slot->last_held, key);
  std::sort(order.begin(), order.end());
  size_t excess = slots_.size() - kMaxLoaded / 2;
  for (const auto& [stamp, key] : order) {
    if (excess == 0 || stamp == clock_) break;
    auto it = slots_.find(key);
    // Nobody holds it or waits for it: the map's reference is the only one.
    if (it->second->mu.use_count() != 1 || !it->second->mu->try_lock()) continue;
    it->second->mu->unlock();
    slots_.erase(it);
    --excess;
  }
}

}  // namespace missy::proxy
