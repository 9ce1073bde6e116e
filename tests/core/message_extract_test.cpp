// Message extracts: made once per message, merged by the summarizer. What is merged from
// stored extracts must give the same summary bytes and trail as extracting the texts in
// the call; a damaged or foreign extract is ignored (the message is extracted again);
// recency and first-seen order survive the per-message encoding.
#include "core/message_extract.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/extractive_summarizer.h"
#include "core/summary_test_helpers.h"
#include "test_util.h"

namespace missy {
namespace {

using testing::HeuristicCounter;
using testing::StoredMessages;

Message Call(std::string id, std::string name, std::string arguments) {
  return Message::AssistantCalls(
      {{std::move(id), "function", std::move(name), std::move(arguments)}});
}

std::vector<Message> Sample() {
  return {
      Message::User("Fix the crash in src/server/handler.cc; decided: keep the public API."),
      Call("c1", "bash", R"({"command":"cat src/a.py src/b.py"})"),
      Message::ToolResult("c1", "Traceback (most recent call last):\nValueError: bad input\n"),
      Message::Assistant("Looking at src/b.py again, then src/a.py."),
      Call("c2", "bash", R"({"command":"pytest tests/test_a.py"})"),
      Message::ToolResult("c2", "error: 1 failed\nresult: tests/test_a.py::test_x FAILED"),
      Message::User("Also update docs/NOTES.md"),
  };
}

TEST(MessageExtract, ItemHashIsFixedAcrossBuilds) {
  // Stored with every extract: a change here would make old rows merge as new items.
  EXPECT_EQ(ItemHash(""), 738386824322594168ull);
  EXPECT_EQ(ItemHash("src/main.cpp"), 3977138477502556999ull);
  EXPECT_NE(ItemHash("src/main.cpp"), ItemHash("src/main.cp"));
  EXPECT_NE(ItemHash("abcdefgh1"), ItemHash("abcdefgh2"));
}

TEST(MessageExtract, SystemMessageHasAnEmptyExtract) {
  const std::string e = ExtractMessage(Message::System("You edit src/x.py"));
  EXPECT_EQ(e, std::string(1, static_cast<char>(kExtractVersion)) + std::string(6, '\0'));
}

TEST(MessageExtract, StoredExtractsGiveTheSameSummaryAsExtractingInTheCall) {
  const MessageTokenCounter counter = HeuristicCounter();
  const auto with = StoredMessages(Sample(), true), without = StoredMessages(Sample(), false);
  const ExtractiveSummary a = SummarizeMessages(with, "earlier work", {}, counter);
  const ExtractiveSummary b = SummarizeMessages(without, "earlier work", {}, counter);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.artifacts, b.artifacts);
  EXPECT_EQ(a.artifacts.files,
            (std::vector<std::string>{"src/server/handler.cc", "src/a.py", "src/b.py",
                                      "tests/test_a.py", "docs/NOTES.md"}));
  EXPECT_EQ(a.artifacts.errors.size(), 4u);
  EXPECT_EQ(ExtractArtifacts(with), ExtractArtifacts(without));
}

TEST(MessageExtract, RecencyFollowsTheLastMentionWithinAMessage) {
  // One message names a.py, then b.py, then a.py again: a.py is the most recent.
  // The merge holds views of the messages' extracts: they outlive it.
  const auto first =
      StoredMessages({Message::Assistant("edit src/a.py and src/b.py, then src/a.py")}, true);
  const auto second = StoredMessages({Message::User("now src/b.py")}, true);
  ExtractMerge merge(ExtractiveOptions{});
  merge.AddAll(first);
  const ItemSet& files = merge.list(kExFiles);
  ASSERT_EQ(files.items(), (std::vector<std::string_view>{"src/a.py", "src/b.py"}));
  EXPECT_EQ(files.ByRecency(), (std::vector<size_t>{0, 1}));
  // A later message naming b.py makes it the most recent; first-seen order stays.
  merge.AddAll(second);
  EXPECT_EQ(files.items(), (std::vector<std::string_view>{"src/a.py", "src/b.py"}));
  EXPECT_EQ(files.ByRecency(), (std::vector<size_t>{1, 0}));
}

TEST(MessageExtract, DamagedOrForeignExtractsAreIgnored) {
  const MessageTokenCounter counter = HeuristicCounter();
  const auto clean = StoredMessages(Sample(), false);
  const ExtractiveSummary want = SummarizeMessages(clean, "", {}, counter);
  const std::string good = ExtractMessage(Sample()[0]);
  const std::string version(1, static_cast<char>(kExtractVersion));
  for (std::string bad :
       {std::string(1, static_cast<char>(kExtractVersion + 1)) + good.substr(1),  // another
        std::string(1, static_cast<char>(kExtractVersion - 1)) + good.substr(1),  // version
        good.substr(0, good.size() - 3),                                          // cut short
        good + "x",                                                               // trailing
        version + std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff", 9),
        // well formed, but a file that is not UTF-8 (never shown)
        version +
            std::string("\x01\x03\xff\xfe"
                        "A",
                        5) +
            std::string(8, '\0') + std::string(5, '\0')}) {
    auto msgs = StoredMessages(Sample(), true);
    msgs[0].extract = bad;
    const ExtractiveSummary got = SummarizeMessages(msgs, "", {}, counter);
    EXPECT_EQ(got.text, want.text);
    EXPECT_EQ(got.artifacts, want.artifacts);
  }
  // The extract of another message stored by mistake is read as it is: the options
  // decide, not the bytes. Options other than the defaults never read stored extracts.
  ExtractiveOptions other;
  other.user_message_chars = 20;
  auto msgs = StoredMessages(Sample(), true);
  const ExtractiveSummary fresh =
      SummarizeMessages(StoredMessages(Sample(), false), "", other, counter);
  EXPECT_EQ(SummarizeMessages(msgs, "", other, counter).text, fresh.text);
  EXPECT_NE(fresh.text, want.text);
}

TEST(MessageExtract, RealTrajectoriesMergeToTheSameSummaries) {
  const std::filesystem::path dir = MISSY_SOURCE_DIR "/../shared/data/trajectories";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no trajectories at " << dir;
  const MessageTokenCounter counter = HeuristicCounter();
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".jsonl") continue;
    ++files;
    const std::vector<Message> conv = testing::LoadTrajectory(e.path().string());
    const auto with = StoredMessages(conv, true), without = StoredMessages(conv, false);
    const ExtractiveSummary a = SummarizeMessages(with, "", {}, counter);
    const ExtractiveSummary b = SummarizeMessages(without, "", {}, counter);
    EXPECT_EQ(a.text, b.text) << e.path();
    EXPECT_EQ(a.artifacts, b.artifacts) << e.path();
    EXPECT_FALSE(a.artifacts.files.empty()) << e.path();
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace missy
