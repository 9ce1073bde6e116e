// Tests of daemon/net/tcp_peer.cpp: the client's row in /proc/net/tcp and tcp6.
#include "daemon/net/tcp_peer.h"

#include <gtest/gtest.h>

#include <bit>

namespace missy::net {
namespace {

// The sample rows are written as a little-endian kernel prints them.
#define SKIP_UNLESS_LITTLE_ENDIAN()                                        \
  if constexpr (std::endian::native != std::endian::little) {              \
    GTEST_SKIP() << "the sample rows are those of a little-endian kernel"; \
  }

SockAddr Addr(const char* ip, uint16_t port) {
  std::optional<SockAddr> a = SockAddr::Parse(ip, port);
  EXPECT_TRUE(a.has_value()) << ip;
  return a.value_or(SockAddr{});
}

// A daemon on 127.0.0.1:8788 (0x2254); clients on ports 41394 (0xA1B2), 41395 (0xA1B3).
constexpr const char* kProcNetTcp =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode\n"
    // The daemon's listening socket.
    "   0: 0100007F:2254 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        "
    "0 31337 1 0000000000000000 100 0 0 10 0\n"
    // Same port, wrong address: a client on 127.0.0.2:41394.
    "   1: 0200007F:A1B2 0100007F:2254 01 00000000:00000000 00:00000000 00000000  4242        "
    "0 31340 1 0000000000000000 20 4 30 10 -1\n"
    // An old connection of the same four-tuple in TIME_WAIT (its uid column reads 0).
    "   2: 0100007F:A1B2 0100007F:2254 06 00000000:00000000 03:00000F9C 00000000     0        "
    "0 0 3 0000000000000000\n"
    // The client's end: 127.0.0.1:41394 -> 127.0.0.1:8788, uid 1001.
    "   3: 0100007F:A1B2 0100007F:2254 01 00000000:00000000 00:00000000 00000000  1001        "
    "0 31338 1 0000000000000000 20 4 30 10 -1\n"
    // The daemon's end of the same connection (reversed), uid 1000.
    "   4: 0100007F:2254 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000  1000        "
    "0 31339 1 0000000000000000 20 4 30 10 -1\n"
    // A line that does not parse.
    "   5: garbage\n";

TEST(FindSocketUidTest, FindsTheClientsRowInProcNetTcp) {
  SKIP_UNLESS_LITTLE_ENDIAN();
  EXPECT_EQ(FindSocketUid(kProcNetTcp, Addr("127.0.0.1", 41394), Addr("127.0.0.1", 8788)),
            std::optional<uint32_t>(1001));
}

TEST(FindSocketUidTest, TheAddressMustMatchNotOnlyThePort) {
  SKIP_UNLESS_LITTLE_ENDIAN();
  EXPECT_EQ(FindSocketUid(kProcNetTcp, Addr("127.0.0.2", 41394), Addr("127.0.0.1", 8788)),
            std::optional<uint32_t>(4242));
  EXPECT_EQ(FindSocketUid(kProcNetTcp, Addr("127.0.0.3", 41394), Addr("127.0.0.1", 8788)),
            std::nullopt);
  // The daemon's own end is not the client's.
  EXPECT_EQ(FindSocketUid(kProcNetTcp, Addr("127.0.0.1", 8788), Addr("127.0.0.1", 41394)),
            std::optional<uint32_t>(1000));
  EXPECT_EQ(FindSocketUid(kProcNetTcp, Addr("127.0.0.1", 41395), Addr("127.0.0.1", 8788)),
            std::nullopt);
}

TEST(FindSocketUidTest, ARowInTimeWaitIsNotAnAnswer) {
  SKIP_UNLESS_LITTLE_ENDIAN();
  const std::string only_time_wait =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 0100007F:A1B2 0100007F:2254 06 00000000:00000000 03:00000F9C 00000000     0        "
      "0 0 3 0000000000000000\n";
  EXPECT_EQ(FindSocketUid(only_time_wait, Addr("127.0.0.1", 41394), Addr("127.0.0.1", 8788)),
            std::nullopt);
  EXPECT_EQ(FindSocketUid("", Addr("127.0.0.1", 41394), Addr("127.0.0.1", 8788)), std::nullopt);
}

// A daemon on [::1]:8788. ::1 is 00000000 00000000 00000000 01000000: each 32-bit word
// in host byte order. The same bytes read as one big-endian number (…00000001) are
// ::100:0, another address.
constexpr const char* kProcNetTcp6 =
    "  sl  local_address                         remote_address                        st "
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    // The daemon's listening socket.
    "   0: 00000000000000000000000001000000:2254 00000000000000000000000000000000:0000 0A "
    "00000000:00000000 00:00000000 00000000  1000        0 41000 1 0000000000000000 100 0 0 "
    "10 0\n"
    // Wrong word order: the address ::100:0, not ::1.
    "   1: 00000000000000000000000000000001:A1B2 00000000000000000000000001000000:2254 01 "
    "00000000:00000000 00:00000000 00000000  4343        0 41001 1 0000000000000000 20 4 "
    "30 10 -1\n"
    // The client's end: [::1]:41394 -> [::1]:8788, uid 1001.
    "   2: 00000000000000000000000001000000:A1B2 00000000000000000000000001000000:2254 01 "
    "00000000:00000000 00:00000000 00000000  1001        0 41002 1 0000000000000000 20 4 "
    "30 10 -1\n"
    // 2001:db8::1 (words 2001:0db8 -> B80D0120 ... 0000:0001 -> 01000000), uid 1002.
    "   3: B80D0120000000000000000001000000:A1B3 00000000000000000000000001000000:2254 01 "
    "00000000:00000000 00:00000000 00000000  1002        0 41003 1 0000000000000000 20 4 "
    "30 10 -1\n"
    // An IPv6 socket connected to the IPv4 daemon on 127.0.0.1:8788 (IPv4-mapped),
    // uid 1003.
    "   4: 0000000000000000FFFF00000100007F:A1B4 0000000000000000FFFF00000100007F:2254 01 "
    "00000000:00000000 00:00000000 00000000  1003        0 41004 1 0000000000000000 20 4 "
    "30 10 -1\n";

TEST(FindSocketUidTest, FindsTheClientsRowInProcNetTcp6) {
  SKIP_UNLESS_LITTLE_ENDIAN();
  EXPECT_EQ(FindSocketUid(kProcNetTcp6, Addr("::1", 41394), Addr("::1", 8788)),
            std::optional<uint32_t>(1001));
  EXPECT_EQ(FindSocketUid(kProcNetTcp6, Addr("2001:db8::1", 41395), Addr("::1", 8788)),
            std::optional<uint32_t>(1002));
}

TEST(FindSocketUidTest, Ipv6WordsAreInHostByteOrder) {
  SKIP_UNLESS_LITTLE_ENDIAN();
  EXPECT_EQ(FindSocketUid(kProcNetTcp6, Addr("::100:0", 41394), Addr("::1", 8788)),
            std::optional<uint32_t>(4343));
  EXPECT_EQ(FindSocketUid(kProcNetTcp6, Addr("::1", 41394), Addr("::1", 8789)), std::nullopt);
}

TEST(FindSocketUidTest, Ipv4MappedRowsOfTcp6MatchIpv4Addresses) {
  SKIP_UNLESS_LITTLE_ENDIAN();
  EXPECT_EQ(FindSocketUid(kProcNetTcp6, Addr("127.0.0.1", 41396), Addr("127.0.0.1", 8788)),
            std::optional<uint32_t>(1003));
  EXPECT_EQ(FindSocketUid(kProcNetTcp6, Addr("::ffff:127.0.0.1", 41396), Addr("127.0.0.1", 8788)),
            std::optional<uint32_t>(1003));
}

TEST(SockAddrTest, ParsesAndPrints) {
  EXPECT_EQ(Addr("127.0.0.1", 8788).ToString(), "127.0.0.1:8788");
  EXPECT_TRUE(Addr("127.0.0.1", 1).IsV4Mapped());
  EXPECT_EQ(Addr("::1", 8788).ToString(), "[::1]:8788");
  EXPECT_FALSE(Addr("::1", 1).IsV4Mapped());
  EXPECT_EQ(Addr("::ffff:127.0.0.1", 5), Addr("127.0.0.1", 5));
  EXPECT_FALSE(SockAddr::Parse("localhost", 1).has_value());
  EXPECT_FALSE(SockAddr::Parse("[::1]", 1).has_value());
}

}  // namespace
}  // namespace missy::net
