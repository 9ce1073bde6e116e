// EndMarkerSearch: where a relayed stream's bytes start to be held back, piece by piece.
// The relay holds a stream from the name of its last event on (message_stop, [DONE],
// response.completed: the agent's SDK cannot read that event before the rest arrives)
// until the request is stored; the name may straddle pieces.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace missy::proxy {

class EndMarkerSearch {
 public:
  explicit EndMarkerSearch(std::string_view marker) : marker_(marker) {}

  // Where the held part of the next piece starts: at the name, or at 0 when the name
  // began in an earlier piece (whose bytes went out already); bytes.size() when the
  // name is not there (or the marker is empty).
  size_t Next(std::string_view bytes);

 private:
  std::string marker_;
  std::string tail_;  // the last marker_.size() - 1 bytes seen before this piece
};

}  // namespace missy::proxy
