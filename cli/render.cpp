#include "cli/render.h"

#include <boost/json.hpp>
#include <cstdio>

namespace missy::cli {

namespace json = boost::json;

// --- JSON access -----------------------------------------------------------------------

const json::value* At(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* cur = &v;
  for (std::string_view key : path) {
    if (!cur->is_object()) return nullptr;
    cur = cur->get_object().if_contains(key);
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

int64_t IntAt(const json::value& v, std::initializer_list<std::string_view> path,
              int64_t fallback) {
  const json::value* x = At(v, path);
  if (x == nullptr) return fallback;
  if (x->is_int64()) return x->get_int64();
  if (x->is_uint64()) return static_cast<int64_t>(x->get_uint64());
  if (x->is_double()) return static_cast<int64_t>(x->get_double());
  return fallback;
}

double NumAt(const json::value& v, std::initializer_list<std::string_view> path, double fallback) {
  const json::value* x = At(v, path);
  if (x == nullptr || !x->is_number()) return fallback;
  return x->to_number<double>();
}

std::string StrAt(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* x = At(v, path);
  return x != nullptr && x->is_string() ? std::string(x->get_string()) : std::string();
}

bool BoolAt(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* x = At(v, path);
  return x != nullptr && x->is_bool() && x->get_bool();
}

namespace {

const json::array& ArrayAt(const json::value& v, std::initializer_list<std::string_view> path) {
  static const json::array kEmpty;
  const json::value* x = At(v, path);
  return x != nullptr && x->is_array() ? x->get_array() : kEmpty;
}

std::string Scalar(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_null()) return "null";
  return json::serialize(v);
}

void Pretty(const json::value& v, std::string& out, int depth) {
  auto indent = [&](int d) { out.append(static_cast<size_t>(d) * 2, ' '); };
  if (v.is_object() && !v.get_object().empty()) {
    out += "{\n";
    size_t i = 0;
    for (const auto& kv : v.get_object()) {
      indent(depth + 1);
      out += json::serialize(json::string(kv.key())) + ": ";
      Pretty(kv.value(), out, depth + 1);
      out += ++i < v.get_object().size() ? ",\n" : "\n";
    }
    indent(depth);
    out += "}";
  } else if (v.is_array() && !v.get_array().empty()) {
    out += "[\n";
    const json::array& a = v.get_array();
    for (size_t i = 0; i < a.size(); ++i) {
      indent(depth + 1);
      Pretty(a[i], out, depth + 1);
      out += i + 1 < a.size() ? ",\n" : "\n";
    }
    indent(depth);
    out += "]";
  } else {
    out += json::serialize(v);
  }
}

void Flatten(const json::value& v, const std::string& prefix, std::string& out) {
  if (v.is_object() && !v.get_object().empty()) {
    for (const auto& kv : v.get_object()) {
      Flatten(kv.value(),
              prefix.empty() ? std::string(kv.key()) : prefix + "." + std::string(kv.key()), out);
    }
    return;
  }
  std::string value;
  if (v.is_array()) {
    bool scalars = true;
    for (const json::value& x : v.get_array()) scalars = scalars && !x.is_structured();
    if (scalars) {
      value = "[";
      for (size_t i = 0; i < v.get_array().size(); ++i) {
        value += (i > 0 ? ", " : "") + Scalar(v.get_array()[i]);
      }
      value += "]";
    } else {
      value = json::serialize(v);
    }
  } else {
    value = v.is_object() ? "{}" : Scalar(v);
  }
  out += prefix + " = " + value + "\n";
}

std::string Pct(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(part) / whole);
  return buf;
}

std::string SeqList(const json::array& seqs, size_t max_shown = 8) {
  std::string out;
  for (size_t i = 0; i < seqs.size() && i < max_shown; ++i) {
    out += (i > 0 ? ", " : "") + Scalar(seqs[i]);
  }
  if (seqs.size() > max_shown) out += ", … (" + std::to_string(seqs.size()) + ")";
  return out;
}

// "label:      text", cut to the width.
std::string Note(std::string_view label, const std::string& text, size_t width) {
  return Ellipsize(PadRight(label, 11) + text, width) + "\n";
}

}  // namespace

std::string PrettyJson(const json::value& v) {
  std::string out;
  Pretty(v, out, 0);
  return out + "\n";
}

std::string FlattenJson(const json::value& v) {
  std::string out;
  Flatten(v, "", out);
  return out;
}

// --- Sessions --------------------------------------------------------------------------

std::string RenderSessions(const json::value& body, size_t width) {
  const json::array& list = ArrayAt(body, {"sessions"});
  if (list.empty()) return "(no sessions)\n";
  Table t({{"ID", Align::kLeft, true, 8},
           {"MODEL", Align::kLeft, true, 6},
           {"MSGS", Align::kRight},
           {"TOKENS", Align::kRight},
           {"UPDATED", Align::kLeft}});
  for (const json::value& s : list) {
    t.AddRow({StrAt(s, {"id"}), StrAt(s, {"model"}).empty() ? "-" : StrAt(s, {"model"}),
              Thousands(IntAt(s, {"message_count"})), Thousands(IntAt(s, {"total_tokens"})),
              ShortTimestamp(StrAt(s, {"updated_at"}))});
  }
  return t.Render(width);
}

std::string RenderSession(const json::value& s, size_t width) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    out += Ellipsize(PadRight(key, 16) + value, width) + "\n";
  };
  line("id", StrAt(s, {"id"}));
  line("model", StrAt(s, {"model"}).empty() ? "-" : StrAt(s, {"model"}));
  line("messages", Thousands(IntAt(s, {"message_count"})) + " (last seq " +
                       Thousands(IntAt(s, {"last_seq"})) + ")");
  line("tokens", Thousands(IntAt(s, {"total_tokens"})));
  line("created", ShortTimestamp(StrAt(s, {"created_at"})));
  line("updated", ShortTimestamp(StrAt(s, {"updated_at"})));
  const int64_t window = IntAt(s, {"context_window"});
  line("context window", window > 0 ? Thousands(window) : "the model's");
  line("strict", BoolAt(s, {"strict"}) ? "yes" : "no");
  std::string backend = StrAt(s, {"summarizer", "backend"});
  std::string provider = StrAt(s, {"summarizer", "provider"});
  line("summarizer", (backend.empty() ? "configured backend" : backend) +
                         (provider.empty() ? "" : " via " + provider));
  const std::string prompt = StrAt(s, {"system_prompt"});
  line("system prompt", prompt.empty() ? "-" : prompt);
  line("tools", std::to_string(ArrayAt(s, {"tools"}).size()));
  if (const json::value* meta = At(s, {"metadata"}); meta != nullptr) {
    line("metadata", json::serialize(*meta));
  }
  return out;
}

// --- Context -----------------------------------------------------------------------------

std::string RenderContext(const json::value& answer, size_t width) {
  const json::value* budget_p = At(answer, {"budget"});
  static const json::value kNone;
  const json::value& b = budget_p != nullptr ? *budget_p : kNone;
  std::string out;
  const int64_t used = IntAt(b, {"used_tokens"}), total = IntAt(b, {"total"});
  out += Ellipsize("context " + StrAt(answer, {"context_id"}) + " of " +
                       StrAt(answer, {"session_id"}) + ": " +
                       Count(static_cast<int64_t>(ArrayAt(answer, {"messages"}).size()), "message"),
                   width) +
         "\n";
  out += Ellipsize("used " + Thousands(used) + " of " + Thousands(total) + " tokens (" +
                       Pct(used, total) + "), zone " + StrAt(b, {"zone"}),
                   width) +
         "\n";
  std::string model = "window " + (IntAt(b, {"context_window"}) > 0
                                       ? Thousands(IntAt(b, {"context_window"})) + " - output " +
                                             Thousands(IntAt(b, {"max_output_tokens"}))
                                       : std::string("unknown (configured budget)"));
  char factor[32];
  std::snprintf(factor, sizeof factor, "%.2f", NumAt(b, {"factor"}, 1.0));
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.4f", NumAt(b, {"calibration", "ratio"}, 1.0));
  model += "; " + StrAt(b, {"encoding"}) + " x" + factor + "; calibration " + ratio + " (" +
           Count(IntAt(b, {"calibration", "samples"}), "sample") + ")";
  out += Ellipsize(model, width) + "\n\n";

  Table t({{"SECTION", Align::kLeft},
           {"TOKENS", Align::kRight},
           {"BUDGET", Align::kRight},
           {"DETAIL", Align::kLeft, true, 10}});
  const std::string dash = "-";
  auto budget_of = [&](std::initializer_list<std::string_view> path) {
    const json::value* x = At(b, path);
    return x != nullptr ? Thousands(IntAt(b, path)) : dash;
  };
  t.AddRow({"system", Thousands(IntAt(b, {"system", "tokens"})), dash,
            std::string(BoolAt(b, {"system", "measured"}) ? "measured" : "reserve") + "; " +
                Thousands(IntAt(b, {"system", "message_tokens"})) + " as sent"});
  t.AddRow({"tools", Thousands(IntAt(b, {"tools", "tokens"})), dash,
            BoolAt(b, {"tools", "measured"}) ? "measured" : "reserve (no tool definitions)"});
  t.AddRow({"memory", Thousands(IntAt(b, {"memory", "tokens"})), budget_of({"memory", "budget"}),
            Count(IntAt(b, {"memory", "items"}), "item")});
  t.AddRow({"learnings", Thousands(IntAt(b, {"learnings", "tokens"})),
            budget_of({"learnings", "budget"}), Count(IntAt(b, {"learnings", "items"}), "item")});
  t.AddRow({"summaries", Thousands(IntAt(b, {"summaries", "tokens"})), dash,
            Thousands(IntAt(b, {"summaries", "included"})) + " included (" +
                Thousands(IntAt(b, {"summaries", "short"})) + " short), " +
                Thousands(IntAt(b, {"summaries", "skipped"})) + " skipped"});
  if (At(b, {"task"}) != nullptr && IntAt(b, {"task", "seq"}) > 0) {
    t.AddRow({"task", Thousands(IntAt(b, {"task", "tokens"})), dash,
              "seq " + std::to_string(IntAt(b, {"task", "seq"})) +
                  (BoolAt(b, {"task", "pinned"}) ? ", pinned after the system message"
                                                 : ", in the kept history") +
                  (BoolAt(b, {"task", "truncated"}) ? ", truncated" : "")});
  }
  t.AddRow({"history", Thousands(IntAt(b, {"history", "tokens"})), budget_of({"history", "budget"}),
            Thousands(IntAt(b, {"history", "kept_messages"})) + " kept (" +
                Thousands(IntAt(b, {"history", "fresh_tail_messages"})) + " fresh tail), " +
                StrAt(b, {"history", "eviction"})});
  t.AddRow({"new message", Thousands(IntAt(b, {"new_message", "tokens"})), dash,
            BoolAt(b, {"new_message", "dropped"}) ? "dropped" : ""});
  t.AddRow({"total", Thousands(used), Thousands(total),
            "available " + Thousands(IntAt(b, {"available"}))});
  out += t.Render(width);

  std::string notes;
  const int64_t dropped = IntAt(b, {"history", "dropped_messages"});
  if (dropped > 0) {
    notes +=
        Note("evicted:",
             Count(dropped, "message") + " before seq " +
                 std::to_string(IntAt(b, {"history", "first_kept_seq"})) + ", " +
                 Thousands(IntAt(b, {"history", "covered_messages"})) + " covered by summaries",
             width);
  }
  const int64_t pruned = IntAt(b, {"pruned", "messages"});
  if (pruned > 0) {
    const json::array& fresh = ArrayAt(b, {"pruned", "newly_pruned_seqs"});
    notes += Note("pruned:",
                  Count(pruned, "old tool output") + " cleared, " +
                      Thousands(IntAt(b, {"pruned", "freed_tokens"})) + " tokens freed" +
                      (fresh.empty() ? "" : "; newly: seq " + SeqList(fresh)),
                  width);
  }
  for (const json::value& x : ArrayAt(b, {"truncated"})) {
    notes += Note("truncated:",
                  "seq " + std::to_string(IntAt(x, {"seq"})) + " " +
                      Thousands(IntAt(x, {"original_tokens"})) + " -> " +
                      Thousands(IntAt(x, {"tokens"})) + " tokens",
                  width);
  }
  for (const json::value& x : ArrayAt(b, {"sanitized"})) {
    const int64_t seq = IntAt(x, {"seq"});
    std::string call = StrAt(x, {"tool_call_id"});
    notes += Note("sanitized:",
                  (seq > 0 ? "seq " + std::to_string(seq) : std::string("new message")) +
                      (call.empty() ? "" : " " + call) + ": " + StrAt(x, {"reason"}) +
                      (StrAt(x, {"detail"}).empty() ? "" : " (" + StrAt(x, {"detail"}) + ")"),
                  width);
  }
  if (BoolAt(b, {"fresh_tail", "squeezed"})) {
    notes += Note("squeezed:",
                  "the newest messages alone did not fit; " +
                      Count(IntAt(b, {"fresh_tail", "dropped_messages"}), "message") +
                      " of the fresh tail dropped",
                  width);
  }
  if (BoolAt(b, {"fresh_tail", "last_turn_truncated"})) {
    notes += Note("cut:",
                  "the last turn alone did not fit: its largest messages were cut",
                  width);
  }
  if (BoolAt(b, {"should_summarize"})) {
    notes += Note("summarize:",
                  "due: history " + Thousands(IntAt(b, {"history", "demand_tokens"})) +
                      " tokens, threshold " + Thousands(IntAt(b, {"history", "threshold_tokens"})) +
                      ", " + Thousands(IntAt(b, {"history", "uncovered_messages"})) +
                      " uncovered messages",
                  width);
  }
  if (const json::value* c = At(answer, {"compaction"}); c != nullptr) {
    const std::string stopped = StrAt(*c, {"stopped"});
    notes +=
        Note("compacted:",
             Count(IntAt(*c, {"leaves"}), "leaf summary", "leaf summaries") + ", " +
                 Thousands(IntAt(*c, {"condensed"})) + " condensed (" + StrAt(*c, {"backend"}) +
                 ")" + (stopped.empty() ? "" : "; stopped: " + stopped),
             width);
    notes += Note("",
                  Count(IntAt(*c, {"messages_covered"}), "message") + " covered, " +
                      Thousands(IntAt(*c, {"tokens_before"})) + " -> " +
                      Thousands(IntAt(*c, {"tokens_after"})) + " tokens",
                  width);
  }
  if (!notes.empty()) out += "\n" + notes;
  return out;
}

std::string RenderSummaries(const json::value& body, size_t width) {
  const json::array& list = ArrayAt(body, {"summaries"});
  if (list.empty()) return "(no summaries)\n";
  Table t({{"ID", Align::kLeft, true, 8},
           {"DEPTH", Align::kRight},
           {"SEQS", Align::kLeft},
           {"MSGS", Align::kRight},
           {"TOKENS", Align::kRight},
           {"PARENT", Align::kLeft, true, 6}});
  for (const json::value& s : list) {
    std::string parent = StrAt(s, {"parent_id"});
    t.AddRow(
        {StrAt(s, {"id"}), std::to_string(IntAt(s, {"depth"})),
         std::to_string(IntAt(s, {"first_seq"})) + "-" + std::to_string(IntAt(s, {"last_seq"})),
         Thousands(IntAt(s, {"descendant_count"})), Thousands(IntAt(s, {"tokens"})),
         parent.empty() ? "-" : parent});
  }
  return t.Render(width);
}

// --- Memory, learnings, jobs ------------------------------------------------------------

std::string RenderSearch(const json::value& body, size_t width) {
  const json::array& list = ArrayAt(body, {"results"});
  if (list.empty()) return "(no results)\n";
  Table t({{"SOURCE", Align::kLeft},
           {"ID", Align::kLeft, true, 8},
           {"SCORE", Align::kRight},
           {"TEXT", Align::kLeft, true, 12}});
  for (const json::value& r : list) {
    char score[32];
    std::snprintf(score, sizeof score, "%.2f", NumAt(r, {"score"}));
    t.AddRow({StrAt(r, {"source"}), StrAt(r, {"id"}), score, StrAt(r, {"text"})});
  }
  return t.Render(width);
}

std::string RenderMemoryList(const json::value& body, size_t width) {
  const json::array& list = ArrayAt(body, {"items"});
  if (list.empty()) return "(no memory items)\n";
  Table t({{"ID", Align::kLeft},
           {"SESSION", Align::kLeft, true, 7},
           {"TAGS", Align::kLeft, true, 4},
           {"TEXT", Align::kLeft, true, 12}});
  for (const json::value& m : list) {
    std::string tags;
    for (const json::value& tag : ArrayAt(m, {"tags"}))
      tags += (tags.empty() ? "" : ",") + Scalar(tag);
    std::string session = StrAt(m, {"session_id"});
    t.AddRow({StrAt(m, {"id"}), session.empty() ? "(global)" : session, tags,
              (BoolAt(m, {"pinned"}) ? "[pinned] " : "") + StrAt(m, {"text"})});
  }
  return t.Render(width);
}

std::string RenderLearnings(const json::value& body, size_t width) {
  const json::array& list = ArrayAt(body, {"learnings"});
  if (list.empty()) return "(no learnings)\n";
  Table t({{"CREATED", Align::kLeft},
           {"TASK", Align::kLeft, true, 4},
           {"OUTCOME", Align::kLeft, true, 7},
           {"LESSON", Align::kLeft, true, 12}});
  for (const json::value& l : list) {
    t.AddRow({ShortTimestamp(StrAt(l, {"created_at"})).substr(0, 16), StrAt(l, {"task_type"}),
              StrAt(l, {"outcome"}), StrAt(l, {"lesson"})});
  }
  return t.Render(width);
}

std::string RenderJobs(const json::value& body, size_t width) {
  const json::array& list = ArrayAt(body, {"jobs"});
  if (list.empty()) return "(no jobs)\n";
  Table t({{"ID", Align::kRight},
           {"KIND", Align::kLeft},
           {"SESSION", Align::kLeft, true, 8},
           {"STATE", Align::kLeft},
           {"TRIES", Align::kRight},
           {"UPDATED", Align::kLeft},
           {"ERROR", Align::kLeft, true, 5}});
  for (const json::value& j : list) {
    t.AddRow({std::to_string(IntAt(j, {"id"})), StrAt(j, {"kind"}), StrAt(j, {"session_id"}),
              StrAt(j, {"state"}), std::to_string(IntAt(j, {"attempts"})),
              ShortTimestamp(StrAt(j, {"updated_at"})), StrAt(j, {"last_error"})});
  }
  return t.Render(width);
}

// --- Status --------------------------------------------------------------------------------

std::string RenderStatus(const json::value& h, const StatusExtras& x) {
  std::string out;
  out += StrAt(h, {"status"}) + ": missyd " + StrAt(h, {"version"}) + ", up " +
         HumanDuration(IntAt(h, {"uptime_ms"})) + ", schema v" +
         std::to_string(IntAt(h, {"schema_version"})) + "\n";
  auto line = [&](std::string_view key, const std::string& value) {
    out += Ellipsize(PadRight(key, 12) + value, kTerminalWidth) + "\n";
  };
  line("socket", StrAt(h, {"socket"}));
  line("audit", StrAt(h, {"audit_socket"}));
  std::string sessions =
      x.sessions ? Thousands(*x.sessions) + (x.more_sessions ? "+" : "") : std::string("?");
  line("sessions", sessions + " (" + Thousands(IntAt(h, {"memory", "history_cache", "sessions"})) +
                       " cached, " + Thousands(IntAt(h, {"memory", "history_cache", "messages"})) +
                       " messages in memory)");
  line("tokenizer", x.tokenizer.empty() ? "?" : x.tokenizer);
  auto n = [](const std::optional<int64_t>& v) { return v ? Thousands(*v) : std::string("?"); };
  line("jobs", n(x.jobs_queued) + " queued, " + n(x.jobs_running) + " running, " +
                   n(x.jobs_failed) + " failed");
  line("memory", "rss " + HumanBytes(IntAt(h, {"memory", "rss_bytes"})) + " of " +
                     Thousands(IntAt(h, {"memory", "limit_mb"})) + " MiB; cache " +
                     HumanBytes(IntAt(h, {"memory", "history_cache", "bytes"})) + " of " +
                     HumanBytes(IntAt(h, {"memory", "history_cache", "max_bytes"})) + "; sqlite " +
                     HumanBytes(IntAt(h, {"memory", "sqlite", "bytes"})));
  line("storage", Thousands(IntAt(h, {"storage", "write_transactions"})) + " write transactions, " +
                      Thousands(IntAt(h, {"storage", "commits_with_fsync"})) + " fsynced");
  line("requests", Thousands(IntAt(h, {"requests"})));
  // The broker bridge, when one is configured: its audit events, then its jobs.
  if (const json::value* b = At(h, {"broker"}); b != nullptr && b->is_object()) {
    const auto state = [&](std::initializer_list<std::string_view> connected,
                           std::initializer_list<std::string_view> error) {
      const std::string why = StrAt(h, error);
      return BoolAt(h, connected) ? std::string("connected")
                                  : "not connected" + (why.empty() ? "" : " (" + why + ")");
    };
    if (At(h, {"broker", "cursor"}) != nullptr) {
      line("broker", "audit " + Thousands(IntAt(h, {"broker", "published"})) + " published, " +
                         Thousands(IntAt(h, {"broker", "backlog"})) + " behind; " +
                         state({"broker", "connected"}, {"broker", "last_error"}));
    }
    if (At(h, {"broker", "jobs"}) != nullptr) {
      const auto j = [&](std::string_view key) { return IntAt(h, {"broker", "jobs", key}); };
      line("workers",
           Thousands(j("completed")) + " summaries by workers, " +
               Thousands(j("timeouts") + j("worker_errors") + j("exhausted") + j("not_sent")) +
               " local, " + Thousands(j("in_flight")) + " waiting; " +
               state({"broker", "jobs", "connected"}, {"broker", "jobs", "last_error"}));
    }
  }
  return out;
}

// --- Audit -----------------------------------------------------------------------------------

std::string AuditDetailText(const json::value& detail) {
  if (!detail.is_object()) return detail.is_null() ? "" : Scalar(detail);
  std::string out;
  for (const auto& kv : detail.get_object()) {
    const json::value& v = kv.value();
    std::string value;
    if (v.is_array()) {
      value = "[" + std::to_string(v.get_array().size()) + "]";
    } else if (v.is_object()) {
      value = "{…}";
    } else {
      value = Scalar(v);
      if (v.is_string() && (value.empty() || value.find(' ') != std::string::npos)) {
        value = json::serialize(v);
      }
    }
    out += (out.empty() ? "" : " ") + std::string(kv.key()) + "=" + value;
  }
  return out;
}

std::string AuditLine(const json::value& e, size_t width) {
  // "2026-11-21T17:03:44.277Z" -> "11-21 17:03:44"
  std::string when = ShortTimestamp(StrAt(e, {"timestamp"}));
  if (when.size() == 19) when = when.substr(5);
  // Seq and type are never cut (a longer one pushes the rest); the session is.
  const std::string seq = std::to_string(IntAt(e, {"seq"}));
  const std::string type = StrAt(e, {"event_type"});
  const std::string session = StrAt(e, {"session_id"});
  std::string line = PadRight(when, 14) + " " + PadLeft(seq, std::max<size_t>(5, seq.size())) +
                     " " + PadRight(type, std::max<size_t>(18, DisplayWidth(type))) + " " +
                     PadRight(session.empty() ? "-" : session, 10);
  std::string detail;
  const std::string result = StrAt(e, {"result"});
  if (!result.empty() && result != "allow") detail = result + ": ";
  if (const json::value* d = At(e, {"detail"}); d != nullptr) detail += AuditDetailText(*d);
  line += " " + detail;
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return Ellipsize(line, width);
}

}  // namespace missy::cli
