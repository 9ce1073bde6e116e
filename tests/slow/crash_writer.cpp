// A writer process for the crash tests: appends messages and audit events from several
// threads as fast as it can and prints every acknowledged write to stdout, flushed,
// so a test can SIGKILL it at any instant and then check that each printed write
// survived. Lines: "M <session> <seq> <text>" and "A <seq>".
//   crash_writer DB_PATH THREADS RUN_ID
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/database.h"
#include "storage/stores.h"

namespace {

std::mutex out_mu;

void Emit(const std::string& line) {
  std::lock_guard lock(out_mu);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: crash_writer DB_PATH THREADS RUN_ID\n");
    return 2;
  }
  const std::string path = argv[1];
  const int threads = std::atoi(argv[2]);
  const std::string run = argv[3];
  auto opened = missy::Database::Open(path);
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    return 1;
  }
  missy::Stores stores(**opened);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const std::string session = "w" + std::to_string(t);
      missy::Session s;
      s.id = session;
      s.created_at_ms = 1;
      missy::Status created = stores.sessions.Create(s);
      if (!created.ok() && created.code() != missy::StatusCode::kAlreadyExists) {
        std::fprintf(stderr, "create: %s\n", created.ToString().c_str());
        std::_Exit(1);
      }
      for (int i = 0;; ++i) {
        std::vector<missy::NewMessage> batch;
        for (int k = 0; k <= i % 3; ++k) {
          std::string text =
              "r" + run + "-" + session + "-" + std::to_string(i) + "-" + std::to_string(k);
          batch.push_back(missy::NewMessage{missy::Message::User(text), 3, 0, {}});
        }
        auto r = stores.messages.Append(session, std::move(batch), i);
        if (!r.ok()) {
          std::fprintf(stderr, "append: %s\n", r.status().ToString().c_str());
          std::_Exit(1);
        }
        std::string lines;
        for (const auto& m : *r) {
          lines += "M " + session + " " + std::to_string(m.seq) + " " + m.message.text + "\n";
        }
        if (i % 4 == 0) {
          missy::AuditEvent e;
          e.timestamp_ms = i;
          e.session_id = session;
          e.event_type = "messages.appended";
          e.category = "context";
          e.result = "allow";
          auto a = stores.audit.Append(e);
          if (!a.ok()) {
            std::fprintf(stderr, "audit: %s\n", a.status().ToString().c_str());
            std::_Exit(1);
          }
          lines += "A " + std::to_string(a->seq) + "\n";
        }
        Emit(lines);
      }
    });
  }
  for (auto& w : workers) w.join();
  return 0;
}
