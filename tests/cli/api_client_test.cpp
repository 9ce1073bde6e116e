#include "cli/api_client.h"

#include <gtest/gtest.h>

#include <string>

namespace missy::cli {
namespace {

TEST(ApiClientTest, ErrorsAreOneLineWithCodeMessageAndField) {
  ApiError e = ErrorFromResponse(
      400,
      R"({"error":{"code":"invalid_argument","message":"unknown role 'robot'","field":"messages[0].role"}})");
  EXPECT_EQ(e.http, 400);
  EXPECT_EQ(e.code, "invalid_argument");
  EXPECT_EQ(FormatError(e),
            "missyctl: invalid_argument: unknown role 'robot' (field messages[0].role)");
  e = ErrorFromResponse(
      404, R"({"error":{"code":"not_found","message":"session 'x' not found","field":""}})");
  EXPECT_EQ(FormatError(e), "missyctl: not_found: session 'x' not found");
}

TEST(ApiClientTest, ANonJsonErrorBodyIsShownByItsFirstLine) {
  ApiError e = ErrorFromResponse(502, "Bad Gateway\nmore text");
  EXPECT_EQ(FormatError(e), "missyctl: http_502: Bad Gateway");
  EXPECT_EQ(FormatError(ErrorFromResponse(500, "")), "missyctl: http_500: HTTP 500 without a body");
}

TEST(ApiClientTest, AnAbsentSocketIsUnavailableNamingIt) {
  ApiClient api("/nonexistent/dir/missyd.sock", std::chrono::milliseconds(500));
  ApiReply r = api.Get("/v1/health");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->http, 0);
  EXPECT_EQ(r.error->code, "unavailable");
  EXPECT_NE(r.error->message.find("cannot reach missyd at /nonexistent/dir/missyd.sock"),
            std::string::npos)
      << r.error->message;
}

}  // namespace
}  // namespace missy::cli
