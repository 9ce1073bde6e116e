#include "daemon/proxy/sse.h"

namespace missy::proxy {

void SseParser::Feed(std::string_view piece) {
  for (char c : piece) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // "\r\n" is one line end
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      Line(line_);
      line_.clear();
    } else {
      line_.push_back(c);
    }
  }
}

void SseParser::Finish() {
  if (!line_.empty()) {
    Line(line_);
    line_.clear();
  }
  Dispatch();
}

void SseParser::Line(std::string_view line) {
  if (line.empty()) return Dispatch();
  if (line.front() == ':') return;  // a comment
  std::string_view field = line;
  std::string_view value;
  if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "event") {
    event_.name = std::string(value);
  } else if (field == "data") {
    if (has_data_) event_.data.push_back('\n');
    event_.data.append(value);
    has_data_ = true;
  }
}

void SseParser::Dispatch() {
  if (has_data_) on_event_(event_);
  event_ = SseEvent{};
  has_data_ = false;
}

}  // namespace missy::proxy
