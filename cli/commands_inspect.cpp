// context show CONTEXT_ID, context ls SESSION: past contexts (GET /v1/contexts/{id},
// GET /v1/sessions/{id}/contexts), reached through the `context` command.
#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/render.h"

namespace missy::cli {

namespace {

namespace json = boost::json;

std::string Tokens(int64_t n) {
  if (n < 10000) return std::to_string(n);
  if (n < 1000000) return std::to_string(n / 1000) + "." + std::to_string(n % 1000 / 100) + "k";
  return std::to_string(n / 1000000) + "." + std::to_string(n % 1000000 / 100000) + "M";
}

// The message's text on one line: its content, or its tool calls "→ name(args)".
std::string ContentLine(const json::value& m) {
  std::string text;
  if (const json::value* c = At(m, {"content"}); c != nullptr && c->is_string()) {
    text = std::string(c->get_string());
  } else if (c != nullptr && c->is_array()) {
    for (const json::value& part : c->get_array()) {
      if (!text.empty()) text += " ";
      text += StrAt(part, {"type"}) == "text" ? StrAt(part, {"text"}) : "[image]";
    }
  }
  if (const json::value* calls = At(m, {"tool_calls"}); calls != nullptr && calls->is_array()) {
    for (const json::value& call : calls->get_array()) {
      if (!text.empty()) text += " ";
      text += "→ " + StrAt(call, {"function", "name"}) + "(" +
              StrAt(call, {"function", "arguments"}) + ")";
    }
  }
  return text;
}

// Where an entry came from: "seq 12", "sum_… d1 3-40 short", "memory 2, learnings 1".
std::string SourceOf(const json::value& mark) {
  const std::string entry = StrAt(mark, {"entry"});
  if (entry == "summary") {
    std::string out = StrAt(mark, {"summary_id"}) + " d" + std::to_string(IntAt(mark, {"depth"}));
    if (const json::value* cov = At(mark, {"covered"});
        cov != nullptr && cov->is_array() && cov->get_array().size() == 2) {
      out += " " + std::to_string(cov->get_array()[0].to_number<int64_t>()) + "-" +
             std::to_string(cov->get_array()[1].to_number<int64_t>());
    }
    return StrAt(mark, {"form"}) == "short" ? out + " short" : out;
  }
  if (entry == "system") {
    const json::value* mem = At(mark, {"memory"});
    const json::value* lrn = At(mark, {"learnings"});
    return "memory " + std::to_string(mem && mem->is_array() ? mem->get_array().size() : 0) +
           ", learnings " + std::to_string(lrn && lrn->is_array() ? lrn->get_array().size() : 0);
  }
  std::string out = IntAt(mark, {"seq"}) > 0 ? "seq " + std::to_string(IntAt(mark, {"seq"})) : "";
  if (entry == "truncated") out += " (was " + Tokens(IntAt(mark, {"original_tokens"})) + ")";
  return out;
}

std::string RenderPastContext(const json::value& ctx, bool full, size_t width) {
  std::string out = "context " + StrAt(ctx, {"context_id"}) + " of session " +
                    StrAt(ctx, {"session_id"}) + " at " + ShortTimestamp(StrAt(ctx, {"at"})) + "\n";
  out += "used " + Thousands(IntAt(ctx, {"used_tokens"})) + " of " +
         Thousands(IntAt(ctx, {"budget"})) + " tokens (window " +
         Thousands(IntAt(ctx, {"window"})) + "), zone " + StrAt(ctx, {"zone"});
  if (!BoolAt(ctx, {"complete"})) out += "; INCOMPLETE: a source is gone (marked missing)";
  out += "\n";
  if (const json::value* s = At(ctx, {"sections"}); s != nullptr && s->is_object()) {
    std::string line = "sections:";
    for (const auto& [key, v] : s->get_object()) {
      if (!v.is_number()) continue;
      const std::string item = " " + std::string(key) + " " + Thousands(v.to_number<int64_t>());
      if (DisplayWidth(line) + item.size() > width) {
        out += line + "\n";
        line = "         ";
      }
      line += item;
    }
    out += line + "\n";
  }
  out += "\n";
  const json::value* msgs = At(ctx, {"messages"});
  if (msgs == nullptr || !msgs->is_array()) return out;
  if (full) {
    size_t i = 0;
    for (const json::value& m : msgs->get_array()) {
      const json::value* mark = At(m, {"missy"});
      const json::value none;
      out += "── " + std::to_string(i++) + " " + StrAt(m, {"role"}) + " · " +
             StrAt(mark ? *mark : none, {"entry"}) + " " + SourceOf(mark ? *mark : none) +
             (BoolAt(mark ? *mark : none, {"missing"}) ? " · MISSING" : "") + "\n";
      out += ContentLine(m) + "\n";
    }
    return out;
  }
  Table table({{"#", Align::kRight, false},
               {"ENTRY", Align::kLeft, false},
               {"ROLE", Align::kLeft, false},
               {"SOURCE", Align::kLeft, true, 8},
               {"CONTENT", Align::kLeft, true, 12}});
  size_t i = 0;
  for (const json::value& m : msgs->get_array()) {
    const json::value* mark = At(m, {"missy"});
    const json::value none;
    const json::value& k = mark ? *mark : none;
    std::string entry = StrAt(k, {"entry"});
    if (BoolAt(k, {"missing"})) entry += "!";
    table.AddRow({std::to_string(i++), entry, StrAt(m, {"role"}), SourceOf(k),
                  BoolAt(k, {"missing"}) ? "(missing: its source is gone)" : ContentLine(m)});
  }
  return out + table.Render(width);
}

std::string RenderContextList(const json::value& body, size_t width) {
  Table table({{"CONTEXT", Align::kLeft, true, 8},
               {"AT", Align::kLeft, false},
               {"USED", Align::kRight, false},
               {"BUDGET", Align::kRight, false},
               {"ZONE", Align::kLeft, false},
               {"SUMS", Align::kRight, false},
               {"KEPT", Align::kRight, false},
               {"DROP", Align::kRight, false}});
  if (const json::value* list = At(body, {"contexts"}); list != nullptr && list->is_array()) {
    for (const json::value& c : list->get_array()) {
      table.AddRow({StrAt(c, {"context_id"}) + (BoolAt(c, {"forced"}) ? " (forced)" : ""),
                    ShortTimestamp(StrAt(c, {"at"})), Tokens(IntAt(c, {"used_tokens"})),
                    Tokens(IntAt(c, {"budget"})), StrAt(c, {"zone"}),
                    std::to_string(IntAt(c, {"summaries"})),
                    std::to_string(IntAt(c, {"kept_messages"})),
                    std::to_string(IntAt(c, {"dropped_messages"}))});
    }
  }
  std::string out = table.Render(width);
  if (const json::value* next = At(body, {"next_before"}); next != nullptr && next->is_number()) {
    out += "(more: --before " + std::to_string(next->to_number<int64_t>()) + ")\n";
  }
  return out;
}

}  // namespace

int ContextShow(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (!NeedArgs(env, self, args, 2, 2, &rc)) return rc;
  ApiReply r = env.Api().Get("/v1/contexts/" + UrlEncode(args.Arg(1)));
  return Show(env, r, args.Has("--json"),
              [&] { return RenderPastContext(r.body, args.Has("--full"), kTerminalWidth); });
}

int ContextList(const CommandSpec& self, const ParsedArgs& args, Env& env) {
  int rc = 0;
  if (!NeedArgs(env, self, args, 2, 2, &rc)) return rc;
  Result<int64_t> limit = IntOption(args, "--limit", 1, 1000, 20);
  if (!limit.ok()) return UsageError(env, self, limit.status().message());
  Result<int64_t> before = IntOption(args, "--before", 0, int64_t{1} << 62, 0);
  if (!before.ok()) return UsageError(env, self, before.status().message());
  std::string target =
      "/v1/sessions/" + UrlEncode(args.Arg(1)) + "/contexts?limit=" + std::to_string(*limit);
  if (*before > 0) target += "&before=" + std::to_string(*before);
  ApiReply r = env.Api().Get(target);
  return Show(env, r, args.Has("--json"),
              [&] { return RenderContextList(r.body, kTerminalWidth); });
}

}  // namespace missy::cli
