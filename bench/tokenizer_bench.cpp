// Tokenizer throughput and heuristic error. Used by bench/run.d/10-tokenizer:
//
//   tokenizer_bench --write-corpus DIR   writes mixed.txt (1 MiB: prose, code, JSON,
//                                        logs, 256 KiB each), cjk.txt and one file per
//                                        category into DIR
//   tokenizer_bench --measure DIR        prints one JSON line per (corpus, encoding):
//                                        tokens, best seconds, tokens/s, heuristic count
//
// Without those flags it runs the Google Benchmark cases below.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/tokenizers.h"
#include "core/bpe_encoding.h"

namespace fs = std::filesystem;
using missy::TokenizerRegistry;

namespace {

constexpr size_t kCategoryBytes = 256 * 1024;
const char* const kCategories[] = {"prose", "code", "json", "logs"};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Cuts `s` to at most `n` bytes at a line end, or else at a UTF-8 character boundary.
std::string CutAtLine(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t nl = s.rfind('\n', n - 1);
  if (nl != std::string::npos) return s.substr(0, nl + 1);
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// Concatenates `parts` (cycling if they are short) to exactly-ish `n` bytes.
std::string Fill(const std::vector<std::string>& parts, size_t n) {
  std::string out;
  bool any = false;
  for (const auto& p : parts) any = any || !p.empty();
  if (!any) return out;
  while (out.size() < n) {
    for (const auto& p : parts) {
      if (out.size() >= n) break;
      out += CutAtLine(p, n - out.size());
      if (!out.empty() && out.back() != '\n') out += '\n';
    }
  }
  return out.substr(0, std::min(out.size(), n + 4096));
}

std::vector<fs::path> Glob(const fs::path& dir, const std::vector<std::string>& exts) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    if (exts.empty() || std::find(exts.begin(), exts.end(), ext) != exts.end()) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Translations (msgstr) of a gettext .mo file: real CJK text on Debian systems.
std::vector<std::string> MoStrings(const fs::path& p) {
  std::string b = ReadFile(p);
  std::vector<std::string> out;
  if (b.size() < 28) return out;
  auto u32 = [&](size_t off) {
    uint32_t v = 0;
    if (off + 4 <= b.size()) std::memcpy(&v, b.data() + off, 4);
    return v;
  };
  if (u32(0) != 0x950412de) return out;  // little-endian files only
  uint32_t n = u32(8), table = u32(16);
  for (uint32_t i = 1; i < n; ++i) {
    uint32_t len = u32(table + 8 * i), off = u32(table + 8 * i + 4);
    if (size_t{off} + len > b.size()) break;
    std::string s = b.substr(off, len);
    s = s.substr(0, s.find('\0'));
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

fs::path TrajectoryDir() {
  return fs::path(MISSY_SOURCE_DIR).parent_path() / "shared/data/trajectories";
}

std::map<std::string, std::string> BuildCorpora() {
  std::map<std::string, std::string> c;
  std::vector<std::string> prose;
  for (const auto& p : Glob("/usr/share/common-licenses", {})) prose.push_back(ReadFile(p));
  std::vector<std::string> code;
  for (const char* dir : {"core", "storage", "config", "daemon", "tests", "bench"}) {
    for (const auto& p : Glob(fs::path(MISSY_SOURCE_DIR) / dir, {".cpp", ".h"})) {
      code.push_back(ReadFile(p));
    }
  }
  std::vector<std::string> json;
  std::vector<std::string> logs;
  for (const auto& p : Glob(TrajectoryDir(), {".jsonl"})) {
    std::string all = ReadFile(p);
    json.push_back(all);
    std::istringstream lines(all);
    std::string line;
    std::string outputs;
    while (std::getline(lines, line)) {
      boost::system::error_code ec;
      auto v = boost::json::parse(line, ec);
      if (ec || !v.is_object()) continue;
      const auto& o = v.as_object();
      if (o.contains("role") && o.at("role") == "tool" && o.contains("content") &&
          o.at("content").is_string()) {
        outputs += std::string(o.at("content").as_string()) + "\n";
      }
    }
    logs.push_back(outputs);
  }
  c["prose"] = Fill(prose, kCategoryBytes);
  c["code"] = Fill(code, kCategoryBytes);
  c["json"] = Fill(json, kCategoryBytes);
  c["logs"] = Fill(logs, kCategoryBytes);
  // The mixed corpus interleaves the four categories in 16 KiB slices.
  std::string mixed;
  for (size_t off = 0; off < kCategoryBytes; off += 16 * 1024) {
    for (const char* cat : kCategories) {
      const std::string& s = c[cat];
      if (off >= s.size()) continue;
      std::string slice = CutAtLine(s.substr(off), 16 * 1024);
      mixed += slice;
    }
  }
  c["mixed"] = mixed;
  std::vector<std::string> cjk;
  for (const char* lang : {"zh_CN", "zh_TW", "ja", "ko"}) {
    std::string joined;
    for (const auto& p : Glob(fs::path("/usr/share/locale") / lang / "LC_MESSAGES", {".mo"})) {
      for (const auto& s : MoStrings(p)) joined += s + "\n";
    }
    cjk.push_back(joined);
  }
  c["cjk"] = Fill(cjk, 512 * 1024);
  return c;
}

int WriteCorpus(const fs::path& dir) {
  fs::create_directories(dir);
  for (const auto& [name, text] : BuildCorpora()) {
    std::ofstream(dir / (name + ".txt"), std::ios::binary) << text;
    std::cerr << "corpus " << name << ": " << text.size() << " bytes\n";
  }
  return 0;
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Timing {
  double wall = 1e9;  // best wall-clock seconds of one run
  double cpu = 1e9;   // best CPU seconds of one run (robust on a busy machine)
};

Timing Best(const std::function<void()>& fn) {
  fn();  // warm-up
  Timing best;
  double total = 0;
  for (int i = 0; i < 50 && (i < 5 || total < 1.0); ++i) {
    auto a = std::chrono::steady_clock::now();
    double c = ThreadCpuSeconds();
    fn();
    double cpu = ThreadCpuSeconds() - c;
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    best.wall = std::min(best.wall, wall);
    best.cpu = std::min(best.cpu, cpu);
    total += wall;
  }
  return best;
}

int Measure(const fs::path& dir) {
  TokenizerRegistry registry;
  missy::HeuristicTokenCounter heuristic;
  for (const char* corpus : {"mixed", "cjk", "prose", "code", "json", "logs"}) {
    std::string text = ReadFile(dir / (std::string(corpus) + ".txt"));
    for (const char* encoding : {"o200k_base", "cl100k_base"}) {
      auto counter = registry.Get(encoding);
      if (!counter.ok()) {
        std::cerr << counter.status().ToString() << "\n";
        return 1;
      }
      int64_t tokens = 0;
      Timing t = Best([&] { tokens = (*counter)->Count(text); });
      boost::json::object line{{"impl", "missyd"},     {"corpus", corpus},
                               {"encoding", encoding}, {"bytes", text.size()},
                               {"tokens", tokens},     {"wall_seconds", t.wall},
                               {"cpu_seconds", t.cpu}, {"heuristic", heuristic.Count(text)}};
      std::cout << boost::json::serialize(line) << "\n";
    }
  }
  return 0;
}

// ------------------------------------------------------------ Google Benchmark cases
const missy::TokenCounter& O200k() {
  static TokenizerRegistry registry;
  static auto counter = registry.Get("o200k_base");
  if (!counter.ok()) {
    std::cerr << counter.status().ToString() << "\n";
    std::exit(1);
  }
  return **counter;
}

void BM_CountMixed(benchmark::State& state) {
  static const std::string text = BuildCorpora()["mixed"];
  int64_t tokens = 0;
  for (auto _ : state) benchmark::DoNotOptimize(tokens = O200k().Count(text));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CountMixed)->Unit(benchmark::kMillisecond);

void BM_CountRunOfOneChar(benchmark::State& state) {
  const std::string text(static_cast<size_t>(state.range(0)), 'a');
  for (auto _ : state) benchmark::DoNotOptimize(O200k().Count(text));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_CountRunOfOneChar)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_Heuristic(benchmark::State& state) {
  static const std::string text = BuildCorpora()["mixed"];
  missy::HeuristicTokenCounter h;
  for (auto _ : state) benchmark::DoNotOptimize(h.Count(text));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_Heuristic)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-corpus") return WriteCorpus(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--measure") return Measure(argv[2]);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
