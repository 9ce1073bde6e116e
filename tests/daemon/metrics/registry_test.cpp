// Tests of daemon/metrics/registry.cpp: the exact Prometheus text for a known sequence of
// updates, escaping, and the programming errors it refuses.
#include "daemon/metrics/registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

namespace missy::metrics {
namespace {

TEST(MetricsRegistryTest, EncodesAKnownSequenceExactly) {
  Registry r;
  CounterFamily& requests = r.AddCounter("app_requests_total", "Requests.", {"method", "status"});
  GaugeFamily& temp = r.AddGauge("app_temperature", "Current temperature.");
  HistogramFamily& latency =
      r.AddHistogram("app_latency_seconds", "Latency.", {"route"}, {0.125, 0.5, 1});
  CounterFamily& empty = r.AddCounter("app_never_total", "Never bumped.", {"kind"});
  (void)empty;

  requests.With({"POST", "201"}).Inc();
  requests.With({"GET", "200"}).Inc(2);
  requests.With({"GET", "404"}).Inc();
  requests.With({"GET", "200"}).Inc();
  temp.With({}).Set(21.5);
  temp.With({}).Add(-0.25);
  latency.With({"/b"}).Observe(0.0625);
  latency.With({"/b"}).Observe(0.125);  // on a bound: counts in that bucket ("le")
  latency.With({"/b"}).Observe(0.75);
  latency.With({"/b"}).Observe(3);
  latency.With({"/a"}).Observe(0.5);

  EXPECT_EQ(r.Encode(),
            "# HELP app_requests_total Requests.\n"
            "# TYPE app_requests_total counter\n"
            "app_requests_total{method=\"GET\",status=\"200\"} 3\n"
            "app_requests_total{method=\"GET\",status=\"404\"} 1\n"
            "app_requests_total{method=\"POST\",status=\"201\"} 1\n"
            "# HELP app_temperature Current temperature.\n"
            "# TYPE app_temperature gauge\n"
            "app_temperature 21.25\n"
            "# HELP app_latency_seconds Latency.\n"
            "# TYPE app_latency_seconds histogram\n"
            "app_latency_seconds_bucket{route=\"/a\",le=\"0.125\"} 0\n"
            "app_latency_seconds_bucket{route=\"/a\",le=\"0.5\"} 1\n"
            "app_latency_seconds_bucket{route=\"/a\",le=\"1\"} 1\n"
            "app_latency_seconds_bucket{route=\"/a\",le=\"+Inf\"} 1\n"
            "app_latency_seconds_sum{route=\"/a\"} 0.5\n"
            "app_latency_seconds_count{route=\"/a\"} 1\n"
            "app_latency_seconds_bucket{route=\"/b\",le=\"0.125\"} 2\n"
            "app_latency_seconds_bucket{route=\"/b\",le=\"0.5\"} 2\n"
            "app_latency_seconds_bucket{route=\"/b\",le=\"1\"} 3\n"
            "app_latency_seconds_bucket{route=\"/b\",le=\"+Inf\"} 4\n"
            "app_latency_seconds_sum{route=\"/b\"} 3.9375\n"
            "app_latency_seconds_count{route=\"/b\"} 4\n"
            "# HELP app_never_total Never bumped.\n"
            "# TYPE app_never_total counter\n");
}

TEST(MetricsRegistryTest, PlainFamiliesShowZeroBeforeAnyUpdate) {
  Registry r;
  r.AddCounter("c_total", "C.");
  r.AddGauge("g", "G.");
  r.AddHistogram("h_seconds", "H.", {}, {1});
  EXPECT_EQ(r.Encode(),
            "# HELP c_total C.\n# TYPE c_total counter\nc_total 0\n"
            "# HELP g G.\n# TYPE g gauge\ng 0\n"
            "# HELP h_seconds H.\n# TYPE h_seconds histogram\n"
            "h_seconds_bucket{le=\"1\"} 0\nh_seconds_bucket{le=\"+Inf\"} 0\n"
            "h_seconds_sum 0\nh_seconds_count 0\n");
}

TEST(MetricsRegistryTest, EscapesLabelValuesAndHelp) {
  Registry r;
  CounterFamily& c = r.AddCounter("esc_total", "Back\\slash and\nnewline \"kept\".", {"v"});
  c.With({"a\"b\\c\nd"}).Inc();
  c.With({std::string("bad\xff")}).Inc();  // invalid UTF-8 becomes U+FFFD
  EXPECT_EQ(r.Encode(),
            "# HELP esc_total Back\\\\slash and\\nnewline \"kept\".\n"
            "# TYPE esc_total counter\n"
            "esc_total{v=\"a\\\"b\\\\c\\nd\"} 1\n"
            "esc_total{v=\"bad\xef\xbf\xbd\"} 1\n");
}

TEST(MetricsRegistryTest, FormatsValues) {
  struct Case {
    double v;
    const char* want;
  };
  const std::vector<Case> cases = {
      {0, "0"},
      {1, "1"},
      {-3, "-3"},
      {0.005, "0.005"},
      {123456789012, "123456789012"},
      {1e21, "1e+21"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::nan(""), "NaN"},
  };
  for (const Case& c : cases) EXPECT_EQ(FormatValue(c.v), c.want) << c.v;
}

TEST(MetricsRegistryTest, RefusesProgrammingErrors) {
  Registry r;
  CounterFamily& c = r.AddCounter("x_total", "X.", {"a", "b"});
  EXPECT_THROW(c.With({"only one"}), std::invalid_argument);
  EXPECT_THROW(r.AddCounter("x_total", "again"), std::invalid_argument);
  EXPECT_THROW(r.AddGauge("1bad", "starts with a digit"), std::invalid_argument);
  EXPECT_THROW(r.AddGauge("bad-name", "dash"), std::invalid_argument);
  EXPECT_THROW(r.AddGauge("ok_name", "bad label", {"has space"}), std::invalid_argument);
  EXPECT_THROW(r.AddGauge("ok_name2", "reserved label", {"__x"}), std::invalid_argument);
  EXPECT_THROW(r.AddHistogram("h1", "le label", {"le"}, {1}), std::invalid_argument);
  EXPECT_THROW(r.AddHistogram("h2", "unsorted", {}, {1, 0.5}), std::invalid_argument);
  EXPECT_THROW(r.AddHistogram("h3", "infinite", {}, {1, INFINITY}), std::invalid_argument);
  // None of the refused families was registered.
  EXPECT_EQ(r.Encode(), "# HELP x_total X.\n# TYPE x_total counter\n");
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAreAllCounted) {
  Registry r;
  CounterFamily& c = r.AddCounter("hits_total", "Hits.", {"worker"});
  HistogramFamily& h = r.AddHistogram("obs", "Obs.", {}, {0.5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        c.With({t % 2 == 0 ? "even" : "odd"}).Inc();
        h.With({}).Observe(i % 2 == 0 ? 0.25 : 1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.With({"even"}).value(), 20000u);
  EXPECT_EQ(c.With({"odd"}).value(), 20000u);
  const Histogram::Snapshot s = h.With({}).Read();
  EXPECT_EQ(s.count, 40000u);
  EXPECT_EQ(s.cumulative[0], 20000u);
  EXPECT_DOUBLE_EQ(s.sum, 20000 * 0.25 + 20000 * 1.0);
}

}  // namespace
}  // namespace missy::metrics
