// docs/CONFIG.md holds the key reference generated from the key table: every key, its
// default and what it accepts, between two markers. Run this test with
// MISSY_UPDATE_DOCS=1 to rewrite the section after changing the table.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "config/config.h"
#include "config/key_table.h"
#include "test_util.h"

namespace missy {
namespace {

constexpr std::string_view kBegin = "<!-- BEGIN GENERATED: config keys -->\n";
constexpr std::string_view kEnd = "<!-- END GENERATED: config keys -->";

std::string DocPath() { return std::string(MISSY_SOURCE_DIR) + "/docs/CONFIG.md"; }

TEST(ConfigReferenceTest, ConfigMdHoldsTheGeneratedReference) {
  std::string doc = testing::ReadFileOrDie(DocPath());
  const size_t begin = doc.find(kBegin);
  const size_t end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << "docs/CONFIG.md lacks " << kBegin;
  ASSERT_NE(end, std::string::npos) << "docs/CONFIG.md lacks " << kEnd;
  const size_t from = begin + kBegin.size();
  const std::string generated = ConfigReferenceMarkdown();
  if (std::getenv("MISSY_UPDATE_DOCS") != nullptr) {
    doc.replace(from, end - from, generated);
    testing::WriteFileOrDie(DocPath(), doc);
    return;
  }
  EXPECT_EQ(doc.substr(from, end - from), generated)
      << "docs/CONFIG.md is stale: run `MISSY_UPDATE_DOCS=1 build/tests/config_tests "
         "--gtest_filter=ConfigReferenceTest.*`";
}

TEST(ConfigReferenceTest, EveryKeyHasARowWithItsDefault) {
  const std::string generated = ConfigReferenceMarkdown();
  const DaemonConfig defaults;
  for (const ConfigKey& key : ContextKeys()) {
    const std::string row = "| `" + ContextKeyPath(key.path) + "` | `" +
                            KeyValueYaml(key, defaults) + "` |";
    EXPECT_NE(generated.find(row), std::string::npos) << row;
  }
  // Concrete rows: an integer with its bound, a choice, a path that may be empty.
  EXPECT_NE(generated.find("| `context.log_level` | `info` | trace \\| debug \\| info \\| warn "
                           "\\| error \\| critical \\| off | log verbosity |"),
            std::string::npos)
      << "pipes inside a cell must be escaped";
}

TEST(ConfigReferenceTest, AcceptedTextNamesTheRule) {
  const ConfigKey* total = FindContextKey("budget.total");
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(AcceptedText(*total).rfind("integer, ", 0), 0u) << AcceptedText(*total);
  const ConfigKey* tokenizer = FindContextKey("tokenizer");
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(AcceptedText(*tokenizer), "exact | heuristic");
  const ConfigKey* data_dir = FindContextKey("data_dir");
  ASSERT_NE(data_dir, nullptr);
  EXPECT_EQ(AcceptedText(*data_dir), "path (\"\" = not set)");
}

}  // namespace
}  // namespace missy
