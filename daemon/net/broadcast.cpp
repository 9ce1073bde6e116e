// Broadcast subscribers: one per audit-socket connection, on its own strand. See
// server.h for the contract (first line, paged backlog, live lines, gap notice).
//
// Phases: kHandshake (waiting for the first line) -> kBacklog (paging the provider) ->
// kLive; kCutting sends a last notice line, kClosed is final. Offer() runs on publisher
// threads and only takes mu_; everything touching the socket runs on the strand.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <deque>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

#include "daemon/metrics/net_stats.h"
#include "daemon/net/connection.h"

namespace missy::net {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using Local = asio::local::stream_protocol;
using error_code = boost::system::error_code;

constexpr std::chrono::seconds kFirstLineWait(1);
constexpr size_t kFirstLineMax = 4096;
constexpr std::chrono::milliseconds kNoticeWait(500);
constexpr size_t kWriteChunk = 256 * 1024;
constexpr int64_t kNoFloor = std::numeric_limits<int64_t>::min();

std::string NoticeLine(std::string_view type, json::object detail) {
  json::object o;
  o["event_type"] = type;
  o["detail"] = std::move(detail);
  return json::serialize(o);
}

// Parses the optional first line of a subscriber.
Result<SubscribeRequest> ParseSubscribeLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n' || line.back() == ' ')) {
    line.remove_suffix(1);
  }
  SubscribeRequest req;
  if (line.empty()) return req;
  error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return Status::InvalidArgument("first line is not a JSON object");
  const json::object& o = v.get_object();
  for (const auto& [key, value] : o) {
    if (key == "since") {
      if (value.is_int64()) {
        req.since = value.get_int64();
      } else if (value.is_uint64() &&
                 value.get_uint64() <= uint64_t(std::numeric_limits<int64_t>::max())) {
        req.since = static_cast<int64_t>(value.get_uint64());
      } else {
        return Status::InvalidArgument("since must be an integer", "since");
      }
      if (req.since < -1) return Status::InvalidArgument("since must be >= -1", "since");
    } else if (key == "types") {
      if (!value.is_array()) return Status::InvalidArgument("types must be an array", "types");
      for (const auto& t : value.get_array()) {
        if (!t.is_string()) {
          return Status::InvalidArgument("types must be an array of strings", "types");
        }
        req.types.emplace_back(t.get_string());
      }
    } else {
      return Status::InvalidArgument("unknown key '" + std::string(key) + "'", std::string(key));
    }
  }
  return req;
}

int64_t SeqOfLine(const std::string& line) {
  error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return kNoFloor;
  const json::value* seq = v.get_object().if_contains("seq");
  if (seq && seq->is_int64()) return seq->get_int64();
  if (seq && seq->is_uint64()) return static_cast<int64_t>(seq->get_uint64());
  return kNoFloor;
}

class Subscriber final : public BroadcastSubscriber,
                         public std::enable_shared_from_this<Subscriber> {
 public:
  Subscriber(ServerContext* server, Local::socket socket)
      : server_(server), socket_(std::move(socket)), timer_(socket_.get_executor()) {
    metrics::NetStats& stats = metrics::ProcessNetStats();
    ++stats.audit_subscribers;
    ++stats.audit_subscribers_total;
  }
  ~Subscriber() override { --metrics::ProcessNetStats().audit_subscribers; }

  void Start() override {
    asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->ReadFirstLine(); });
  }
  // A subscription has no end of its own: it closes as soon as the server stops.
  void OnServerStopping() override { ForceClose(); }
  void ForceClose() override {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
  }
  void Offer(const PublishedPtr& p) override;

 private:
  enum class Phase { kHandshake, kBacklog, kLive, kCutting, kClosed };

  void ReadFirstLine();
  void OnFirstLine(const error_code& ec, size_t n);
  void Begin(const SubscribeRequest& req);
  void FetchPage();
  void OnPage(BacklogPage page, int64_t after_seq, uint64_t drops_at_call);
  void Drain();
  void GoLive();
  // Drops held lines at or below live_floor_ or of unwanted types. mu_ held.
  void PruneLocked();
  // Drops everything queued, sends `notice` (best effort) and closes. mu_ held.
  // `too_slow`: the notice is a gap (counted in NetStats).
  void CutLocked(std::string notice, bool too_slow = false);
  void ScheduleWriteLocked();  // mu_ held
  void DoWrite();
  void OnWrite(const error_code& ec);
  bool WantedLocked(const Published& p) const;
  void CloseNow();

  ServerContext* server_;
  Local::socket socket_;
  asio::steady_timer timer_;

  // Strand only.
  std::string first_line_;
  bool first_line_timed_out_ = false;
  std::array<char, 512> drain_buf_{};
  SubscribeRequest strand_request_;
  int64_t cursor_ = kNoFloor;         // after_seq of the next backlog page
  std::vector<std::string> backlog_;  // the page being written
  size_t backlog_pos_ = 0;
  bool writing_ = false;
  bool notice_in_flight_ = false;
  bool closed_ = false;
  std::vector<PublishedPtr> in_flight_;
  size_t in_flight_bytes_ = 0;

  // Guarded by mu_ (Offer runs on publisher threads).
  std::mutex mu_;
  Phase phase_ = Phase::kHandshake;
  SubscribeRequest request_;
  int64_t live_floor_ = kNoFloor;              // live lines need seq > floor
  std::deque<PublishedPtr> pending_;           // arrived before the backlog was sent
  std::deque<PublishedPtr> queue_;             // live lines waiting to be written
  size_t queued_bytes_ = 0;                    // pending_ + queue_ + in flight
  uint64_t pending_drops_ = 0;                 // times pending_ overflowed before going live
  int64_t handshake_dropped_from_ = kNoFloor;  // seqs dropped before the first line
  int64_t handshake_dropped_to_ = kNoFloor;
  uint64_t handshake_dropped_lines_ = 0;  // how many lines those were
  bool write_scheduled_ = false;
  std::string notice_;  // gap or error line to send before closing
};

void Subscriber::ReadFirstLine() {
  timer_.expires_after(kFirstLineWait);
  timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->closed_) return;
    std::lock_guard<std::mutex> lock(self->mu_);
    if (self->phase_ != Phase::kHandshake) return;
    self->first_line_timed_out_ = true;
    error_code ignored;
    self->socket_.cancel(ignored);
  });
  asio::async_read_until(
      socket_, asio::dynamic_buffer(first_line_, kFirstLineMax), '\n',
      [self = shared_from_this()](const error_code& ec, size_t n) { self->OnFirstLine(ec, n); });
}

void Subscriber::OnFirstLine(const error_code& ec, size_t n) {
  if (closed_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (phase_ != Phase::kHandshake) return;  // cut off while waiting
  }
  timer_.cancel();
  if (ec == asio::error::operation_aborted && first_line_timed_out_) return Begin({});
  if (ec == asio::error::not_found) {
    std::lock_guard<std::mutex> lock(mu_);
    json::object d;
    d["reason"] = "first line longer than " + std::to_string(kFirstLineMax) + " bytes";
    CutLocked(NoticeLine("audit.error", std::move(d)));
    return;
  }
  if (ec) return CloseNow();
  auto req = ParseSubscribeLine(std::string_view(first_line_).substr(0, n));
  first_line_.clear();
  if (!req.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    json::object d;
    d["reason"] = req.status().ToString();
    CutLocked(NoticeLine("audit.error", std::move(d)));
    return;
  }
  Begin(*req);
}

void Subscriber::Begin(const SubscribeRequest& req) {
  const bool paged = req.since >= 0 && server_->has_backlog();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (phase_ != Phase::kHandshake) return;
    request_ = req;
    phase_ = Phase::kBacklog;
    // Lines published from now on are held in pending_; live_floor_ rises with each
    // page, which removes the overlap with what the backlog returns.
    live_floor_ = req.since >= 0 ? req.since : kNoFloor;
    PruneLocked();
    if (!paged && handshake_dropped_to_ > live_floor_) {
      // Lines were dropped while waiting for the first line, and no backlog brings them.
      json::object d;
      d["reason"] = "subscriber too slow";
      d["dropped_from_seq"] = std::max(handshake_dropped_from_, live_floor_ + 1);
      // They count as lost, with those held since (CutLocked counts these): the ones the
      // request wanted, above its floor.
      const uint64_t wanted =
          live_floor_ < handshake_dropped_from_
              ? handshake_dropped_lines_
              : std::min<uint64_t>(handshake_dropped_lines_,
                                   static_cast<uint64_t>(handshake_dropped_to_ - live_floor_));
      metrics::ProcessNetStats().audit_lines_dropped += wanted;
      CutLocked(NoticeLine("audit.gap", std::move(d)), /*too_slow=*/true);
      return;
    }
  }
  strand_request_ = req;
  cursor_ = req.since;
  Drain();
  if (!paged) return GoLive();
  FetchPage();
}

void Subscriber::FetchPage() {
  uint64_t drops = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    drops = pending_drops_;
  }
  const int64_t after = cursor_;
  server_->FetchBacklogPage(strand_request_, after,
                            [self = shared_from_this(), after, drops](BacklogPage page) {
                              asio::post(self->socket_.get_executor(),
                                         [self, after, drops, page = std::move(page)]() mutable {
                                           self->OnPage(std::move(page), after, drops);
                                         });
                            });
}

void Subscriber::OnPage(BacklogPage page, int64_t after_seq, uint64_t drops_at_call) {
  if (closed_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (phase_ != Phase::kBacklog) return;  // cut off meanwhile
    if (page.failed) {
      json::object d;
      d["reason"] = "backlog failed: " + page.error;
      CutLocked(NoticeLine("audit.error", std::move(d)));
      return;
    }
  }
  int64_t next = page.last_seq_seen;
  if (!page.lines.empty()) next = std::max(next, SeqOfLine(page.lines.back()));
  if (next <= after_seq) {
    if (!page.lines.empty()) {
      spdlog::error("audit backlog: the provider returned {} line(s) without advancing past seq {}",
                    page.lines.size(), after_seq);
      return GoLive();
    }
    bool dropped_meanwhile = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      dropped_meanwhile = pending_drops_ != drops_at_call;
    }
    // Held live lines were dropped during this call: page them back before going live.
    if (dropped_meanwhile) return FetchPage();
    return GoLive();
  }
  cursor_ = next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_floor_ = next;
    PruneLocked();
  }
  if (page.lines.empty()) return FetchPage();  // nothing matched the types in that range
  backlog_ = std::move(page.lines);
  backlog_pos_ = 0;
  DoWrite();
}

// Detects the peer going away; whatever it sends after the first line is ignored.
void Subscriber::Drain() {
  socket_.async_read_some(asio::buffer(drain_buf_),
                          [self = shared_from_this()](const error_code& ec, size_t) {
                            if (ec) return self->CloseNow();
                            self->Drain();
                          });
}

void Subscriber::GoLive() {
  backlog_.clear();
  backlog_pos_ = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (phase_ != Phase::kBacklog) return;
    phase_ = Phase::kLive;
    PruneLocked();
    for (auto& p : pending_) queue_.push_back(std::move(p));
    pending_.clear();
  }
  DoWrite();
}

void Subscriber::PruneLocked() {
  std::deque<PublishedPtr> kept;
  for (auto& p : pending_) {
    if (WantedLocked(*p)) {
      kept.push_back(std::move(p));
    } else {
      queued_bytes_ -= p->bytes();
    }
  }
  pending_ = std::move(kept);
}

bool Subscriber::WantedLocked(const Published& p) const {
  if (p.seq <= live_floor_) return false;
  if (request_.types.empty()) return true;
  return std::find(request_.types.begin(), request_.types.end(), p.type) != request_.types.end();
}

void Subscriber::Offer(const PublishedPtr& p) {
  std::lock_guard<std::mutex> lock(mu_);
  switch (phase_) {
    case Phase::kCutting:
    case Phase::kClosed:
      return;
    case Phase::kHandshake:
      pending_.push_back(p);
      break;
    case Phase::kBacklog:
      if (!WantedLocked(*p)) return;
      pending_.push_back(p);
      break;
    case Phase::kLive:
      if (!WantedLocked(*p)) return;
      queue_.push_back(p);
      break;
  }
  queued_bytes_ += p->bytes();
  if (queued_bytes_ <= server_->options().subscriber_buffer_bytes) {
    if (phase_ == Phase::kLive) ScheduleWriteLocked();
    return;
  }
  if (phase_ == Phase::kHandshake || phase_ == Phase::kBacklog) {
    // Every held line was persisted before it was published: a backlog pages them back,
    // so holding them is not needed (and would not be bounded). Without a backlog, Begin
    // reports the gap.
    if (phase_ == Phase::kHandshake) {
      if (handshake_dropped_from_ == kNoFloor) handshake_dropped_from_ = pending_.front()->seq;
      handshake_dropped_to_ = pending_.back()->seq;
      handshake_dropped_lines_ += pending_.size();
    }
    for (const auto& held : pending_) queued_bytes_ -= held->bytes();
    pending_.clear();
    ++pending_drops_;
    return;
  }
  int64_t dropped_from = !queue_.empty()     ? queue_.front()->seq
                         : !pending_.empty() ? pending_.front()->seq
                                             : p->seq;
  json::object d;
  d["reason"] = "subscriber too slow";
  d["dropped_from_seq"] = dropped_from;
  CutLocked(NoticeLine("audit.gap", std::move(d)), /*too_slow=*/true);
}

void Subscriber::CutLocked(std::string notice, bool too_slow) {
  phase_ = Phase::kCutting;
  if (too_slow) {
    metrics::NetStats& stats = metrics::ProcessNetStats();
    ++stats.audit_subscribers_cut;
    stats.audit_lines_dropped += queue_.size() + pending_.size();
  }
  for (const auto& p : queue_) queued_bytes_ -= p->bytes();
  for (const auto& p : pending_) queued_bytes_ -= p->bytes();
  queue_.clear();
  pending_.clear();
  notice_ = std::move(notice);
  ScheduleWriteLocked();
  // Best effort: if the notice cannot be written within kNoticeWait, close anyway.
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->timer_.expires_after(kNoticeWait);
    self->timer_.async_wait([self](const error_code& ec) {
      if (!ec) self->CloseNow();
    });
  });
}

void Subscriber::ScheduleWriteLocked() {
  if (write_scheduled_) return;
  write_scheduled_ = true;
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->DoWrite(); });
}

void Subscriber::DoWrite() {
  static const char kNewline = '\n';
  if (closed_ || writing_) return;
  std::vector<asio::const_buffer> bufs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    write_scheduled_ = false;
    switch (phase_) {
      case Phase::kClosed:
      case Phase::kHandshake:
        return;
      case Phase::kCutting:
        if (notice_.empty() || notice_in_flight_) return;
        notice_ += '\n';
        notice_in_flight_ = true;
        bufs.push_back(asio::buffer(notice_));
        break;
      case Phase::kBacklog: {
        size_t bytes = 0;
        while (backlog_pos_ < backlog_.size() && bytes < kWriteChunk) {
          const std::string& line = backlog_[backlog_pos_++];
          bufs.push_back(asio::buffer(line));
          bufs.push_back(asio::buffer(&kNewline, 1));
          bytes += line.size() + 1;
        }
        break;
      }
      case Phase::kLive:
        while (!queue_.empty() && in_flight_bytes_ < kWriteChunk) {
          PublishedPtr p = std::move(queue_.front());
          queue_.pop_front();
          bufs.push_back(asio::buffer(p->line));
          bufs.push_back(asio::buffer(&kNewline, 1));
          in_flight_bytes_ += p->bytes();
          in_flight_.push_back(std::move(p));
        }
        break;
    }
  }
  if (bufs.empty()) return;
  writing_ = true;
  asio::async_write(socket_, bufs, [self = shared_from_this()](const error_code& ec, size_t) {
    self->OnWrite(ec);
  });
}

void Subscriber::OnWrite(const error_code& ec) {
  writing_ = false;
  if (ec || closed_) return CloseNow();
  if (notice_in_flight_) return CloseNow();  // the notice was the last line
  bool page_done = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_bytes_ -= in_flight_bytes_;
    in_flight_bytes_ = 0;
    metrics::ProcessNetStats().audit_lines_sent += in_flight_.size();
    in_flight_.clear();
    page_done = phase_ == Phase::kBacklog && backlog_pos_ >= backlog_.size();
  }
  if (page_done) {
    backlog_.clear();
    backlog_pos_ = 0;
    return FetchPage();
  }
  DoWrite();
}

void Subscriber::CloseNow() {
  if (closed_) return;
  closed_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    phase_ = Phase::kClosed;
    queue_.clear();
    pending_.clear();
  }
  timer_.cancel();
  error_code ignored;
  socket_.shutdown(Local::socket::shutdown_both, ignored);
  socket_.close(ignored);
  server_->ConnectionClosed(this);
}

}  // namespace

std::shared_ptr<BroadcastSubscriber> MakeSubscriber(asio::io_context& io, ServerContext* server,
                                                    int fd) {
  Local::socket socket(asio::make_strand(io));
  error_code ec;
  socket.assign(Local(), fd, ec);
  if (ec) {
    close(fd);
    spdlog::warn("cannot use an accepted subscriber connection: {}", ec.message());
    return nullptr;
  }
  return std::make_shared<Subscriber>(server, std::move(socket));
}

}  // namespace missy::net
