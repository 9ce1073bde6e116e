#include "daemon/proxy/end_marker.h"

namespace missy::proxy {

size_t EndMarkerSearch::Next(std::string_view bytes) {
  if (marker_.empty()) return bytes.size();
  size_t held = bytes.size();
  if (!tail_.empty()) {
    std::string seam(tail_);
    seam.append(bytes.substr(0, marker_.size() - 1));
    if (seam.find(marker_) != std::string::npos) held = 0;
  }
  if (held != 0) {
    const size_t at = bytes.find(marker_);
    if (at != std::string_view::npos) held = at;
  }
  // Keep the last marker_.size() - 1 bytes of all seen so far.
  const size_t keep = marker_.size() - 1;
  if (bytes.size() >= keep) {
    tail_.assign(bytes.substr(bytes.size() - keep));
  } else {
    tail_.append(bytes);
    if (tail_.size() > keep) tail_.erase(0, tail_.size() - keep);
  }
  return held;
}

}  // namespace missy::proxy
