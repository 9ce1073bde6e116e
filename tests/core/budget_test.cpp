#include "core/budget.h"

#include <gtest/gtest.h>

#include "core/status.h"

namespace missy {
namespace {

TEST(BudgetTest, MissyDefaults) {
  TokenBudget b;
  ASSERT_TRUE(b.Validate().ok());
  const int64_t available = b.Available();
  EXPECT_EQ(available, 26000);
  EXPECT_EQ(b.MemoryBudget(available), 3900);
  EXPECT_EQ(b.LearningsBudget(available), 1300);
  EXPECT_EQ(b.HistoryBudget(available), 20800);
}

TEST(BudgetTest, MeasuredSizesReplaceReserves) {
  TokenBudget b;
  EXPECT_EQ(b.Available(500, -1), 30000 - 500 - 2000);
  EXPECT_EQ(b.Available(500, 0), 29500);
  EXPECT_EQ(b.Available(40000, 0), 0);  // never negative
}

TEST(BudgetTest, ValidationRejectsEachBadValue) {
  struct Case {
    TokenBudget budget;
    const char* field;
  };
  auto with = [](auto mutate) {
    TokenBudget b;
    mutate(b);
    return b;
  };
  const Case cases[] = {
      {with([](TokenBudget& b) { b.total = -1; }), "total"},
      {with([](TokenBudget& b) { b.memory_fraction = 1.5; }), "memory_fraction"},
      {with([](TokenBudget& b) { b.memory_fraction = -0.1; }), "memory_fraction"},
      {with([](TokenBudget& b) { b.learnings_fraction = 2; }), "learnings_fraction"},
      {with([](TokenBudget& b) { b.fresh_tail_count = -1; }), "fresh_tail_count"},
      {with([](TokenBudget& b) { b.system_reserve = 29000; }), "system_reserve"},
      {with([](TokenBudget& b) { b.tool_definitions_reserve = -5; }), "tool_definitions_reserve"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    Status s = c.budget.Validate();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.field(), c.field);
  }
}

TEST(StatusTest, MapsCodesToHttp) {
  EXPECT_EQ(HttpStatusOf(StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusOf(StatusCode::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatusOf(StatusCode::kPayloadTooLarge), 413);
  EXPECT_EQ(HttpStatusOf(StatusCode::kUnprocessable), 422);
  EXPECT_EQ(HttpStatusOf(StatusCode::kUnavailable), 503);
  EXPECT_EQ(ApiCodeOf(StatusCode::kContextOverflow), "context_overflow");
  EXPECT_EQ(Status::InvalidArgument("bad", "a.b").ToString(), "invalid_argument: a.b: bad");
}

}  // namespace
}  // namespace missy
