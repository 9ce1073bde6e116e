// The crash test, shared by its short form (tests/storage, default suite) and its
// long form (tests/slow, label slow): starts tests/slow/crash_writer, SIGKILLs it at
// a random moment, and checks after each kill that every write it acknowledged is
// stored, that SQLite's integrity_check passes and that the audit chain verifies.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "storage/database.h"
#include "storage/search.h"
#include "storage/stores.h"
#include "test_util.h"

namespace missy::testing {

struct AckedWrites {
  std::map<std::string, std::map<int64_t, std::string>> messages;  // session -> seq -> text
  std::set<int64_t> audit;
  size_t lines = 0;
};

// Runs the writer for about `run_ms`, SIGKILLs it, returns what it acknowledged.
inline AckedWrites RunAndKill(const std::string& writer, const std::string& db_path, int run_id,
                              int run_ms) {
  AckedWrites acked;
  int fds[2];
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe failed";
    return acked;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(writer.c_str(), writer.c_str(), db_path.c_str(), "4", std::to_string(run_id).c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string data;
  char buf[65536];
  auto read_some = [&](int timeout_ms) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) return false;
    data.append(buf, static_cast<size_t>(n));
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(run_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    read_some(static_cast<int>(std::max<int64_t>(1, left.count())));
  }
  kill(pid, SIGKILL);
  // Everything the writer printed before it died is still in the pipe.
  while (read_some(2000)) {
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the writer exited by itself (status " << status << "): it failed before the kill";
  // Only complete lines count: the kill may cut the last one.
  size_t end = data.rfind('\n');
  std::istringstream in(end == std::string::npos ? std::string() : data.substr(0, end + 1));
  std::string line;
  while (std::getline(in, line)) {
    ++acked.lines;
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "M") {
      std::string session, text;
      int64_t seq = 0;
      fields >> session >> seq >> text;
      acked.messages[session][seq] = text;
    } else if (kind == "A") {
      int64_t seq = 0;
      fields >> seq;
      acked.audit.insert(seq);
    } else {
      ADD_FAILURE() << "unexpected writer output: " << line;
    }
  }
  return acked;
}

inline std::string IntegrityCheck(const std::string& path) {
  sqlite3* db = nullptr;
  std::string out = "cannot open";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

// FTS5's check that messages_fts matches the messages it covers ("ok" or the error).
inline std::string FtsIntegrityCheck(const std::string& path) {
  sqlite3* db = nullptr;
  std::string out = "cannot open";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    char* err = nullptr;
    int rc = sqlite3_exec(db, "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')",
                          nullptr, nullptr, &err);
    out = rc == SQLITE_OK ? "ok" : (err != nullptr ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
  }
  sqlite3_close(db);
  return out;
}

// `kills` cycles of run-kill-check. Returns the total number of acknowledged lines.
inline size_t RunCrashTest(int kills, unsigned seed) {
  const std::string writer = MISSY_CRASH_WRITER;
  TempDir dir;
  const std::string path = dir.Join("crash.db");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> run_ms(20, 250);
  size_t total = 0;
  for (int cycle = 0; cycle < kills; ++cycle) {
    SCOPED_TRACE("kill #" + std::to_string(cycle + 1) + " (seed " + std::to_string(seed) + ")");
    AckedWrites acked = RunAndKill(writer, path, cycle, cycle == 0 ? 400 : run_ms(rng));
    total += acked.lines;
    EXPECT_EQ(IntegrityCheck(path), "ok");
    auto db = Database::Open(path);  // recovery happens here
    if (!db.ok()) {
      ADD_FAILURE() << "reopen after kill: " << db.status().ToString();
      return total;
    }
    Stores stores(**db);
    for (const auto& [session, acked_msgs] : acked.messages) {
      auto stored = stores.messages.Load(session, acked_msgs.begin()->first - 1);
      if (!stored.ok()) {
        ADD_FAILURE() << stored.status().ToString();
        continue;
      }
      std::map<int64_t, std::string> by_seq;
      for (const auto& m : *stored) by_seq[m.seq] = m.message.text;
      for (const auto& [seq, text] : acked_msgs) {
        auto it = by_seq.find(seq);
        if (it == by_seq.end() || it->second != text) {
          ADD_FAILURE() << "acknowledged message " << session << ":" << seq << " (" << text
                        << ") is " << (it == by_seq.end() ? "missing" : "different: " + it->second);
        }
      }
      // Gap-free: the session's counters agree with its rows.
      auto s = stores.sessions.Get(session);
      if (!s.ok()) {
        ADD_FAILURE() << s.status().ToString();
        continue;
      }
      EXPECT_EQ(s->message_count, s->last_seq) << session;
      EXPECT_GE(s->last_seq, acked_msgs.rbegin()->first) << session;
      // The last message acknowledged before the kill is searchable after restart,
      // whether or not the killed writer had indexed it.
      const auto& [last_seq, last_text] = *acked_msgs.rbegin();
      SearchOptions search;
      search.query = last_text;
      search.session_id = session;
      search.memory = false;
      search.summaries = false;
      search.max_results = 50;
      auto hits = Search(**db, search);
      if (!hits.ok()) {
        ADD_FAILURE() << "search after restart: " << hits.status().ToString();
        continue;
      }
      const std::string want = session + ":" + std::to_string(last_seq);
      EXPECT_TRUE(
          std::any_of(hits->begin(), hits->end(), [&](const MemoryHit& h) { return h.id == want; }))
          << "the last acknowledged message " << want << " (" << last_text
          << ") is not found by a search";
    }
    EXPECT_EQ(FtsIntegrityCheck(path), "ok");
    if (!acked.audit.empty()) {
      auto events = stores.audit.Since(*acked.audit.begin() - 1, 0);
      if (!events.ok()) {
        ADD_FAILURE() << events.status().ToString();
        return total;
      }
      std::set<int64_t> stored;
      for (const auto& e : *events) stored.insert(e.seq);
      for (int64_t seq : acked.audit)
        EXPECT_TRUE(stored.count(seq)) << "acknowledged audit event " << seq << " is missing";
    }
    auto verify = stores.audit.Verify();
    if (!verify.ok()) {
      ADD_FAILURE() << verify.status().ToString();
      return total;
    }
    EXPECT_TRUE(verify->ok) << "audit chain broken at " << verify->broken_seq << ": "
                            << verify->reason;
    if (::testing::Test::HasFailure()) return total;
  }
  return total;
}

}  // namespace missy::testing
