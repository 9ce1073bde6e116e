#include "daemon/proxy/sse.h"

#include <cstring>

namespace missy::proxy {

void SseParser::Feed(std::string_view piece) {
  size_t p = 0;
  if (after_cr_ && !piece.empty()) {
    after_cr_ = false;
    if (piece.front() == '\n') p = 1;  // "\r\n" is one line end
  }
  while (p < piece.size()) {
    // The next line end: whole lines inside the piece are read in place, not copied.
    const char* b = piece.data();
    const void* nl = std::memchr(b + p, '\n', piece.size() - p);
    const size_t limit = nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - b)
                                       : piece.size();
    const void* cr = std::memchr(b + p, '\r', limit - p);
    size_t end = cr != nullptr ? static_cast<size_t>(static_cast<const char*>(cr) - b) : limit;
    if (end == piece.size()) {
      line_.append(piece.substr(p));
      return;
    }
    if (line_.empty()) {
      Line(piece.substr(p, end - p));
    } else {
      line_.append(piece.substr(p, end - p));
      Line(line_);
      line_.clear();
    }
    if (piece[end] == '\r') {
      if (end + 1 == piece.size()) {
        after_cr_ = true;
        return;
      }
      if (piece[end + 1] == '\n') ++end;
    }
    p = end + 1;
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
    event_.name.assign(value);
  } else if (field == "data") {
    if (has_data_) event_.data.push_back('\n');
    event_.data.append(value);
    has_data_ = true;
  }
}

void SseParser::Dispatch() {
  if (has_data_) on_event_(event_);
  // Cleared, not replaced: the next event reuses the memory (a stream is thousands of
  // small events, and two allocations each were most of the time spent reading it).
  event_.name.clear();
  event_.data.clear();
  has_data_ = false;
}

}  // namespace missy::proxy
