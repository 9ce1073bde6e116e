#include "core/model_table.h"

#include <gtest/gtest.h>

#include <string>

namespace missy {
namespace {

TEST(ModelTableTest, BuiltinRowsAreValid) {
  ModelTable table = ModelTable::Builtin();
  EXPECT_GT(table.rows().size(), 20u);
  Status s = table.Validate();
  EXPECT_TRUE(s.ok()) << s.ToString();
  for (const ModelSpec& row : table.rows()) {
    EXPECT_LT(row.max_output_tokens, row.context_window) << row.pattern;
  }
}

TEST(ModelTableTest, Gpt4oWindowIsNotItsOutputLimit) {
  std::optional<ModelSpec> spec = ModelTable::Builtin().Lookup("gpt-4o");
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->context_window, 128000);
  EXPECT_NE(spec->context_window, 16384);
  EXPECT_EQ(spec->max_output_tokens, 16384);
  EXPECT_EQ(spec->InputBudget(), 128000 - 16384);
  EXPECT_EQ(spec->encoding, "o200k_base");
  EXPECT_DOUBLE_EQ(spec->factor, 1.0);
}

struct LookupCase {
  const char* model;
  const char* pattern;  // expected row; nullptr: no match
  int64_t context_window;
  int64_t max_output_tokens;
  const char* encoding;
};

TEST(ModelTableTest, BuiltinLookups) {
  const LookupCase cases[] = {
      {"gpt-4o", "gpt-4o", 128000, 16384, "o200k_base"},
      {"gpt-4o-2024-08-06", "gpt-4o", 128000, 16384, "o200k_base"},
      {"gpt-4o-mini", "gpt-4o-mini", 128000, 16384, "o200k_base"},
      {"gpt-4o-mini-2024-07-18", "gpt-4o-mini", 128000, 16384, "o200k_base"},
      {"gpt-4.1-mini", "gpt-4.1*", 1047576, 32768, "o200k_base"},
      {"gpt-5", "gpt-5*", 400000, 128000, "o200k_base"},
      {"gpt-5-mini", "gpt-5*", 400000, 128000, "o200k_base"},
      {"o3-mini", "o3*", 200000, 100000, "o200k_base"},
      {"o4-mini-2025-04-16", "o4-mini*", 200000, 100000, "o200k_base"},
      {"o1-mini", "o1-mini*", 128000, 65536, "o200k_base"},
      {"gpt-4-turbo-2024-04-09", "gpt-4-turbo*", 128000, 4096, "cl100k_base"},
      {"gpt-4-1106-preview", "gpt-4-*-preview", 128000, 4096, "cl100k_base"},
      {"gpt-4", "gpt-4", 8192, 4096, "cl100k_base"},
      {"gpt-4-0613", "gpt-4", 8192, 4096, "cl100k_base"},
      {"gpt-3.5-turbo", "gpt-3.5-turbo*", 16385, 4096, "cl100k_base"},
      {"claude-sonnet-4-20250514", "claude-*", 200000, 64000, "o200k_base"},
      {"claude-opus-4-1", "claude-opus-4*", 200000, 32000, "o200k_base"},
      {"claude-3-5-haiku-20241022", "claude-3-5*", 200000, 8192, "o200k_base"},
      {"claude-3-haiku-20240307", "claude-3*", 200000, 4096, "o200k_base"},
      {"claude-3-7-sonnet-latest", "claude-3-7*", 200000, 64000, "o200k_base"},
      {"gemini-2.5-pro", "gemini-*", 1048576, 65536, "o200k_base"},
      {"llama3.1:8b", "llama3.*", 131072, 8192, "o200k_base"},
      {"llama3:latest", "llama3:*", 8192, 2048, "o200k_base"},
      {"qwen2.5-coder:7b", "qwen*", 32768, 4096, "o200k_base"},
      {"mistral-nemo:12b", "mistral-nemo*", 131072, 8192, "o200k_base"},
      {"openai/gpt-4o", "gpt-4o", 128000, 16384, "o200k_base"},
      {"totally-unknown-model", nullptr, 0, 0, ""},
      {"", nullptr, 0, 0, ""},
  };
  ModelTable table = ModelTable::Builtin();
  for (const LookupCase& c : cases) {
    SCOPED_TRACE(c.model);
    std::optional<ModelSpec> spec = table.Lookup(c.model);
    if (c.pattern == nullptr) {
      EXPECT_FALSE(spec.has_value()) << spec->pattern;
      continue;
    }
    ASSERT_TRUE(spec.has_value());
    EXPECT_EQ(spec->pattern, c.pattern);
    EXPECT_EQ(spec->context_window, c.context_window);
    EXPECT_EQ(spec->max_output_tokens, c.max_output_tokens);
    EXPECT_EQ(spec->encoding, c.encoding);
  }
}

TEST(ModelTableTest, ClaudeUsesFactor) {
  std::optional<ModelSpec> spec = ModelTable::Builtin().Lookup("claude-sonnet-4-5");
  ASSERT_TRUE(spec.has_value());
  EXPECT_DOUBLE_EQ(spec->factor, 1.15);
}

TEST(ModelTableTest, ExactMatchBeatsLongerGlob) {
  ModelTable t;
  t.Upsert({"my-model-*", 1000, 100, "heuristic", 1.0});
  t.Upsert({"my-model-x", 2000, 200, "o200k_base", 1.0});
  t.Upsert({"my-model-x*", 3000, 300, "o200k_base", 1.0});
  EXPECT_EQ(t.Lookup("my-model-x")->context_window, 2000);
  // Not exact: the glob "my-model-x*" (10 literal chars) ties with the prefix row
  // "my-model-x" (10) and is later, so it wins; "my-model-*" (9) loses.
  EXPECT_EQ(t.Lookup("my-model-xl")->context_window, 3000);
  EXPECT_EQ(t.Lookup("my-model-y")->context_window, 1000);
}

TEST(ModelTableTest, LongestPatternWins) {
  ModelTable t;
  t.Upsert({"a*", 1000, 10, "heuristic", 1.0});
  t.Upsert({"ab*", 2000, 20, "heuristic", 1.0});
  t.Upsert({"abc*", 3000, 30, "heuristic", 1.0});
  t.Upsert({"a*z", 4000, 40, "heuristic", 1.0});
  EXPECT_EQ(t.Lookup("abcd")->context_window, 3000);
  EXPECT_EQ(t.Lookup("abd")->context_window, 2000);
  EXPECT_EQ(t.Lookup("axe")->context_window, 1000);
  EXPECT_EQ(t.Lookup("abcz")->context_window, 3000);  // abc* (3) beats a*z (2)
  EXPECT_EQ(t.Lookup("axz")->context_window, 4000);   // a*z (2) beats a* (1)
  EXPECT_FALSE(t.Lookup("bcd").has_value());
}

TEST(ModelTableTest, GlobMatchesWholeNameWithStarAnywhere) {
  ModelTable t;
  t.Upsert({"*-instruct", 1000, 10, "heuristic", 1.0});
  t.Upsert({"x*y*z", 2000, 20, "heuristic", 1.0});
  EXPECT_EQ(t.Lookup("phi-instruct")->context_window, 1000);
  EXPECT_FALSE(t.Lookup("phi-instruct-v2").has_value());
  EXPECT_EQ(t.Lookup("xyz")->context_window, 2000);
  EXPECT_EQ(t.Lookup("x-yy-y-z")->context_window, 2000);
  EXPECT_FALSE(t.Lookup("x-z").has_value());
}

TEST(ModelTableTest, CaseInsensitive) {
  ModelTable t;
  t.Upsert({"My-Model*", 1000, 10, "heuristic", 1.0});
  std::optional<ModelSpec> spec = t.Lookup("MY-MODEL-7B");
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->pattern, "My-Model*");
  EXPECT_EQ(ModelTable::Builtin().Lookup("GPT-4O")->context_window, 128000);
}

TEST(ModelTableTest, UpsertReplacesSamePatternIgnoringCase) {
  ModelTable t = ModelTable::Builtin();
  const size_t n = t.rows().size();
  t.Upsert({"GPT-4O", 64000, 8000, "o200k_base", 1.0});
  EXPECT_EQ(t.rows().size(), n);
  EXPECT_EQ(t.Lookup("gpt-4o")->context_window, 64000);
  t.Upsert({"brand-new", 64000, 8000, "o200k_base", 1.0});
  EXPECT_EQ(t.rows().size(), n + 1);
}

struct InvalidCase {
  ModelSpec spec;
  const char* field;
};

TEST(ModelTableTest, ValidateRejectsBadRows) {
  const InvalidCase cases[] = {
      {{"", 1000, 10, "o200k_base", 1.0}, "pattern"},
      {{"m", 0, 10, "o200k_base", 1.0}, "context_window"},
      {{"m", -5, 10, "o200k_base", 1.0}, "context_window"},
      {{"m", 1000, 0, "o200k_base", 1.0}, "max_output_tokens"},
      {{"m", 1000, 1000, "o200k_base", 1.0}, "max_output_tokens"},
      {{"m", 8192, 16384, "o200k_base", 1.0}, "max_output_tokens"},
      {{"m", 1000, 10, "p50k_base", 1.0}, "encoding"},
      {{"m", 1000, 10, "", 1.0}, "encoding"},
      {{"m", 1000, 10, "o200k_base", 0.0}, "factor"},
      {{"m", 1000, 10, "o200k_base", -1.0}, "factor"},
      {{"m", 1000, 10, "o200k_base", 4.01}, "factor"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(std::string(c.field) + " / " + c.spec.pattern);
    Status s = c.spec.Validate();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.field(), c.field);
  }
  EXPECT_TRUE((ModelSpec{"m", 1000, 999, "heuristic", 4.0}).Validate().ok());
}

TEST(ModelTableTest, TableValidateNamesRowIndex) {
  ModelTable t;
  t.Upsert({"ok", 1000, 10, "o200k_base", 1.0});
  t.Upsert({"bad", 1000, 2000, "o200k_base", 1.0});
  Status s = t.Validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "rows[1].max_output_tokens");
  EXPECT_NE(s.message().find("'bad'"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace missy
