// The JSON form of a ContextComposition (core/context_rebuild.h), as recorded in a
// context.built event's "composition":
//   {"system":{"base":HASH,"memory":[[SOURCE,ID,KEEP,TEXT_HASH(,SNIPPET)]...],
//              "learnings":[[ID,TEXT_HASH]...]},
//    "parts":[["t",SEQ(,HEAD,MIDDLE,TAIL)], ["s",ID(,1 short)], ["k",FIRST,LAST], ["p",SEQ],
//             ["x",SEQ,ORIGINAL_TOKENS(,HEAD,MIDDLE,TAIL)(,CALLS)],
//             ["n",SEQ,HASH(,HEAD,MIDDLE,TAIL)(,CALLS)]],
//    "complete":false (only when false)}
// where CALLS, the cuts of tool-call arguments, is {"calls":[[INDEX,HEAD,MIDDLE,TAIL]...]}.
#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>

#include "core/context_rebuild.h"

namespace missy {

namespace json = boost::json;

namespace {

void PutCut(json::array& a, const TextCut& cut) {
  if (cut.whole()) return;
  a.push_back(cut.head);
  a.push_back(json::string(cut.middle));
  a.push_back(cut.tail);
}

bool GetInt(const json::array& a, size_t i, int64_t& out) {
  if (i >= a.size() || !a[i].is_int64()) return false;
  out = a[i].as_int64();
  return true;
}

bool GetString(const json::array& a, size_t i, std::string& out) {
  if (i >= a.size() || !a[i].is_string()) return false;
  out = std::string(a[i].as_string());
  return true;
}

// The cut at a[i..i+2], absent (whole) when a ends before i.
bool GetCut(const json::array& a, size_t i, TextCut& cut, size_t size = SIZE_MAX) {
  if (std::min(size, a.size()) <= i) return true;
  return GetInt(a, i, cut.head) && GetString(a, i + 1, cut.middle) && GetInt(a, i + 2, cut.tail) &&
         cut.head >= 0 && cut.tail >= 0;
}

// The cuts of a message's tool-call arguments, as a last element {"calls": [[index, head,
// middle, tail], ...]} (an object, so that a whole text before it is told from a cut).
void PutCallCuts(json::array& a, const std::vector<std::pair<size_t, TextCut>>& cuts) {
  if (cuts.empty()) return;
  json::array calls;
  for (const auto& [index, cut] : cuts) {
    calls.push_back(
        json::array{static_cast<int64_t>(index), cut.head, json::string(cut.middle), cut.tail});
  }
  a.push_back(json::object{{"calls", std::move(calls)}});
}

// The call cuts of a part's last element (absent: none); `*size` is then what comes
// before them.
bool TakeCallCuts(const json::array& a, std::vector<std::pair<size_t, TextCut>>& cuts,
                  size_t* size) {
  *size = a.size();
  if (a.empty() || !a.back().is_object()) return true;
  const json::value* calls = a.back().as_object().if_contains("calls");
  if (calls == nullptr || !calls->is_array()) return false;
  for (const json::value& v : calls->as_array()) {
    const json::array* c = v.if_array();
    int64_t index = -1;
    TextCut cut;
    if (c == nullptr || !GetInt(*c, 0, index) || index < 0 || index > (1 << 16) ||
        !GetCut(*c, 1, cut) || cut.whole()) {
      return false;
    }
    cuts.emplace_back(static_cast<size_t>(index), std::move(cut));
  }
  *size = a.size() - 1;
  return true;
}

Result<ContextComposition> CompositionFromObject(const json::object& o);

Status Bad(const std::string& what) {
  return Status::Corruption("the context's recorded composition is malformed: " + what);
}

}  // namespace

std::string CompositionToJson(const ContextComposition& c) {
  json::object o;
  if (c.system) {
    json::array memory, learnings;
    for (const SystemItem& m : c.system->memory) {
      json::array item{json::string(m.source), json::string(m.id), m.keep, json::string(m.hash)};
      if (m.source != "memory") item.push_back(json::string(m.snippet));
      memory.push_back(std::move(item));
    }
    for (const SystemItem& l : c.system->learnings) {
      learnings.push_back(json::array{json::string(l.id), json::string(l.hash)});
    }
    o["system"] = json::object{{"base", c.system->base_hash},
                               {"memory", std::move(memory)},
                               {"learnings", std::move(learnings)}};
  }
  json::array parts;
  for (const ContextPart& p : c.parts) {
    json::array a;
    switch (p.kind) {
      case PartKind::kTask:
        a = {"t", p.seq};
        PutCut(a, p.cut);
        break;
      case PartKind::kSummary:
        a = {"s", json::string(p.summary_id)};
        if (p.short_form) a.push_back(1);
        break;
      case PartKind::kKept:
        a = {"k", p.seq, p.last};
        break;
      case PartKind::kPruned:
        a = {"p", p.seq};
        break;
      case PartKind::kTruncated:
        a = {"x", p.seq, p.original_tokens};
        PutCut(a, p.cut);
        PutCallCuts(a, p.call_cuts);
        break;
      case PartKind::kNew:
        a = {"n", p.seq, json::string(p.hash)};
        PutCut(a, p.cut);
        PutCallCuts(a, p.call_cuts);
        break;
    }
    parts.push_back(std::move(a));
  }
  o["parts"] = std::move(parts);
  if (!c.complete) o["complete"] = false;
  return json::serialize(o);
}

Result<ContextComposition> CompositionFromDetail(std::string_view detail_json) {
  boost::system::error_code ec;
  json::value v = json::parse(detail_json, ec);
  const json::value* c = !ec && v.is_object() ? v.as_object().if_contains("composition") : nullptr;
  if (c == nullptr || !c->is_object()) {
    return Status::NotFound("this context was recorded without its composition");
  }
  return CompositionFromObject(c->as_object());
}

Result<ContextComposition> CompositionFromJson(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return Bad("not a JSON object");
  return CompositionFromObject(v.as_object());
}

namespace {

Result<ContextComposition> CompositionFromObject(const json::object& o) {
  ContextComposition c;
  if (const json::value* s = o.if_contains("system"); s && s->is_object()) {
    SystemComposition sc;
    const json::object& so = s->as_object();
    if (const json::value* b = so.if_contains("base"); b && b->is_string()) {
      sc.base_hash = std::string(b->as_string());
    }
    if (const json::value* m = so.if_contains("memory"); m && m->is_array()) {
      for (const json::value& item : m->as_array()) {
        if (!item.is_array()) return Bad("memory item");
        const json::array& a = item.as_array();
        SystemItem si;
        if (!GetString(a, 0, si.source) || !GetString(a, 1, si.id) || !GetInt(a, 2, si.keep) ||
            !GetString(a, 3, si.hash)) {
          return Bad("memory item");
        }
        if (si.source != "memory" && !GetString(a, 4, si.snippet)) return Bad("memory snippet");
        sc.memory.push_back(std::move(si));
      }
    }
    if (const json::value* l = so.if_contains("learnings"); l && l->is_array()) {
      for (const json::value& item : l->as_array()) {
        SystemItem si{"learning", "", -1, "", ""};
        if (!item.is_array() || !GetString(item.as_array(), 0, si.id) ||
            !GetString(item.as_array(), 1, si.hash)) {
          return Bad("learning");
        }
        sc.learnings.push_back(std::move(si));
      }
    }
    c.system = std::move(sc);
  }
  const json::value* parts = o.if_contains("parts");
  if (parts == nullptr || !parts->is_array()) return Bad("no parts");
  for (const json::value& item : parts->as_array()) {
    if (!item.is_array() || item.as_array().empty() || !item.as_array()[0].is_string()) {
      return Bad("part");
    }
    const json::array& a = item.as_array();
    size_t size = a.size();  // of the part before the calls' cuts
    const std::string tag(a[0].as_string());
    ContextPart p;
    bool ok = false;
    if (tag == "t") {
      p.kind = PartKind::kTask;
      ok = GetInt(a, 1, p.seq) && GetCut(a, 2, p.cut);
    } else if (tag == "s") {
      p.kind = PartKind::kSummary;
      ok = GetString(a, 1, p.summary_id);
      p.short_form = a.size() > 2 && a[2].is_int64() && a[2].as_int64() == 1;
    } else if (tag == "k") {
      p.kind = PartKind::kKept;
      ok = GetInt(a, 1, p.seq) && GetInt(a, 2, p.last) && p.last >= p.seq &&
           p.last - p.seq < (int64_t{1} << 24);
    } else if (tag == "p") {
      p.kind = PartKind::kPruned;
      ok = GetInt(a, 1, p.seq);
    } else if (tag == "x") {
      p.kind = PartKind::kTruncated;
      ok = TakeCallCuts(a, p.call_cuts, &size) && GetInt(a, 1, p.seq) &&
           GetInt(a, 2, p.original_tokens) && GetCut(a, 3, p.cut, size);
    } else if (tag == "n") {
      p.kind = PartKind::kNew;
      ok = TakeCallCuts(a, p.call_cuts, &size) && GetInt(a, 1, p.seq) && GetString(a, 2, p.hash) &&
           GetCut(a, 3, p.cut, size);
    }
    if (!ok) return Bad("part '" + tag + "'");
    c.parts.push_back(std::move(p));
  }
  if (const json::value* complete = o.if_contains("complete"); complete && complete->is_bool()) {
    c.complete = complete->as_bool();
  }
  return c;
}

}  // namespace

}  // namespace missy
