// Broker bridge benchmark (issue 12): audit events published per second to a local
// `nats-server -js` (file store, every publish waits for its ack), from a backlog in
// SQLite (the rate after an outage) and live while 64 writer threads emit events (the
// lag they leave). Usage: broker_bench [--events N] [--dir DIR]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/audit_event.h"
#include "daemon/broker/audit_publisher.h"
#include "storage/audit_log.h"
#include "storage/database.h"
#include "storage/stores.h"
// The same nats-server launcher the broker tests use (header-only, no test framework).
#include "tests/daemon/broker/nats_test_util.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

missy::AuditEvent Event(int i) {
  missy::AuditEvent e;
  e.timestamp_ms = 1700000000000 + i;
  e.session_id = "bench-" + std::to_string(i % 64);
  e.event_type = i % 3 == 0 ? "messages.appended" : "context.built";
  e.category = "context";
  e.result = "allow";
  e.detail_json = R"({"count":1,"first_seq":12,"last_seq":12,"tokens":57,"encoding":"o200k_base"})";
  return e;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  int events = 20000;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--events") && i + 1 < argc) events = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
  }
  if (dir.empty()) {
    std::string tmpl = "/var/tmp/missy-broker-bench-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  fs::create_directories(dir + "/nats");
  missy::testing::NatsServer nats(missy::testing::FreeLoopbackPort(), dir + "/nats");
  if (!nats.Start()) {
    std::fprintf(stderr, "nats-server did not start (is it installed? scripts/install-deps)\n");
    return 1;
  }
  auto db = missy::Database::Open(dir + "/missyd.db");
  if (!db.ok()) return 1;
  missy::Stores stores(**db);

  missy::AuditPublisherOptions o;
  o.endpoint.url = nats.url();
  o.daemon_id = "bench";
  std::printf("missyd broker bridge: nats-server -js (file store) on loopback, one acked "
              "publish at a time\n");

  // 1. A backlog (events committed while the broker was away) drained.
  for (int i = 0; i < events; ++i) (void)stores.audit.Append(Event(i));
  double backlog_rate = 0;
  {
    missy::AuditPublisher pub(stores.audit, o);
    const auto t0 = Clock::now();
    pub.Start();
    if (!pub.WaitPublished(events, std::chrono::minutes(5))) {
      std::fprintf(stderr, "backlog not drained: %s\n", pub.Stats().last_error.c_str());
      return 1;
    }
    backlog_rate = events / Seconds(Clock::now() - t0);
  }
  std::printf("  backlog of %d events drained: %.0f events/s\n", events, backlog_rate);

  // 2. Live: 64 agents, each emitting 50 events/s (an append and a context a second
  //    make about 3 per agent: this is a busy team's load many times over); the lag is
  //    sampled every 50 ms.
  missy::AuditPublisher pub(stores.audit, o);
  pub.Start();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> emitted{0}, last_seq{events};
  std::vector<std::thread> writers;
  for (int w = 0; w < 64; ++w) {
    writers.emplace_back([&, w] {
      auto next = Clock::now();
      for (int i = w; !stop.load(); i += 64) {
        next += std::chrono::milliseconds(20);
        std::this_thread::sleep_until(next);
        auto r = stores.audit.Append(Event(i));
        if (!r.ok()) return;
        ++emitted;
        int64_t seen = last_seq.load();
        while (r->seq > seen && !last_seq.compare_exchange_weak(seen, r->seq)) {
        }
        pub.Notify(r->seq);
      }
    });
  }
  std::vector<int64_t> lags;
  const auto t0 = Clock::now();
  while (Clock::now() - t0 < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    lags.push_back(pub.Stats().backlog());
  }
  stop = true;
  for (auto& t : writers) t.join();
  const double live_s = Seconds(Clock::now() - t0);
  const int64_t before_drain = pub.Stats().cursor;
  const auto d0 = Clock::now();
  pub.WaitPublished(last_seq.load(), std::chrono::minutes(5));
  const double drain_s = Seconds(Clock::now() - d0);
  std::sort(lags.begin(), lags.end());
  std::printf("  live, 64 agents at 50 events/s each for %.1f s: %.0f events/s emitted, %.0f events/s published; "
              "lag p50 %lld, max %lld events; the rest drained in %.2f s\n",
              live_s, emitted.load() / live_s, (before_drain - events) / live_s,
              static_cast<long long>(lags[lags.size() / 2]),
              static_cast<long long>(lags.back()), drain_s);
  pub.Stop();
  nats.Stop();
  db->reset();
  fs::remove_all(dir);
  return 0;
}
