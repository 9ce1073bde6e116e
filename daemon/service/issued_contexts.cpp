#include "daemon/service/issued_contexts.h"

namespace missy {

void IssuedContexts::Remember(const std::string& context_id, IssuedContext context) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = contexts_.insert_or_assign(context_id, std::move(context));
  if (inserted) order_.push_back(context_id);
  while (order_.size() > capacity_) {
    contexts_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<IssuedContext> IssuedContexts::Find(const std::string& context_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = contexts_.find(context_id);
  if (it == contexts_.end()) return std::nullopt;
  return it->second;
}

size_t IssuedContexts::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return contexts_.size();
}

}  // namespace missy
