// Tests of daemon/net/response_headers.cpp and of the default of the three-argument
// HttpExchange::Stream (http_exchange.cpp).
#include "daemon/net/response_headers.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "daemon/net/server.h"

namespace missy::net {
namespace {

TEST(ResponseHeadersTest, TheServerOwnsFramingHeaders) {
  for (const char* name : {"Content-Type", "content-length", "TRANSFER-ENCODING", "Connection"}) {
    EXPECT_TRUE(ServerOwnedHeader(name)) << name;
  }
  for (const char* name : {"retry-after", "request-id", "content-encoding", "connections"}) {
    EXPECT_FALSE(ServerOwnedHeader(name)) << name;
  }
}

TEST(ResponseHeadersTest, OnlyTokensAndSingleLineValuesAreValid) {
  EXPECT_TRUE(ValidHeaderField("openai-processing-ms", "12"));
  EXPECT_TRUE(ValidHeaderField("x-a_b.c~!", "v\talue with spaces"));
  EXPECT_FALSE(ValidHeaderField("", "v"));
  EXPECT_FALSE(ValidHeaderField("bad name", "v"));
  EXPECT_FALSE(ValidHeaderField("bad:name", "v"));
  EXPECT_FALSE(ValidHeaderField("x-split", "a\r\nset-cookie: evil"));
  EXPECT_FALSE(ValidHeaderField("x-lf", "a\nb"));
  EXPECT_FALSE(ValidHeaderField("x-nul", std::string_view("a\0b", 3)));
}

// An exchange written before stream headers existed: it overrides only Stream(int, type).
class TwoArgumentExchange final : public HttpExchange {
 public:
  void Send(HttpResponse) override {}
  std::shared_ptr<BodyStream> Stream(int status, std::string content_type) override {
    last_status = status;
    last_type = std::move(content_type);
    return nullptr;
  }
  int last_status = 0;
  std::string last_type;
};

TEST(HttpExchangeTest, TheHeaderOverloadFallsBackToTheTwoArgumentStream) {
  TwoArgumentExchange exchange;
  HttpExchange& base = exchange;
  base.Stream(201, "text/event-stream", {{"request-id", "req_1"}});
  EXPECT_EQ(exchange.last_status, 201);
  EXPECT_EQ(exchange.last_type, "text/event-stream");
}

}  // namespace
}  // namespace missy::net
