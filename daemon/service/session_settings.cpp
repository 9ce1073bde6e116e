#include "daemon/service/session_settings.h"

namespace missy {

std::optional<Session> SessionSettings::Find(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  return it->second;
}

uint64_t SessionSettings::Stamp() const {
  std::lock_guard lock(mu_);
  return generation_;
}

void SessionSettings::Put(const Session& session, uint64_t stamp) {
  Session kept;
  kept.id = session.id;
  kept.model = session.model;
  kept.context_window = session.context_window;
  kept.strict = session.strict;
  kept.created_at_ms = session.created_at_ms;
  kept.summarizer_backend = session.summarizer_backend;
  kept.summarizer_provider = session.summarizer_provider;
  kept.tools_json.clear();
  kept.metadata_json.clear();
  std::lock_guard lock(mu_);
  if (stamp != generation_) return;  // a session was forgotten since the read began
  // Full: start over (the working set of a workstation is far below the bound; an
  // append of a dropped session reads its row once more).
  if (sessions_.size() >= max_sessions_ && sessions_.count(kept.id) == 0) sessions_.clear();
  sessions_[kept.id] = std::move(kept);
}

void SessionSettings::Forget(const std::string& id) {
  std::lock_guard lock(mu_);
  ++generation_;
  sessions_.erase(id);
}

size_t SessionSettings::size() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

}  // namespace missy
