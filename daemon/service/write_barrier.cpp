#include "daemon/service/write_barrier.h"

namespace missy {

WriteBarrier::Ticket WriteBarrier::Begin() {
  std::lock_guard lock(mu_);
  const Ticket ticket = next_++;
  open_.insert(ticket);
  return ticket;
}

void WriteBarrier::End(Ticket ticket) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lock(mu_);
    open_.erase(ticket);
    const Ticket oldest_open = open_.empty() ? next_ : *open_.begin();
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->first <= oldest_open) {
        ready.push_back(std::move(it->second));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& read : ready) read();
}

void WriteBarrier::WhenSettled(std::function<void()> read) {
  {
    std::lock_guard lock(mu_);
    if (!open_.empty()) {
      // It waits for every write begun so far: those with tickets below next_.
      waiting_.emplace_back(next_, std::move(read));
      return;
    }
  }
  read();
}

size_t WriteBarrier::open_writes() const {
  std::lock_guard lock(mu_);
  return open_.size();
}

}  // namespace missy
