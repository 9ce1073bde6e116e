// WriteBarrier: reads wait for the writes an agent may already know of. The proxy sends
// the end of an answer before the answer is stored (its commit would otherwise hold the
// last bytes of every stream); between the two, the API answers no request: one that
// comes in meanwhile runs once every write begun before it has ended. Writes begun after
// a request never hold it (no starvation under a steady stream of answers). Nothing
// blocks: a held request runs from the thread that ends the last write it waits for.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace missy {

class WriteBarrier {
 public:
  using Ticket = uint64_t;

  // A write that an agent may know of before it is stored begins.
  Ticket Begin();
  // ... and is stored (or failed): the reads that waited for it run, here.
  void End(Ticket ticket);
  // Runs `read` now when no write begun before it is open, else once they all ended.
  void WhenSettled(std::function<void()> read);
  size_t open_writes() const;

 private:
  mutable std::mutex mu_;
  Ticket next_ = 1;
  std::set<Ticket> open_;
  std::vector<std::pair<Ticket, std::function<void()>>> waiting_;  // runs once open_ < it
};

}  // namespace missy
