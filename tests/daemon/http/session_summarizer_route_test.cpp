// POST /v1/sessions with "summarizer": {backend, provider}: the session's own choice,
// validated by name, shown by GET.
#include <gtest/gtest.h>

#include "api_fixture.h"

namespace missy::testing {
namespace {

class SessionSummarizerRouteTest : public ApiFixture {};

TEST_F(SessionSummarizerRouteTest, TheChoiceIsStoredShownAndValidated) {
  ApiReply ok = Call("POST", "/v1/sessions", R"({"id":"a","summarizer":{"backend":"extractive"}})");
  ASSERT_EQ(ok.status, 201) << ok.raw;
  ApiReply got = Call("GET", "/v1/sessions/a");
  ASSERT_EQ(got.status, 200) << got.raw;
  EXPECT_EQ(got.body.at("summarizer").at("backend").as_string(), "extractive");
  EXPECT_TRUE(got.body.at("summarizer").at("provider").is_null());
  ApiReply plain = Call("POST", "/v1/sessions", R"({"id":"b"})");
  ASSERT_EQ(plain.status, 201) << plain.raw;
  EXPECT_TRUE(plain.body.at("summarizer").at("backend").is_null());

  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions", R"({"summarizer":"llm"})"), 400,
                      "invalid_argument", "summarizer"));
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions", R"({"summarizer":{"model":"m"}})"), 400,
                      "invalid_argument", "summarizer.model"));
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions", R"({"summarizer":{"backend":3}})"), 400,
                      "invalid_argument", "summarizer.backend"));
  EXPECT_TRUE(IsError(Call("POST", "/v1/sessions", R"({"summarizer":{"backend":"gpt"}})"), 400,
                      "invalid_argument", "summarizer.backend"));
  ApiReply unknown = Call("POST", "/v1/sessions", R"({"summarizer":{"provider":"nope"}})");
  EXPECT_TRUE(IsError(unknown, 400, "invalid_argument", "summarizer.provider"));
  EXPECT_NE(ErrorMessage(unknown).find("no provider 'nope'"), std::string::npos);
  EXPECT_EQ(Call("GET", "/v1/sessions").body.at("sessions").as_array().size(), 2u);
}

}  // namespace
}  // namespace missy::testing
