// CalibrationStore (storage/calibration_store.cpp).
#include "storage/calibration_store.h"

#include <gtest/gtest.h>

#include "storage/database.h"
#include "storage_test_util.h"
#include "test_util.h"

namespace missy {
namespace {

class CalibrationStoreTest : public testing::TwelveMessagesTest {};

TEST_F(CalibrationStoreTest, CalibrationPerModel) {
  EXPECT_EQ(db_->calibration.Get("claude").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(db_->calibration.Put(Calibration{"claude", 1.18, 3, 50}).ok());
  ASSERT_TRUE(db_->calibration.Put(Calibration{"gpt-4o", 0.97, 1, 60}).ok());
  ASSERT_TRUE(db_->calibration.Put(Calibration{"claude", 1.21, 4, 70}).ok());
  auto c = db_->calibration.Get("claude");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->ratio, 1.21);
  EXPECT_EQ(c->samples, 4);
  EXPECT_EQ(c->updated_at_ms, 70);
  auto all = db_->calibration.List();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].model, "gpt-4o");
  EXPECT_EQ(db_->calibration.Put(Calibration{}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace missy
