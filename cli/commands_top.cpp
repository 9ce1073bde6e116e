// top: the sessions view in the terminal over the API socket, refreshed every couple of
// seconds: id, model, messages, stored tokens, the last context's used/window with a bar
// coloured by zone, its summaries, jobs queued/running and the last activity. Keys sort
// (u used, m messages, t tokens, a activity, n name); q quits (exit 0). Plain ANSI
// escapes, no curses. When stdout or stdin is not a terminal (or with --once): one
// snapshot, as a plain table.
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/render.h"

namespace missy::cli {

namespace {

namespace json = boost::json;

struct Row {
  std::string id, model;
  int64_t messages = 0, tokens = 0;
  bool has_context = false;
  int64_t used = 0, window = 0;  // the last context: used tokens of its window (or budget)
  std::string zone;
  int64_t summaries = 0;
  int64_t queued = 0, running = 0;
  int64_t last_ms = 0;  // last activity: an append, or the last context
};

// "2026-11-21T17:03:44.276Z" as epoch milliseconds (0 when it is not one).
int64_t ParseIsoMs(const std::string& iso) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
}

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string Short(int64_t n) {
  if (n < 10000) return std::to_string(n);
  if (n < 1000000) return std::to_string(n / 1000) + "." + std::to_string(n % 1000 / 100) + "k";
  return std::to_string(n / 1000000) + "." + std::to_string(n % 1000000 / 100000) + "M";
}

std::string Ago(int64_t ms) {
  if (ms < 0) ms = 0;
  const int64_t s = ms / 1000;
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  if (s < 48 * 3600) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

// The sessions with their last context and jobs; "" or what failed.
std::string Snapshot(const ApiClient& api, std::vector<Row>& rows) {
  rows.clear();
  ApiReply sessions = api.Get("/v1/sessions?limit=1000");
  if (!sessions.ok()) return FormatError(*sessions.error);
  const json::value* list = At(sessions.body, {"sessions"});
  if (list == nullptr || !list->is_array())
    return "missyctl: the daemon's session list has no sessions";
  std::map<std::string, std::pair<int64_t, int64_t>> jobs;  // queued, running
  for (const char* state : {"queued", "running"}) {
    ApiReply r = api.Get(std::string("/v1/jobs?limit=1000&state=") + state);
    const json::value* js = r.ok() ? At(r.body, {"jobs"}) : nullptr;
    if (js == nullptr || !js->is_array()) continue;
    for (const json::value& j : js->get_array()) {
      auto& counts = jobs[StrAt(j, {"session_id"})];
      (std::string(state) == "queued" ? counts.first : counts.second) += 1;
    }
  }
  for (const json::value& s : list->get_array()) {
    Row row;
    row.id = StrAt(s, {"id"});
    row.model = StrAt(s, {"model"});
    row.messages = IntAt(s, {"message_count"});
    row.tokens = IntAt(s, {"total_tokens"});
    row.last_ms = ParseIsoMs(StrAt(s, {"updated_at"}));
    if (auto it = jobs.find(row.id); it != jobs.end()) {
      row.queued = it->second.first;
      row.running = it->second.second;
    }
    ApiReply last = api.Get("/v1/sessions/" + UrlEncode(row.id) + "/contexts?limit=1");
    const json::value* ctxs = last.ok() ? At(last.body, {"contexts"}) : nullptr;
    if (ctxs != nullptr && ctxs->is_array() && !ctxs->get_array().empty()) {
      const json::value& c = ctxs->get_array()[0];
      row.has_context = true;
      row.used = IntAt(c, {"used_tokens"});
      row.window = IntAt(c, {"window"});
      if (row.window <= 0) row.window = IntAt(c, {"budget"});
      row.zone = StrAt(c, {"zone"});
      row.summaries = IntAt(c, {"summaries"});
      row.last_ms = std::max(row.last_ms, ParseIsoMs(StrAt(c, {"at"})));
    }
    rows.push_back(std::move(row));
  }
  return "";
}

const char* SortName(char key) {
  switch (key) {
    case 'm':
      return "messages";
    case 't':
      return "tokens";
    case 'a':
      return "activity";
    case 'n':
      return "name";
    default:
      return "used";
  }
}

void SortRows(std::vector<Row>& rows, char key) {
  auto by = [&](auto value) {
    std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
      return value(a) != value(b) ? value(a) > value(b) : a.id < b.id;
    });
  };
  switch (key) {
    case 'm':
      by([](const Row& r) { return r.messages; });
      break;
    case 't':
      by([](const Row& r) { return r.tokens; });
      break;
    case 'a':
      by([](const Row& r) { return r.last_ms; });
      break;
    case 'n':
      std::stable_sort(rows.begin(), rows.end(),
                       [](const Row& a, const Row& b) { return a.id < b.id; });
      break;
    default:
      by([](const Row& r) { return r.has_context ? r.used : int64_t{-1}; });
      break;
  }
}

constexpr size_t kBar = 10;
// Widths after the id column, each preceded by one space: model, msgs, tokens,
// used/window, bar, sums, jobs, active.
constexpr size_t kModel = 10, kMsgs = 6, kTokens = 7, kUsed = 11, kSums = 4, kJobs = 5, kActive = 6;
constexpr size_t kFixed = 1 + kModel + 1 + kMsgs + 1 + kTokens + 1 + kUsed + 1 + kBar + 1 + kSums +
                          1 + kJobs + 1 + kActive;

// One line of the view, `width` columns; the bar coloured by zone when `color`.
std::string Line(const std::vector<std::string>& cells, const std::string& zone, size_t width,
                 bool color) {
  const size_t id_width = width > kFixed + 4 ? width - kFixed : 4;
  std::string head = PadRight(cells[0], id_width) + " " + PadRight(cells[1], kModel) + " " +
                     PadLeft(cells[2], kMsgs) + " " + PadLeft(cells[3], kTokens) + " " +
                     PadLeft(cells[4], kUsed) + " ";
  std::string bar = PadRight(cells[5], kBar);
  std::string tail = " " + PadLeft(cells[6], kSums) + " " + PadLeft(cells[7], kJobs) + " " +
                     PadLeft(cells[8], kActive);
  if (width < kFixed + 4) return Ellipsize(head + bar + tail, width);
  if (color && !zone.empty()) {
    const char* code = zone == "overflow"  ? "\x1b[31m"
                       : zone == "warning" ? "\x1b[33m"
                                           : "\x1b[32m";
    bar = code + bar + "\x1b[0m";
  }
  return head + bar + tail;
}

std::vector<std::string> Render(std::vector<Row> rows, char key, size_t width, size_t max_rows,
                                bool color, const std::string& error) {
  SortRows(rows, key);
  std::vector<std::string> out;
  out.push_back(Ellipsize("missyd top: " + Count(static_cast<int64_t>(rows.size()), "session") +
                              ", sorted by " + SortName(key) + " (u m t a n sorts, q quits)",
                          width));
  std::string title =
      Line({"ID", "MODEL", "MSGS", "TOKENS", "USED/WINDOW", "CONTEXT", "SUMS", "JOBS", "ACTIVE"},
           "", width, false);
  out.push_back(color ? "\x1b[7m" + title + "\x1b[0m" : title);
  if (!error.empty()) out.push_back(Ellipsize(error, width));
  const int64_t now = NowMs();
  for (const Row& r : rows) {
    if (out.size() >= max_rows + 2) break;
    std::string used = "-", bar = "", sums = "-";
    if (r.has_context) {
      used = Short(r.used) + "/" + Short(r.window);
      const int64_t fill =
          r.window > 0 ? std::clamp<int64_t>((r.used * kBar + r.window / 2) / r.window, 0, kBar)
                       : 0;
      bar = std::string(static_cast<size_t>(fill), '#') +
            std::string(kBar - static_cast<size_t>(fill), '.');
      sums = std::to_string(r.summaries);
    }
    out.push_back(
        Line({r.id, r.model.empty() ? "-" : r.model, std::to_string(r.messages), Short(r.tokens),
              used, bar, sums, std::to_string(r.queued) + "/" + std::to_string(r.running),
              r.last_ms > 0 ? Ago(now - r.last_ms) : "-"},
             r.has_context ? r.zone : "", width, color));
  }
  return out;
}

volatile std::sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

// The terminal in raw mode (no echo, no line buffering) and the alternate screen, for
// as long as it lives.
class RawTerminal {
 public:
  RawTerminal() {
    ok_ = tcgetattr(STDIN_FILENO, &saved_) == 0;
    if (ok_) {
      termios raw = saved_;
      raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    std::fputs("\x1b[?1049h\x1b[?25l", stdout);
    std::fflush(stdout);
  }
  ~RawTerminal() {
    std::fputs("\x1b[?25h\x1b[?1049l", stdout);
    std::fflush(stdout);
    if (ok_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }

 private:
  termios saved_{};
  bool ok_ = false;
};

void Draw(const std::vector<std::string>& lines) {
  std::string frame = "\x1b[H";
  for (const std::string& l : lines) frame += l + "\x1b[K\r\n";
  frame += "\x1b[J";
  std::fputs(frame.c_str(), stdout);
  std::fflush(stdout);
}

int Top(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (!NeedArgs(env, self, args, 0, 0, &rc)) return rc;
  const std::string sort = args.Get("--sort", "used");
  char key = 0;
  for (char k : {'u', 'm', 't', 'a', 'n'}) {
    if (sort == SortName(k)) key = k;
  }
  if (key == 0) {
    return UsageError(
        env, self, "--sort: expected used, messages, tokens, activity or name, got '" + sort + "'");
  }
  Result<int64_t> interval = IntOption(args, "--interval", 1, 60, 2);
  if (!interval.ok()) return UsageError(env, self, interval.status().message());
  ApiClient api = env.Api();
  api.set_timeout(std::chrono::seconds(5));
  std::vector<Row> rows;
  const bool tty = isatty(STDOUT_FILENO) == 1 && isatty(STDIN_FILENO) == 1 && !args.Has("--once");
  if (!tty) {
    if (std::string error = Snapshot(api, rows); !error.empty()) {
      std::fprintf(env.err, "%s\n", error.c_str());
      return kExitFailure;
    }
    std::string out;
    for (const std::string& l : Render(rows, key, kTerminalWidth, rows.size(), false, ""))
      out += l + "\n";
    Print(env, out);
    return kExitOk;
  }
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGWINCH, &sa, nullptr);  // interrupts the wait: the next frame takes the new size
  RawTerminal terminal;
  bool fetch = true;
  std::string error;
  while (g_stop == 0) {
    if (fetch) error = Snapshot(api, rows);
    winsize ws{};
    const bool sized = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0;
    const size_t width = sized ? ws.ws_col : kTerminalWidth;
    const size_t height = sized && ws.ws_row > 3 ? ws.ws_row - 3 : 20;
    Draw(Render(rows, key, width, height, true, error));
    pollfd in{STDIN_FILENO, POLLIN, 0};
    fetch = true;
    if (poll(&in, 1, static_cast<int>(*interval * 1000)) > 0) {
      char buf[16];
      const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
      for (ssize_t i = 0; i < n; ++i) {
        const char c = buf[i];
        if (c == 'q' || c == 'Q') return kExitOk;
        if (c == 'u' || c == 'm' || c == 't' || c == 'a' || c == 'n') {
          key = c;
          fetch = false;  // re-sort what is shown at once
        }
      }
    }
  }
  return kExitOk;
}

}  // namespace

void AddTopCommands(std::vector<CommandSpec>& out) {
  out.push_back({"top",
                 "top\tthe sessions view, refreshing (q quits)",
                 "usage: missyctl top [--sort used|messages|tokens|activity|name] [--interval S]\n"
                 "                    [--once]\n"
                 "\n"
                 "The sessions in the terminal, refreshed every S seconds (1-60, default 2): id,\n"
                 "model, messages, stored tokens, the last context's used tokens of its window\n"
                 "with a bar coloured by zone (green safe, yellow warning, red overflow), its\n"
                 "summaries, summarize jobs queued/running, and the time since the last append\n"
                 "or context. Keys: u used, m messages, t tokens, a activity (newest first),\n"
                 "n name; q quits. When stdin or stdout is not a terminal, or with --once, one\n"
                 "snapshot is printed as a plain table.\n",
                 {{"--sort", true, ""}, {"--interval", true, ""}, {"--once", false, ""}},
                 Top});
}

}  // namespace missy::cli
