#include "core/calibration.h"

#include <gtest/gtest.h>

namespace missy {
namespace {

TEST(CalibrationTest, FirstSampleSetsTheRatio) {
  CalibrationState s = Update({}, 1000, 1200);
  EXPECT_DOUBLE_EQ(s.ratio, 1.2);
  EXPECT_EQ(s.samples, 1);
}

TEST(CalibrationTest, LaterSamplesAreAnExponentialMovingAverage) {
  CalibrationState s = Update({}, 1000, 1000);  // ratio 1.0
  s = Update(s, 1000, 1500);                    // 1.0 + 0.2 * (1.5 - 1.0)
  EXPECT_DOUBLE_EQ(s.ratio, 1.1);
  s = Update(s, 1000, 1500);  // 1.1 + 0.2 * 0.4
  EXPECT_DOUBLE_EQ(s.ratio, 1.18);
  EXPECT_EQ(s.samples, 3);
}

TEST(CalibrationTest, ConvergesToTheTrueRatio) {
  CalibrationState s;
  for (int i = 0; i < 10; ++i) s = Update(s, 1000, 900);  // agents see 10% fewer tokens
  EXPECT_NEAR(s.ratio, 0.9, 1e-9);
  // A model switch from 0.9 to 1.3 is followed within 30 samples.
  for (int i = 0; i < 30; ++i) s = Update(s, 1000, 1300);
  EXPECT_NEAR(s.ratio, 1.3, 0.001);
  EXPECT_GT(s.ratio, 1.29);
  EXPECT_EQ(s.samples, 40);
}

TEST(CalibrationTest, OneOutlierMovesTheRatioOnlyByAlpha) {
  CalibrationState s{1.0, 50};
  s = Update(s, 1000, 100000);  // sample clamped to 1.6 first
  EXPECT_DOUBLE_EQ(s.ratio, 1.0 + 0.2 * 0.6);
}

TEST(CalibrationTest, ClampedToTheBounds) {
  CalibrationState s = Update({}, 100, 1000);  // 10x
  EXPECT_DOUBLE_EQ(s.ratio, 1.6);
  for (int i = 0; i < 200; ++i) {
    s = Update(s, 1000, 10);
    ASSERT_GE(s.ratio, 0.7);
  }
  EXPECT_DOUBLE_EQ(s.ratio, 0.7);
  CalibrationOptions narrow;
  narrow.min_ratio = 0.9;
  narrow.max_ratio = 1.1;
  EXPECT_DOUBLE_EQ(Update({}, 100, 300, narrow).ratio, 1.1);
  EXPECT_DOUBLE_EQ(Update({}, 300, 100, narrow).ratio, 0.9);
  // A stored state outside the bounds (options changed since) is pulled back in.
  EXPECT_DOUBLE_EQ(Update({5.0, 3}, 1000, 1000).ratio, 1.6 + 0.2 * (1.0 - 1.6));
}

TEST(CalibrationTest, IgnoresGarbage) {
  const CalibrationState s{1.25, 7};
  for (auto [est, act] : {std::pair<int64_t, int64_t>{0, 100},
                          {100, 0},
                          {-5, 100},
                          {100, -5},
                          {0, 0},
                          {INT64_MIN, INT64_MAX}}) {
    CalibrationState t = Update(s, est, act);
    EXPECT_DOUBLE_EQ(t.ratio, 1.25) << est << " " << act;
    EXPECT_EQ(t.samples, 7);
  }
}

TEST(CalibrationTest, WithoutFirstSampleShortcutStartsFromOne) {
  CalibrationOptions o;
  o.first_sample_sets_ratio = false;
  EXPECT_DOUBLE_EQ(Update({}, 1000, 1500, o).ratio, 1.1);
}

TEST(CalibrationTest, CalibratedRoundsUp) {
  EXPECT_EQ(Calibrated({1.1, 3}, 100), 110);
  EXPECT_EQ(Calibrated({1.15, 3}, 101), 117);  // 116.15
  EXPECT_EQ(Calibrated({0.7, 3}, 10), 7);
  EXPECT_EQ(Calibrated({}, 12345), 12345);
  EXPECT_EQ(Calibrated({1.3, 1}, 0), 0);
}

TEST(CalibrationTest, ValidatesOptions) {
  EXPECT_TRUE(ValidateCalibrationOptions({}).ok());
  CalibrationOptions o;
  o.alpha = 0;
  EXPECT_EQ(ValidateCalibrationOptions(o).field(), "calibration.alpha");
  o = {};
  o.min_ratio = 1.2;
  EXPECT_EQ(ValidateCalibrationOptions(o).field(), "calibration.min_ratio");
  o = {};
  o.max_ratio = 0.9;
  EXPECT_EQ(ValidateCalibrationOptions(o).field(), "calibration.max_ratio");
}

}  // namespace
}  // namespace missy
