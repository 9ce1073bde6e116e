// Registry: in-process metrics exposed in the Prometheus text format (version 0.0.4).
//
// Guarantees: families are declared once (at startup) with fixed label names; With()
// finds or creates a series under the family's mutex and returns a reference that stays
// valid for the registry's lifetime, so hot paths may keep it. Updates are lock-free
// atomics. Encode() is deterministic: families in declaration order, series sorted by
// label values. A wrong name or label count is a programming error: it throws
// std::invalid_argument. Thread-safe. No I/O, no JSON.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace missy::metrics {

// A monotonically increasing count.
class Counter {
 public:
  void Inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  // For a counter mirrored from a cumulative source read at scrape time.
  void Store(uint64_t total) { value_.store(total, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double d) { value_.fetch_add(d, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into fixed buckets (upper bounds, ascending; +Inf is implied).
class Histogram {
 public:
  explicit Histogram(const std::vector<double>& bounds);
  void Observe(double v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double>& bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1, not cumulative
  std::atomic<double> sum_{0};
};

using LabelValues = std::vector<std::string>;

class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names);
  virtual ~Family() = default;
  const std::string& name() const { return name_; }
  // Appends the HELP and TYPE lines and every series.
  virtual void Encode(std::string* out) const = 0;

 protected:
  void EncodeHeader(std::string_view type, std::string* out) const;
  // `{a="x",b="y"` (no closing brace; empty when there are no labels and no extra).
  void EncodeLabels(const LabelValues& values, std::string* out) const;
  void CheckArity(const LabelValues& values) const;

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
};

template <typename Metric>
class MetricFamily : public Family {
 public:
  using Family::Family;
  // The series with these label values (one per label name, in declaration order).
  Metric& With(const LabelValues& values) {
    CheckArity(values);
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<Metric>& slot = series_[values];
    if (!slot) slot = Make();
    return *slot;
  }

 protected:
  virtual std::unique_ptr<Metric> Make() const = 0;
  // Series in label-value order, as pointers valid while the family lives.
  std::vector<std::pair<LabelValues, const Metric*>> Series() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<LabelValues, const Metric*>> out;
    out.reserve(series_.size());
    for (const auto& [labels, metric] : series_) out.emplace_back(labels, metric.get());
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::map<LabelValues, std::unique_ptr<Metric>> series_;
};

class CounterFamily final : public MetricFamily<Counter> {
 public:
  using MetricFamily::MetricFamily;
  void Encode(std::string* out) const override;

 private:
  std::unique_ptr<Counter> Make() const override { return std::make_unique<Counter>(); }
};

class GaugeFamily final : public MetricFamily<Gauge> {
 public:
  using MetricFamily::MetricFamily;
  void Encode(std::string* out) const override;

 private:
  std::unique_ptr<Gauge> Make() const override { return std::make_unique<Gauge>(); }
};

class HistogramFamily final : public MetricFamily<Histogram> {
 public:
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::vector<double> bounds);
  void Encode(std::string* out) const override;

 private:
  std::unique_ptr<Histogram> Make() const override { return std::make_unique<Histogram>(bounds_); }
  const std::vector<double> bounds_;
};

class Registry {
 public:
  // A family without labels has its one series from the start (it shows 0 before any
  // update); a labelled one shows a series once With() created it.
  CounterFamily& AddCounter(std::string name, std::string help,
                            std::vector<std::string> label_names = {});
  GaugeFamily& AddGauge(std::string name, std::string help,
                        std::vector<std::string> label_names = {});
  // `bounds`: ascending, finite; "le" is not a label name.
  HistogramFamily& AddHistogram(std::string name, std::string help,
                                std::vector<std::string> label_names, std::vector<double> bounds);

  std::string Encode() const;

 private:
  template <typename F, typename... Args>
  F& Add(std::string name, Args&&... args);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
};

// Prometheus text format pieces (exposed for tests).
std::string EscapeLabelValue(std::string_view value);  // \ " and newline; invalid UTF-8 → U+FFFD
std::string EscapeHelp(std::string_view help);         // \ and newline
std::string FormatValue(double v);                     // shortest round trip; NaN, +Inf, -Inf

// The content type of Encode()'s output.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace missy::metrics
