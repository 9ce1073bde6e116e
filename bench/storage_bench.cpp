// Storage benchmark: durable appends per second through the storage API (group
// commit with 1, 8 and 64 concurrent writers, versus one commit per message), and
// FTS5 search latency over 100k messages. Every append counted here returned only
// after its transaction committed with synchronous=FULL (WAL fsynced). Message text
// is indexed off the append path (schema version 4): each row also reports the index
// backlog left when the writers stopped, how long the first search took to catch the
// index up, and the CPU per message including that indexing.
//   storage_bench [--seconds S] [--dir DIR] [--search-messages N] [--search-only]
//                 [--append-only] [--group-only] [--writers N] [--batch N] [--repeat N]
//                 [--group-wait-us N] [--cache-mib N]
// --group-only, --writers and --batch keep only the group-commit rows / the rows with
// that many writers / messages per call; --repeat runs each append row N times (the
// disk's fsync latency swings between runs); --append-only skips the search part;
// --group-wait-us and --cache-mib set DatabaseOptions::group_commit_wait_us and
// cache_budget_bytes for the append rows.
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/message.h"
#include "core/message_json.h"
#include "storage/database.h"
#include "storage/search.h"
#include "storage/stores.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Corpus {
  std::vector<missy::Message> chat;        // short chat-sized messages (~150 bytes)
  std::vector<missy::Message> trajectory;  // real agent sessions (tool calls, tool output)
  std::vector<std::string> words;          // for search queries
};

Corpus LoadCorpus() {
  Corpus c;
  fs::path dir = fs::path(MISSY_SOURCE_DIR).parent_path() / "shared/data/trajectories";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".jsonl") continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      boost::system::error_code jec;
      auto v = boost::json::parse(line, jec);
      if (jec) continue;
      auto m = missy::ParseMessage(v);
      if (m.ok()) c.trajectory.push_back(std::move(*m));
    }
  }
  std::mt19937 rng(7);
  for (const auto& m : c.trajectory) {
    std::string text = m.PlainText();
    std::string word;
    for (char ch : text) {
      if (std::isalpha(static_cast<unsigned char>(ch))) {
        word += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      } else {
        if (word.size() >= 5 && word.size() <= 14 && rng() % 8 == 0) c.words.push_back(word);
        word.clear();
      }
    }
  }
  if (c.words.empty()) {
    for (const char* w :
         {"deploy", "staging", "nginx", "postgres", "migration", "tests", "failure", "config"}) {
      c.words.push_back(w);
    }
  }
  for (int i = 0; i < 4096; ++i) {
    std::string text;
    while (text.size() < 140) text += c.words[rng() % c.words.size()] + " ";
    c.chat.push_back(i % 2 ? missy::Message::Assistant(text) : missy::Message::User(text));
  }
  if (c.trajectory.empty()) c.trajectory = c.chat;
  return c;
}

double AverageBytes(const std::vector<missy::Message>& v) {
  size_t total = 0;
  for (const auto& m : v)
    total += missy::ContentToJsonText(m).size() + missy::ToolCallsToJsonText(m.tool_calls).size();
  return v.empty() ? 0 : static_cast<double>(total) / static_cast<double>(v.size());
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

struct AppendResult {
  double msgs_per_s = 0;
  double calls_per_s = 0;
  double p50_ms = 0, p99_ms = 0;
  double avg_group = 0;          // write calls per committed transaction
  double cpu_us_per_msg = 0;     // process CPU (all threads) per acknowledged message
  double writer_us_per_msg = 0;  // the writer thread's CPU per message (the serial part)
  double commit_ms = 0;          // average COMMIT (WAL fsync) time per transaction
  int64_t messages = 0;
  int64_t backlog = 0;                // messages not yet indexed when the writers stopped
  double catch_up_ms = 0;             // the first search after the run (indexes the backlog)
  double cpu_us_per_msg_indexed = 0;  // CPU per message including the catch-up
  int64_t index_transactions = 0;
};

// Messages above the index watermark (not yet indexed), read on a separate connection.
int64_t IndexBacklog(const std::string& path) {
  sqlite3* raw = nullptr;
  int64_t backlog = -1;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(
            raw,
            "SELECT count(*) FROM messages WHERE id > "
            "(SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'messages_fts_indexed')",
            -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      backlog = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(raw);
  return backlog;
}

// `writers` threads, each on its own session, append `batch` messages per call for
// `seconds`. max_batch = 1 disables group commit (one transaction per call).
AppendResult RunAppends(const std::string& dir, int writers, int batch, int max_batch,
                        double seconds, const std::vector<missy::Message>& corpus,
                        int group_wait_us, int64_t cache_budget) {
  const std::string path = dir + "/append-" + std::to_string(writers) + "-" +
                           std::to_string(batch) + "-" + std::to_string(max_batch) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  missy::DatabaseOptions options;
  options.max_batch = max_batch;
  if (group_wait_us >= 0) options.group_commit_wait_us = group_wait_us;
  if (cache_budget > 0) options.cache_budget_bytes = cache_budget;
  auto db = missy::Database::Open(path, options);
  if (!db.ok()) {
    std::fprintf(stderr, "open %s: %s\n", path.c_str(), db.status().ToString().c_str());
    std::exit(1);
  }
  missy::Stores stores(**db);
  for (int w = 0; w < writers; ++w) {
    missy::Session s;
    s.id = "bench-" + std::to_string(w);
    s.created_at_ms = NowMs();
    if (!stores.sessions.Create(s).ok()) std::exit(1);
  }
  std::atomic<bool> go{false}, stop{false};
  std::atomic<int64_t> messages{0}, calls{0};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(writers));
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      const std::string session = "bench-" + std::to_string(w);
      size_t next = static_cast<size_t>(w) * 7919;
      while (!go.load()) std::this_thread::yield();
      while (!stop.load(std::memory_order_relaxed)) {
        std::vector<missy::NewMessage> b;
        for (int k = 0; k < batch; ++k)
          b.push_back(missy::NewMessage{corpus[next++ % corpus.size()], 50, 0, {}});
        auto t0 = Clock::now();
        auto r = stores.messages.Append(session, std::move(b), NowMs());
        auto t1 = Clock::now();
        if (!r.ok()) {
          std::fprintf(stderr, "append: %s\n", r.status().ToString().c_str());
          std::exit(1);
        }
        latencies[static_cast<size_t>(w)].push_back(
            std::chrono::duration<double, std::milli>(t1 - t0).count());
        messages += static_cast<int64_t>(r->size());
        ++calls;
      }
    });
  }
  auto start = Clock::now();
  const double cpu0 = CpuSeconds();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = CpuSeconds() - cpu0;
  // Check: everything acknowledged is there.
  int64_t stored = 0;
  for (int w = 0; w < writers; ++w)
    stored += stores.sessions.Get("bench-" + std::to_string(w))->message_count;
  if (stored != messages.load()) {
    std::fprintf(stderr, "acknowledged %lld messages but %lld are stored\n",
                 static_cast<long long>(messages.load()), static_cast<long long>(stored));
    std::exit(1);
  }
  // The index: what was left pending, and what catching it up costs (a search does).
  AppendResult r;
  r.backlog = IndexBacklog(path);
  {
    missy::SearchOptions o;
    o.query = "zzzunmatchedzzz";
    auto t0 = Clock::now();
    auto hits = missy::Search(**db, o);
    r.catch_up_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!hits.ok() || IndexBacklog(path) != 0) {
      std::fprintf(stderr, "catch-up search failed\n");
      std::exit(1);
    }
  }
  const double cpu_indexed = CpuSeconds() - cpu0;
  std::vector<double> all;
  for (auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  r.messages = messages.load();
  r.msgs_per_s = static_cast<double>(messages.load()) / elapsed;
  r.calls_per_s = static_cast<double>(calls.load()) / elapsed;
  r.p50_ms = Percentile(all, 0.50);
  r.p99_ms = Percentile(all, 0.99);
  missy::WriterStats stats = (*db)->GetWriterStats();
  r.avg_group = stats.transactions > 0
                    ? static_cast<double>(stats.writes) / static_cast<double>(stats.transactions)
                    : 0;
  r.cpu_us_per_msg = r.messages > 0 ? cpu * 1e6 / static_cast<double>(r.messages) : 0;
  r.cpu_us_per_msg_indexed =
      r.messages > 0 ? cpu_indexed * 1e6 / static_cast<double>(r.messages) : 0;
  r.index_transactions = stats.index_transactions;
  r.writer_us_per_msg =
      r.messages > 0 ? static_cast<double>(stats.writer_cpu_us) / static_cast<double>(r.messages)
                     : 0;
  r.commit_ms = stats.transactions > 0 ? static_cast<double>(stats.commit_us_total) / 1e3 /
                                             static_cast<double>(stats.transactions)
                                       : 0;
  db->reset();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  return r;
}

void SearchBench(const std::string& dir, const Corpus& corpus, int total_messages) {
  const std::string path = dir + "/search.db";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  auto db = missy::Database::Open(path);
  if (!db.ok()) std::exit(1);
  missy::Stores stores(**db);
  const int sessions = 100;
  const int per_session = total_messages / sessions;
  std::mt19937 rng(11);
  auto load_start = Clock::now();
  for (int s = 0; s < sessions; ++s) {
    missy::Session session;
    session.id = "s" + std::to_string(s);
    if (!stores.sessions.Create(session).ok()) std::exit(1);
    for (int done = 0; done < per_session; done += 500) {
      std::vector<missy::NewMessage> batch;
      for (int k = 0; k < 500 && done + k < per_session; ++k) {
        batch.push_back(
            missy::NewMessage{corpus.trajectory[rng() % corpus.trajectory.size()], 50, 0, {}});
      }
      if (!stores.messages.Append(session.id, std::move(batch), NowMs()).ok()) std::exit(1);
    }
  }
  for (int i = 0; i < 1000; ++i) {
    missy::MemoryItem m;
    m.text = corpus.chat[static_cast<size_t>(i) % corpus.chat.size()].text;
    m.created_at_ms = i;
    if (!stores.memory.Add(m).ok()) std::exit(1);
  }
  double load_s = std::chrono::duration<double>(Clock::now() - load_start).count();
  // What the writer did not index while idle during the load, the first search does.
  const int64_t backlog = IndexBacklog(path);
  auto catch_up_start = Clock::now();
  {
    missy::SearchOptions o;
    o.query = "zzzunmatchedzzz";
    if (!missy::Search(**db, o).ok()) std::exit(1);
  }
  double catch_up_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - catch_up_start).count();
  std::printf("\nFTS search over %d messages (%d sessions, trajectory text) + 1000 memory items\n",
              sessions * per_session, sessions);
  std::printf("  bulk load: %.1f s (%.0f messages/s in 500-message batches)\n", load_s,
              sessions * per_session / load_s);
  std::printf(
      "  index backlog after the load: %lld messages, caught up by the first search in %.1f ms\n",
      static_cast<long long>(backlog), catch_up_ms);
  std::printf("  %-44s %8s %8s %8s %8s %6s\n", "query kind (200 queries, max 10 hits)", "p50 ms",
              "p95 ms", "p99 ms", "max ms", "hits");
  struct Kind {
    const char* name;
    int words;
    bool exclude;
    bool hostile;
    bool after_append;  // one message appended (acknowledged) just before each query
  };
  for (const Kind& kind :
       {Kind{"1 word, all sources", 1, false, false, false},
        Kind{"3 words, all sources", 3, false, false, false},
        Kind{"3 words, excluding one session", 3, true, false, false},
        Kind{"8 words (user message sized)", 8, false, false, false},
        Kind{"hostile (quotes, NEAR(, *, 10 KB)", 3, false, true, false},
        Kind{"3 words, just after an append (catch-up)", 3, false, false, true}}) {
    std::vector<double> ms;
    double hits = 0;
    for (int q = 0; q < 200; ++q) {
      missy::SearchOptions o;
      for (int w = 0; w < kind.words; ++w)
        o.query += corpus.words[rng() % corpus.words.size()] + " ";
      if (kind.hostile) {
        o.query = (q % 3 == 0   ? "NEAR(\"" + o.query + "* -"
                   : q % 3 == 1 ? "((" + o.query + "\"\""
                                : std::string(10240, 'x') + " " + o.query);
      }
      if (kind.exclude) o.exclude_session_id = "s" + std::to_string(q % sessions);
      if (kind.after_append) {
        missy::NewMessage m{corpus.chat[rng() % corpus.chat.size()], 50, 0};
        if (!stores.messages.Append("s" + std::to_string(q % sessions), {m}, NowMs()).ok())
          std::exit(1);
      }
      auto t0 = Clock::now();
      auto r = missy::Search(**db, o);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (!r.ok()) {
        std::fprintf(stderr, "search failed: %s\n", r.status().ToString().c_str());
        std::exit(1);
      }
      hits += static_cast<double>(r->size());
    }
    std::vector<double> copy = ms;
    std::printf("  %-44s %8.2f %8.2f %8.2f %8.2f %6.1f\n", kind.name, Percentile(copy, 0.5),
                Percentile(copy, 0.95), Percentile(copy, 0.99),
                *std::max_element(ms.begin(), ms.end()), hits / 200);
  }
  db->reset();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3;
  std::string dir;
  int search_messages = 100000;
  bool search_only = false;
  bool append_only = false;
  int only_writers = 0, only_batch = 0, repeat = 1;
  bool group_only = false;
  int group_wait_us = -1;    // -1: the DatabaseOptions default
  int64_t cache_budget = 0;  // 0: the DatabaseOptions default
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--search-only")) {
      search_only = true;
    } else if (!std::strcmp(argv[i], "--append-only")) {
      append_only = true;
    } else if (!std::strcmp(argv[i], "--group-only")) {
      group_only = true;
    } else if (!std::strcmp(argv[i], "--group-wait-us") && has_value) {
      group_wait_us = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--cache-mib") && has_value) {
      cache_budget = static_cast<int64_t>(std::atoi(argv[++i])) << 20;
    } else if (!std::strcmp(argv[i], "--writers") && has_value) {
      only_writers = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--batch") && has_value) {
      only_batch = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--repeat") && has_value) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--seconds") && has_value) {
      seconds = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--dir") && has_value) {
      dir = argv[++i];
    } else if (!std::strcmp(argv[i], "--search-messages") && has_value) {
      search_messages = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: storage_bench [--seconds S] [--dir DIR] [--search-messages N] "
                   "[--search-only] [--append-only] [--group-only] [--writers N] [--batch N] "
                   "[--repeat N] [--group-wait-us N] [--cache-mib N]\n");
      return 2;
    }
  }
  bool own_dir = dir.empty();
  if (own_dir) {
    // Not tmpfs: durability costs must be real. /var/tmp is on disk on Debian.
    std::string tmpl = "/var/tmp/missy-storage-bench-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  Corpus corpus = LoadCorpus();
  std::printf(
      "missyd storage benchmark: SQLite %s, WAL, synchronous=FULL, dir %s, %.1f s per row\n",
      sqlite3_libversion(), dir.c_str(), seconds);
  std::printf("messages: chat %.0f B avg, trajectory %.0f B avg (%zu real agent messages)\n\n",
              AverageBytes(corpus.chat), AverageBytes(corpus.trajectory), corpus.trajectory.size());
  std::printf("Durable appends (each acknowledged after its transaction committed)\n");
  std::printf("  %-18s %-11s %7s %6s %12s %10s %9s %9s %10s %10s %10s %10s | %8s %8s %9s %12s\n",
              "mode", "messages", "writers", "batch", "messages/s", "calls/s", "p50 ms", "p99 ms",
              "calls/txn", "cpu us/msg", "writer us", "commit ms", "backlog", "idx txns",
              "catchup ms", "cpu+idx us/msg");
  struct Row {
    const char* mode;
    int max_batch;
    int writers;
    int batch;
    bool trajectory;
  };
  const Row rows[] = {
      {"one commit/message", 1, 1, 1, false},  {"one commit/message", 1, 8, 1, false},
      {"one commit/message", 1, 64, 1, false}, {"group commit", 1024, 1, 1, false},
      {"group commit", 1024, 8, 1, false},     {"group commit", 1024, 64, 1, false},
      {"group commit", 1024, 64, 1, true},     {"group commit", 1024, 8, 10, false},
      {"group commit", 1024, 64, 10, false},   {"group commit", 1024, 64, 10, true},
  };
  for (const Row& row : rows) {
    if (search_only) break;
    if (only_writers > 0 && row.writers != only_writers) continue;
    if (only_batch > 0 && row.batch != only_batch) continue;
    if (group_only && row.max_batch == 1) continue;
    for (int run = 0; run < repeat; ++run) {
      AppendResult r =
          RunAppends(dir, row.writers, row.batch, row.max_batch, seconds,
                     row.trajectory ? corpus.trajectory : corpus.chat, group_wait_us, cache_budget);
      std::printf(
          "  %-18s %-11s %7d %6d %12.0f %10.0f %9.2f %9.2f %10.1f %10.1f %10.1f %10.2f | %8lld "
          "%8lld %9.1f %12.1f\n",
          row.mode, row.trajectory ? "trajectory" : "chat", row.writers, row.batch, r.msgs_per_s,
          r.calls_per_s, r.p50_ms, r.p99_ms, r.avg_group, r.cpu_us_per_msg, r.writer_us_per_msg,
          r.commit_ms, static_cast<long long>(r.backlog),
          static_cast<long long>(r.index_transactions), r.catch_up_ms, r.cpu_us_per_msg_indexed);
      std::fflush(stdout);
    }
  }
  if (!append_only) SearchBench(dir, corpus, search_messages);
  if (own_dir) fs::remove_all(dir);
  return 0;
}
