// SseParser: splits a text/event-stream body, fed in pieces of any size, into events
// (the "event:" name and the "data:" lines joined by "\n"), as the WHATWG spec reads
// them: comments (":" lines) and unknown fields are skipped, "\r\n", "\n" and "\r" all
// end a line. Pure; not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace missy::proxy {

struct SseEvent {
  std::string name;  // "" when the event named none ("message" per the spec)
  std::string data;
};

class SseParser {
 public:
  // `on_event` is called for every complete event, in order.
  explicit SseParser(std::function<void(const SseEvent&)> on_event)
      : on_event_(std::move(on_event)) {}

  void Feed(std::string_view piece);
  // The body ended: an event not yet closed by a blank line is dispatched.
  void Finish();

 private:
  void Line(std::string_view line);
  void Dispatch();

  std::function<void(const SseEvent&)> on_event_;
  std::string line_;
  bool after_cr_ = false;
  SseEvent event_;
  bool has_data_ = false;
};

}  // namespace missy::proxy
