#include "daemon/metrics/registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "core/utf8.h"

namespace missy::metrics {

namespace {

bool ValidName(std::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  const std::string valid = ToValidUtf8(value);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : ToValidUtf8(help)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

// ---------------------------------------------------------------------------------------

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  // The first bucket whose upper bound is >= v ("le"); past the last: +Inf.
  const size_t i =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.cumulative.reserve(bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

// ---------------------------------------------------------------------------------------

Family::Family(std::string name, std::string help, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {
  if (!ValidName(name_, /*allow_colon=*/true)) {
    throw std::invalid_argument("invalid metric name '" + name_ + "'");
  }
  for (const std::string& l : label_names_) {
    if (!ValidName(l, /*allow_colon=*/false) || l.rfind("__", 0) == 0) {
      throw std::invalid_argument("invalid label name '" + l + "' for " + name_);
    }
  }
}

void Family::CheckArity(const LabelValues& values) const {
  if (values.size() != label_names_.size()) {
    throw std::invalid_argument(name_ + " takes " + std::to_string(label_names_.size()) +
                                " label values, got " + std::to_string(values.size()));
  }
}

void Family::EncodeHeader(std::string_view type, std::string* out) const {
  *out += "# HELP " + name_ + " " + EscapeHelp(help_) + "\n";
  *out += "# TYPE " + name_ + " ";
  *out += type;
  *out += "\n";
}

void Family::EncodeLabels(const LabelValues& values, std::string* out) const {
  for (size_t i = 0; i < values.size(); ++i) {
    *out += i == 0 ? "{" : ",";
    *out += label_names_[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
}

void CounterFamily::Encode(std::string* out) const {
  EncodeHeader("counter", out);
  for (const auto& [labels, counter] : Series()) {
    *out += name_;
    EncodeLabels(labels, out);
    if (!labels.empty()) *out += "}";
    *out += " " + std::to_string(counter->value()) + "\n";
  }
}

void GaugeFamily::Encode(std::string* out) const {
  EncodeHeader("gauge", out);
  for (const auto& [labels, gauge] : Series()) {
    *out += name_;
    EncodeLabels(labels, out);
    if (!labels.empty()) *out += "}";
    *out += " " + FormatValue(gauge->value()) + "\n";
  }
}

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> label_names, std::vector<double> bounds)
    : MetricFamily(std::move(name), std::move(help), std::move(label_names)),
      bounds_(std::move(bounds)) {
  if (std::find(label_names_.begin(), label_names_.end(), "le") != label_names_.end()) {
    throw std::invalid_argument(name_ + ": \"le\" is reserved for buckets");
  }
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && bounds_[i] <= bounds_[i - 1])) {
      throw std::invalid_argument(name_ + ": bucket bounds must be finite and ascending");
    }
  }
}

void HistogramFamily::Encode(std::string* out) const {
  EncodeHeader("histogram", out);
  for (const auto& [labels, histogram] : Series()) {
    const Histogram::Snapshot s = histogram->Read();
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      *out += name_ + "_bucket";
      EncodeLabels(labels, out);
      *out += labels.empty() ? "{" : ",";
      *out += "le=\"" + (i < bounds_.size() ? FormatValue(bounds_[i]) : std::string("+Inf")) +
              "\"} " + std::to_string(s.cumulative[i]) + "\n";
    }
    // (An init-capture of the binding: clang before 16 cannot capture one as it is.)
    const auto line = [&, &series_labels = labels](const char* suffix, const std::string& value) {
      *out += name_ + suffix;
      EncodeLabels(series_labels, out);
      if (!series_labels.empty()) *out += "}";
      *out += " " + value + "\n";
    };
    line("_sum", FormatValue(s.sum));
    line("_count", std::to_string(s.count));
  }
}

// ---------------------------------------------------------------------------------------

template <typename F, typename... Args>
F& Registry::Add(std::string name, Args&&... args) {
  auto family = std::make_unique<F>(std::move(name), std::forward<Args>(args)...);
  F& ref = *family;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) {
    if (f->name() == ref.name()) throw std::invalid_argument("duplicate metric " + ref.name());
  }
  families_.push_back(std::move(family));
  return ref;
}

CounterFamily& Registry::AddCounter(std::string name, std::string help,
                                    std::vector<std::string> label_names) {
  const bool plain = label_names.empty();
  CounterFamily& f = Add<CounterFamily>(std::move(name), std::move(help), std::move(label_names));
  if (plain) f.With({});
  return f;
}

GaugeFamily& Registry::AddGauge(std::string name, std::string help,
                                std::vector<std::string> label_names) {
  const bool plain = label_names.empty();
  GaugeFamily& f = Add<GaugeFamily>(std::move(name), std::move(help), std::move(label_names));
  if (plain) f.With({});
  return f;
}

HistogramFamily& Registry::AddHistogram(std::string name, std::string help,
                                        std::vector<std::string> label_names,
                                        std::vector<double> bounds) {
  const bool plain = label_names.empty();
  HistogramFamily& f = Add<HistogramFamily>(std::move(name), std::move(help),
                                            std::move(label_names), std::move(bounds));
  if (plain) f.With({});
  return f;
}

std::string Registry::Encode() const {
  std::vector<const Family*> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& f : families_) families.push_back(f.get());
  }
  std::string out;
  for (const Family* f : families) f->Encode(&out);
  return out;
}

}  // namespace missy::metrics
