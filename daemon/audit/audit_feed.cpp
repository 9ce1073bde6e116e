#include "daemon/audit/audit_feed.h"

#include <utility>
#include <vector>

namespace missy {

uint64_t AuditFeed::Subscribe(Subscriber subscriber) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  subscribers_.emplace(id, std::make_shared<Subscriber>(std::move(subscriber)));
  return id;
}

void AuditFeed::Unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.erase(id);
}

void AuditFeed::Publish(int64_t seq, const std::string& type, const std::string& line) {
  std::vector<std::pair<uint64_t, std::shared_ptr<Subscriber>>> now;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (subscribers_.empty()) return;
    now.assign(subscribers_.begin(), subscribers_.end());
  }
  for (const auto& [id, s] : now) {
    if (!s->on_line(seq, type, line)) Unsubscribe(id);
  }
}

void AuditFeed::CloseAll() {
  std::map<uint64_t, std::shared_ptr<Subscriber>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(subscribers_);
  }
  for (const auto& [id, s] : all) {
    if (s->on_close) s->on_close();
  }
}

size_t AuditFeed::subscribers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return subscribers_.size();
}

}  // namespace missy
