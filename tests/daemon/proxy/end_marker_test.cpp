// EndMarkerSearch (daemon/proxy/end_marker.h): where a relayed stream starts to be held,
// however the stream is cut into pieces.
#include "daemon/proxy/end_marker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace missy::proxy {
namespace {

const std::string kStream =
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":"
    "\"hi\"}}\n\nevent: message_delta\ndata: {}\n\nevent: message_stop\ndata: "
    "{\"type\":\"message_stop\"}\n\n";

// What goes out before the hold when `stream` comes in pieces of the given sizes.
std::string SentBeforeHold(const std::string& stream, const std::vector<size_t>& sizes) {
  EndMarkerSearch search("message_stop");
  std::string sent;
  size_t at = 0;
  for (size_t size : sizes) {
    const std::string piece = stream.substr(at, size);
    at += piece.size();
    const size_t held = search.Next(piece);
    sent += piece.substr(0, held);
    if (held < piece.size()) return sent;
  }
  return sent;
}

TEST(EndMarkerSearch, HoldsFromTheNameInAPiece) {
  EXPECT_EQ(SentBeforeHold(kStream, {kStream.size()}),
            kStream.substr(0, kStream.find("message_stop")));
  EndMarkerSearch none("message_stop");
  EXPECT_EQ(none.Next("event: ping\n\n"), 13u);
  EndMarkerSearch empty("");
  EXPECT_EQ(empty.Next("message_stop"), 12u);  // no marker: nothing held
}

// Every cut in two, and pieces of one byte: the hold starts at the name, or at the start
// of the piece in which a cut name ends (its first bytes went out with the piece before:
// an SDK reads no event before its blank line, so the event still waits for the store).
TEST(EndMarkerSearch, ANameCutBetweenPiecesIsFoundWhereverTheCutIs) {
  const size_t name = kStream.find("message_stop");
  const size_t name_end = name + std::string("message_stop").size();
  for (size_t cut = 1; cut < kStream.size(); ++cut) {
    SCOPED_TRACE(cut);
    const size_t held_from = cut > name && cut < name_end ? cut : name;
    EXPECT_EQ(SentBeforeHold(kStream, {cut, kStream.size() - cut}), kStream.substr(0, held_from));
  }
  const std::vector<size_t> bytes(kStream.size(), 1);
  EXPECT_EQ(SentBeforeHold(kStream, bytes), kStream.substr(0, name_end - 1));
  // Pieces of 5 bytes: the name's last byte at offset (name_end - 1) % 5 of its piece.
  std::vector<size_t> fives(kStream.size() / 5 + 1, 5);
  const size_t last_piece = (name_end - 1) / 5 * 5;
  EXPECT_EQ(SentBeforeHold(kStream, fives), kStream.substr(0, std::max(name, last_piece)));
}

}  // namespace
}  // namespace missy::proxy
