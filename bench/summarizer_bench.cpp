// Extractive summarizer benchmark (issue 10), in-process, heuristic counter:
//  1. one SummarizeMessages call over a 10,000-message session built from the real
//     trajectories (repeated in order): time (min and p50 of the runs), summary tokens vs
//     source tokens, against the 2.3 ms target and Missy's Python consolidator (~45 ms);
//     and, for where the time goes, ExtractArtifacts alone (the trail without facts);
//  2. the daemon's way: leaf summaries of ~20,000-token chunks (cut on groups, each with
//     the previous summary as prior), then condensation by fours up to one summary.
// Message token counts and extracts are made before timing (the daemon makes both on
// append and stores them); "no stored extracts" times the same call on messages without
// them (rows written before extracts existed): every message is extracted in the call.
//
// Usage: summarizer_bench [--runs N] [--one-call | --hierarchy] (only case 1 or 2, for
// profiling)
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/extractive_summarizer.h"
#include "core/groups.h"
#include "core/message_json.h"
#include "trajectory_files.h"

namespace {

using missy::ChildSummary;
using missy::ExtractiveOptions;
using missy::ExtractiveSummary;
using missy::Message;
using missy::MessageTokenCounter;
using missy::StoredMessage;
using Clock = std::chrono::steady_clock;

constexpr double kTargetMs = 2.3;
constexpr double kMissyMs = 45.0;

std::vector<Message> LoadTrajectories() {
  const std::vector<std::filesystem::path> files = missy::bench::TrajectoryFiles();
  std::vector<Message> out;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      boost::json::error_code ec;
      const boost::json::value v = boost::json::parse(line, ec);
      if (ec) continue;
      missy::Result<Message> m = missy::ParseMessage(v, "line");
      if (m.ok()) out.push_back(std::move(*m));
    }
  }
  return out;
}

std::vector<StoredMessage> Session(const std::vector<Message>& source, size_t n,
                                   const MessageTokenCounter& counter) {
  std::vector<StoredMessage> out;
  out.reserve(n);
  while (out.size() < n) {
    for (const Message& m : source) {
      if (out.size() == n) break;
      if (m.role == missy::Role::kSystem && !out.empty()) continue;
      StoredMessage s;
      s.seq = static_cast<int64_t>(out.size()) + 1;
      s.message = m;
      s.tokens = counter.CountMessage(m);
      s.extract = missy::ExtractMessage(m);
      out.push_back(std::move(s));
    }
  }
  return out;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Timing {
  double min_ms = 0, p50_ms = 0;
};

template <typename Fn>
Timing Time(int runs, Fn fn) {
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    fn();
    ms.push_back(Ms(Clock::now() - t0));
  }
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

// Leaves of ~20,000 tokens, then condensation by fours: the daemon's hierarchy.
ExtractiveSummary Hierarchy(const std::vector<StoredMessage>& s, const MessageTokenCounter& counter,
                            size_t* leaves) {
  const std::vector<missy::GroupSpan> chunks = missy::ChunkOnGroups(
      0, s.size(), [&](size_t i) -> const Message& { return s[i].message; },
      [&](size_t i) { return s[i].tokens; }, 20000);
  std::vector<ChildSummary> level;
  std::string prior;
  for (const missy::GroupSpan& g : chunks) {
    ExtractiveSummary x = missy::SummarizeMessages(
        std::span<const StoredMessage>(s.data() + g.begin, g.size()), prior, {}, counter);
    prior = x.text;
    level.push_back({std::move(x.text), std::move(x.artifacts), x.tokens});
  }
  *leaves = level.size();
  ExtractiveOptions condensed;
  condensed.target_tokens = missy::kCondensedTargetTokens;
  ExtractiveSummary top;
  while (level.size() > 1) {
    std::vector<ChildSummary> next;
    for (size_t i = 0; i < level.size(); i += 4) {
      const size_t n = std::min<size_t>(4, level.size() - i);
      top = missy::CondenseSummaries(std::span<const ChildSummary>(level.data() + i, n), condensed,
                                     counter);
      next.push_back({top.text, top.artifacts, top.tokens});
    }
    level = std::move(next);
  }
  return top;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 30;
  bool one_call_only = false, hierarchy_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--one-call") == 0) one_call_only = true;
    if (std::strcmp(argv[i], "--hierarchy") == 0) hierarchy_only = true;
  }
  runs = std::max(runs, 1);
  const MessageTokenCounter counter(std::make_shared<missy::HeuristicTokenCounter>());
  const std::vector<Message> source = LoadTrajectories();
  if (source.empty()) {
    std::printf("no trajectories under %s/../shared/data/trajectories\n", MISSY_SOURCE_DIR);
    return 1;
  }
  bool pass = true;
  std::printf("%-34s %9s %9s %10s %10s %8s %9s\n", "case", "min ms", "p50 ms", "source tok",
              "summary", "files", "vs 45ms");
  for (size_t n : {1000, 10000}) {
    const std::vector<StoredMessage> s = Session(source, n, counter);
    ExtractiveSummary one;
    const int quick = hierarchy_only ? 1 : runs;  // --hierarchy: the rest once, for the text
    const Timing t = Time(quick, [&] { one = missy::SummarizeMessages(s, "", {}, counter); });
    std::printf("%-34s %9.3f %9.3f %10lld %10lld %8zu %8.1fx\n",
                ("one call, " + std::to_string(n) + " msgs").c_str(), t.min_ms, t.p50_ms,
                static_cast<long long>(one.source_tokens), static_cast<long long>(one.tokens),
                one.artifacts.files.size(), kMissyMs / t.p50_ms);
    if (n == 10000 && !hierarchy_only) pass &= t.p50_ms <= kTargetMs;
    // The trail alone (no facts, requests or bounding).
    missy::ArtifactTrail trail;
    const Timing x = Time(quick, [&] { trail = missy::ExtractArtifacts(s); });
    std::printf("%-34s %9.3f %9.3f %10s %10s %8zu\n",
                ("  of which trail only, " + std::to_string(n)).c_str(), x.min_ms, x.p50_ms, "", "",
                trail.files.size());
    if (one_call_only) continue;
    std::vector<StoredMessage> bare = s;
    for (StoredMessage& m : bare) m.extract.clear();
    ExtractiveSummary cold;
    const Timing c = Time(hierarchy_only ? 1 : std::max(runs / 3, 1),
                          [&] { cold = missy::SummarizeMessages(bare, "", {}, counter); });
    std::printf("%-34s %9.3f %9.3f %10s %10lld %8zu %s\n",
                ("  no stored extracts, " + std::to_string(n)).c_str(), c.min_ms, c.p50_ms, "",
                static_cast<long long>(cold.tokens), cold.artifacts.files.size(),
                cold.text == one.text ? "same text" : "TEXT DIFFERS");
    if (cold.text != one.text) pass = false;
    size_t leaves = 0;
    ExtractiveSummary top;
    const Timing h = Time(hierarchy_only ? runs : std::max(runs / 3, 1),
                          [&] { top = Hierarchy(s, counter, &leaves); });
    std::printf(
        "%-34s %9.3f %9.3f %10lld %10lld %8zu %8.1fx\n",
        ("leaves+condense, " + std::to_string(n) + " (" + std::to_string(leaves) + " leaves)")
            .c_str(),
        h.min_ms, h.p50_ms, static_cast<long long>(one.source_tokens),
        static_cast<long long>(top.tokens), top.artifacts.files.size(), kMissyMs / h.p50_ms);
  }
  std::printf("target: one call over 10,000 messages <= %.1f ms (p50): %s\n", kTargetMs,
              pass ? "PASS" : "FAIL");
  return pass ? 0 : 2;
}
