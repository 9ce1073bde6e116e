// AuditFeed: committed audit events handed to in-process subscribers (the HTTP event
// stream GET /v1/audit/stream), in seq order, as the audit socket gets them. Publish is
// called by AuditBus after each commit (on the writer thread) and never blocks: a
// subscriber's sink only queues. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace missy {

class AuditFeed {
 public:
  struct Subscriber {
    // One committed event's line; returns false to unsubscribe (its peer went away).
    std::function<bool(int64_t seq, const std::string& type, const std::string& line)> on_line;
    // The feed closes (shutdown): end the stream.
    std::function<void()> on_close;
  };

  // Returns the subscription's id (for Unsubscribe).
  uint64_t Subscribe(Subscriber subscriber);
  void Unsubscribe(uint64_t id);
  void Publish(int64_t seq, const std::string& type, const std::string& line);
  // Calls every subscriber's on_close and forgets them all (NetOptions::on_stopping).
  void CloseAll();
  size_t subscribers() const;

 private:
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::shared_ptr<Subscriber>> subscribers_;
};

}  // namespace missy
