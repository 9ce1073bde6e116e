#include "core/argument_truncation.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "context_test_helpers.h"

namespace missy {
namespace {

namespace json = boost::json;
using testing::BytesCounter;

std::string Code(size_t bytes) {
  std::string out;
  for (int i = 0; out.size() < bytes; ++i) {
    out += "def handler_" + std::to_string(i) + "(event):\n    return event\n";
  }
  return out;
}

TEST(CutLevelTest, TheLongestPiecesAreCutToOneLevelAndTheShortOnesStayWhole) {
  EXPECT_EQ(CutLevel({10, 20, 100}, 60), 30);  // 10 + 20 + 30
  EXPECT_EQ(CutLevel({100, 100}, 60), 30);     // both cut
  EXPECT_EQ(CutLevel({10, 20}, 1000), 20);     // all fit: the largest
  EXPECT_EQ(CutLevel({10, 20, 100}, 0), 0);    // nothing fits
  EXPECT_EQ(CutLevel({}, 50), 0);
}

TEST(ArgumentTruncationTest, ArgumentsUnderTheCapAreKeptAsTheyAre) {
  const MessageTokenCounter counter = BytesCounter();
  const std::string args = R"({"path":"a.py","content":"x = 1"})";
  TruncatedText t = TruncateToolArguments(args, 1000, counter);
  EXPECT_FALSE(t.truncated);
  EXPECT_EQ(t.text, args);
}

TEST(ArgumentTruncationTest, AFileWrittenWholeIsCutInItsContentAndStaysOneJsonObject) {
  const MessageTokenCounter counter = BytesCounter();
  const std::string content = Code(20000);
  const std::string args = json::serialize(json::object{
      {"file_path", "services/api/handlers.py"}, {"content", content}, {"overwrite", true}});
  TruncatedText t = TruncateToolArguments(args, 2000, counter);
  ASSERT_TRUE(t.truncated);
  EXPECT_LE(t.tokens, 2000);
  EXPECT_EQ(t.tokens, counter.CountText(t.text));
  EXPECT_GT(t.tokens, 1800) << "cut to the cap, not far below it";
  boost::system::error_code ec;
  json::value doc = json::parse(t.text, ec);
  ASSERT_FALSE(ec) << t.text.substr(0, 200);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc.at("file_path"), "services/api/handlers.py");
  EXPECT_EQ(doc.at("overwrite"), true);
  const std::string sent(doc.at("content").as_string());
  EXPECT_EQ(sent.rfind("def handler_0(event):", 0), 0u) << "the head is kept";
  EXPECT_NE(sent.find(content.substr(content.size() - 40)), std::string::npos) << "the tail too";
  EXPECT_NE(sent.find("[...truncated "), std::string::npos);
}

TEST(ArgumentTruncationTest, OnlyTheLongestValuesAreCutShortOnesInArraysStayWhole) {
  const MessageTokenCounter counter = BytesCounter();
  const std::string old_text = Code(600), new_text = Code(6000);
  const std::string args = json::serialize(
      json::object{{"edits", json::array{json::object{{"old", old_text}, {"new", new_text}}}},
                   {"paths", json::array{"a.py", "b.py"}}});
  TruncatedText t = TruncateToolArguments(args, 2000, counter);
  ASSERT_TRUE(t.truncated);
  EXPECT_LE(t.tokens, 2000);
  json::value doc = json::parse(t.text);
  EXPECT_EQ(std::string(doc.at("edits").at(0).at("old").as_string()), old_text);
  EXPECT_NE(std::string(doc.at("edits").at(0).at("new").as_string()).find("[...truncated "),
            std::string::npos);
  EXPECT_EQ(doc.at("paths"), (json::array{"a.py", "b.py"}));
}

TEST(ArgumentTruncationTest, ArgumentsThatAreNotJsonAreCutAsText) {
  const MessageTokenCounter counter = BytesCounter();
  const std::string patch = "*** Begin Patch\n" + Code(8000) + "*** End Patch\n";
  TruncatedText t = TruncateToolArguments(patch, 1000, counter);
  ASSERT_TRUE(t.truncated);
  EXPECT_LE(t.tokens, 1000);
  EXPECT_EQ(t.text.rfind("*** Begin Patch\n", 0), 0u);
  EXPECT_NE(t.text.find("*** End Patch"), std::string::npos);
}

// Arguments that are one JSON string (a freeform tool's input sent as JSON text) stay one.
TEST(ArgumentTruncationTest, AJsonStringStaysAJsonString) {
  const MessageTokenCounter counter = BytesCounter();
  const std::string args = json::serialize(json::value(Code(5000)));
  TruncatedText t = TruncateToolArguments(args, 1000, counter);
  ASSERT_TRUE(t.truncated);
  EXPECT_LE(t.tokens, 1000);
  boost::system::error_code ec;
  json::value doc = json::parse(t.text, ec);
  ASSERT_FALSE(ec) << t.text.substr(0, 100);
  ASSERT_TRUE(doc.is_string());
  EXPECT_NE(std::string(doc.as_string()).find("[...truncated "), std::string::npos);
}

// Values shorter than a marker would only grow: the arguments go whole, not truncated,
// and the caller sees their count over the cap.
TEST(ArgumentTruncationTest, ValuesShorterThanTheMarkerAreNotCut) {
  const MessageTokenCounter counter = BytesCounter();
  json::object o;
  for (int i = 0; i < 50; ++i) o["key_" + std::to_string(i)] = "value number " + std::to_string(i);
  const std::string args = json::serialize(o);
  TruncatedText t = TruncateToolArguments(args, 100, counter);
  EXPECT_FALSE(t.truncated);
  EXPECT_EQ(t.text, args);
  EXPECT_EQ(t.tokens, counter.CountText(args));
}

// Some values long enough to cut, under a cap the keys alone exceed: the smallest form,
// still one document, over the cap by what the keys take.
TEST(ArgumentTruncationTest, UnderACapTheKeysExceedTheSmallestValidFormIsSent) {
  const MessageTokenCounter counter = BytesCounter();
  json::object o;
  for (int i = 0; i < 20; ++i) o["key_" + std::to_string(i)] = Code(400);
  const std::string args = json::serialize(o);
  TruncatedText t = TruncateToolArguments(args, 100, counter);
  EXPECT_TRUE(t.truncated);
  EXPECT_GT(t.tokens, 100);
  EXPECT_LT(t.tokens, counter.CountText(args) / 4);
  boost::system::error_code ec;
  json::value doc = json::parse(t.text, ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(doc.as_object().size(), 20u);
}

}  // namespace
}  // namespace missy
