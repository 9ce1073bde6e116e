#include "core/sanitizer.h"

#include <algorithm>
#include <boost/json.hpp>
#include <unordered_set>

#include "core/message_json.h"

namespace missy {

std::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kOrphanResult:
      return "orphan_result";
    case DropReason::kDuplicateResult:
      return "duplicate_result";
    case DropReason::kUnansweredCall:
      return "unanswered_call";
    case DropReason::kEmptyCallId:
      return "empty_call_id";
    case DropReason::kDuplicateCallId:
      return "duplicate_call_id";
    case DropReason::kInvalidPredecessor:
      return "invalid_predecessor";
    case DropReason::kCallDropped:
      return "call_dropped";
  }
  return "unknown";
}

namespace {

// The group being read: an assistant message with tool_calls and its results so far.
struct PendingGroup {
  bool active = false;   // an aTC is open and may still be kept
  bool dropped = false;  // an aTC was dropped: its results go with it
  size_t call_index = 0;
  std::vector<std::string> ids;  // call ids, in order
  std::vector<bool> answered;
  std::vector<size_t> results;  // indices of kept results
};

int FindId(const std::vector<std::string>& ids, std::string_view id) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == id) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

SanitizeResult SanitizeForProvider(size_t n, const MessageAt& at, SanitizeStart start) {
  SanitizeResult out;
  out.kept.reserve(n);
  PendingGroup group;
  bool have_last = start.have_last;
  Role last_kept_role = start.last_kept_role;

  auto drop = [&](size_t index, std::string id, DropReason reason, std::string detail) {
    out.dropped.push_back({index, std::move(id), reason, std::move(detail)});
  };

  // Closes the open group: kept whole if complete, dropped whole otherwise.
  auto close_group = [&]() {
    if (group.active) {
      size_t missing = group.ids.size();
      for (size_t k = 0; k < group.ids.size(); ++k) {
        if (!group.answered[k]) {
          missing = k;
          break;
        }
      }
      if (missing == group.ids.size()) {
        out.kept.push_back(group.call_index);
        out.kept.insert(out.kept.end(), group.results.begin(), group.results.end());
        have_last = true;
        last_kept_role = Role::kTool;
      } else {
        std::string missing_list;
        for (size_t k = 0; k < group.ids.size(); ++k) {
          if (group.answered[k]) continue;
          if (!missing_list.empty()) missing_list += ", ";
          missing_list += group.ids[k];
        }
        // Keep index order in `dropped`: the call first, then its results.
        drop(group.call_index, group.ids[missing], DropReason::kUnansweredCall,
             "assistant tool call " + group.ids[missing] +
                 " has no result (unanswered: " + missing_list + "); its group is dropped");
        for (size_t r : group.results) {
          const std::string& id = at(r).tool_call_id;
          drop(r, id, DropReason::kCallDropped,
               "tool result for " + id + " belongs to a dropped call group");
        }
      }
    }
    group = PendingGroup{};
  };

  for (size_t i = 0; i < n; ++i) {
    const Message& m = at(i);
    if (m.role == Role::kTool) {
      const std::string& id = m.tool_call_id;
      if (id.empty() && !group.dropped) {
        drop(i, id, DropReason::kOrphanResult,
             "tool result without a tool_call_id could not be paired with a call");
      } else if (group.active) {
        int k = FindId(group.ids, id);
        if (k < 0) {
          drop(i, id, DropReason::kOrphanResult,
               "tool result for " + id + " answers no call of the preceding assistant message");
        } else if (group.answered[k]) {
          drop(i, id, DropReason::kDuplicateResult, "second tool result for " + id);
        } else {
          group.answered[k] = true;
          group.results.push_back(i);
        }
      } else if (group.dropped) {
        drop(i, id, DropReason::kCallDropped,
             "tool result for " + id + " belongs to a dropped call group");
      } else {
        drop(i, id, DropReason::kOrphanResult, "tool result for " + id + " answers no open call");
      }
      continue;
    }
    close_group();
    if (m.role == Role::kAssistant && m.HasToolCalls()) {
      // Validate the call ids.
      std::vector<std::string> ids;
      ids.reserve(m.tool_calls.size());
      bool bad = false;
      for (const ToolCall& c : m.tool_calls) {
        if (c.id.empty()) {
          drop(i, "", DropReason::kEmptyCallId,
               "assistant tool call '" + c.name + "' has an empty id; its group is dropped");
          bad = true;
          break;
        }
        if (FindId(ids, c.id) >= 0) {
          drop(i, c.id, DropReason::kDuplicateCallId,
               "call id " + c.id + " appears twice in one assistant message; its group is dropped");
          bad = true;
          break;
        }
        ids.push_back(c.id);
      }
      if (!bad && !(have_last && (last_kept_role == Role::kUser || last_kept_role == Role::kTool ||
                                  last_kept_role == Role::kSystem))) {
        drop(i, ids.front(), DropReason::kInvalidPredecessor,
             std::string("assistant tool call ") + ids.front() + " follows " +
                 (have_last ? std::string("a ") + std::string(RoleName(last_kept_role)) + " message"
                            : std::string("nothing")) +
                 " instead of a user or tool message; its group is dropped");
        bad = true;
      }
      if (bad) {
        group.dropped = true;
        continue;
      }
      group.active = true;
      group.call_index = i;
      group.answered.assign(ids.size(), false);
      group.ids = std::move(ids);
      continue;
    }
    out.kept.push_back(i);
    have_last = true;
    last_kept_role = m.role;
  }
  close_group();
  // close_group() may report a call after its results' neighbours: restore index order.
  std::stable_sort(
      out.dropped.begin(), out.dropped.end(),
      [](const DroppedMessage& a, const DroppedMessage& b) { return a.index < b.index; });
  return out;
}

SanitizeResult SanitizeForProvider(std::span<const Message> messages) {
  return SanitizeForProvider(messages.size(),
                             [&](size_t i) -> const Message& { return messages[i]; });
}

std::vector<Message> SanitizeMessages(std::span<const Message> messages,
                                      std::vector<DroppedMessage>* dropped) {
  SanitizeResult r = SanitizeForProvider(messages);
  std::vector<Message> out;
  out.reserve(r.kept.size());
  for (size_t i : r.kept) out.push_back(messages[i]);
  if (dropped) *dropped = std::move(r.dropped);
  return out;
}

// ---------------------------------------------------------------------------------------

namespace {

// Applies one message to the state; returns its flags and appends warnings.
uint32_t Step(OpenCallState& st, const Message& m, size_t index,
              std::vector<AppendWarning>* warnings) {
  auto warn = [&](std::string id, std::string problem, std::string text, std::string field = {}) {
    if (warnings) {
      warnings->push_back(
          {index, std::move(id), std::move(problem), std::move(text), std::move(field)});
    }
  };
  if (m.role == Role::kTool) {
    const std::string& id = m.tool_call_id;
    if (id.empty()) {
      warn("", "empty_call_id", "tool result has an empty tool_call_id", "tool_call_id");
      return kFlagOrphanResult;
    }
    if (st.round_open) {
      auto open = std::find(st.open_ids.begin(), st.open_ids.end(), id);
      if (open != st.open_ids.end()) {
        st.answered_ids.push_back(id);
        st.open_ids.erase(open);
        return kFlagNone;
      }
      if (std::find(st.answered_ids.begin(), st.answered_ids.end(), id) != st.answered_ids.end()) {
        warn(id, "duplicate_result", "second tool result for " + id);
        return kFlagDuplicateResult;
      }
    }
    warn(id, "orphan_result", "tool result for " + id + " answers no open call");
    return kFlagOrphanResult;
  }
  uint32_t flags = kFlagNone;
  if (st.round_open && !st.open_ids.empty()) {
    flags |= kFlagUnansweredCall;
    for (const std::string& id : st.open_ids) {
      warn(id, "unanswered_call",
           "tool call " + id + " has no result before this " + std::string(RoleName(m.role)) +
               " message");
    }
  }
  st = OpenCallState{};
  if (m.role == Role::kAssistant && m.HasToolCalls()) {
    st.round_open = true;
    for (size_t k = 0; k < m.tool_calls.size(); ++k) {
      const ToolCall& c = m.tool_calls[k];
      const std::string field = "tool_calls[" + std::to_string(k) + "].id";
      if (c.id.empty()) {
        warn("", "empty_call_id", "tool call '" + c.name + "' has an empty id", field);
        continue;
      }
      if (std::find(st.open_ids.begin(), st.open_ids.end(), c.id) != st.open_ids.end()) {
        warn(c.id, "duplicate_call_id", "call id " + c.id + " appears twice in one message", field);
        continue;
      }
      st.open_ids.push_back(c.id);
    }
  }
  return flags;
}

}  // namespace

OpenCallState DeriveOpenCallState(std::span<const Message> recent) {
  OpenCallState st;
  for (const Message& m : recent) (void)Step(st, m, 0, nullptr);
  return st;
}

OpenCallState DeriveOpenCallState(std::span<const StoredMessage> recent) {
  OpenCallState st;
  for (const StoredMessage& m : recent) (void)Step(st, m.message, 0, nullptr);
  return st;
}

AppendValidation ValidateAppend(const OpenCallState& state, std::span<const Message> batch) {
  AppendValidation out;
  out.state_after = state;
  out.flags.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    out.flags.push_back(Step(out.state_after, batch[i], i, &out.warnings));
  }
  return out;
}

bool NeedsIdRepair(const Message& m) {
  if (m.role == Role::kTool) return m.tool_call_id.empty();
  if (m.role != Role::kAssistant) return false;
  return std::any_of(m.tool_calls.begin(), m.tool_calls.end(),
                     [](const ToolCall& c) { return c.id.empty(); });
}

std::string RepairedCallId(int64_t seq, size_t call_index) {
  return "call_missy_" + std::to_string(seq) + "_" + std::to_string(call_index);
}

namespace {

// Gives each call of an assistant message that has an empty id a generated one; returns
// the message's flags.
uint32_t RepairCalls(Message& m, int64_t seq, size_t index, std::vector<AppendWarning>& warnings) {
  uint32_t flags = kFlagNone;
  for (size_t k = 0; k < m.tool_calls.size(); ++k) {
    ToolCall& call = m.tool_calls[k];
    if (!call.id.empty()) continue;
    std::string id = RepairedCallId(seq, k);
    // Never the id of another call of the message (one the agent chose, say).
    auto taken = [&](const std::string& candidate) {
      return std::any_of(m.tool_calls.begin(), m.tool_calls.end(),
                         [&](const ToolCall& c) { return c.id == candidate; });
    };
    while (taken(id)) id += "_r";
    call.id = id;
    flags |= kFlagRepairedId;
    warnings.push_back({index, id, "repaired_call_id",
                        "tool call '" + call.name + "' had no id: stored as " + id + " (seq " +
                            std::to_string(seq) + ")",
                        "tool_calls[" + std::to_string(k) + "].id"});
  }
  return flags;
}

// Pairs a tool result without an id with the only open call, if there is exactly one.
// Returns its flags; `paired` tells whether it now carries that call's id.
uint32_t RepairResult(const OpenCallState& st, Message& m, int64_t seq, size_t index,
                      std::vector<AppendWarning>& warnings, bool& paired) {
  paired = st.round_open && st.open_ids.size() == 1;
  if (paired) {
    m.tool_call_id = st.open_ids.front();
    warnings.push_back({index, m.tool_call_id, "repaired_call_id",
                        "tool result had no tool_call_id: paired with the only open call " +
                            m.tool_call_id + " (seq " + std::to_string(seq) + ")",
                        "tool_call_id"});
    return kFlagRepairedId;
  }
  std::string why;
  if (!st.round_open || st.open_ids.empty()) {
    why = "no call is open";
  } else {
    why = std::to_string(st.open_ids.size()) + " calls are open (";
    for (size_t k = 0; k < st.open_ids.size(); ++k) why += (k ? ", " : "") + st.open_ids[k];
    why += ")";
  }
  warnings.push_back({index, "", "unpaired_result",
                      "tool result had no tool_call_id and " + why + ": stored unpaired (seq " +
                          std::to_string(seq) + "), never sent to a provider",
                      "tool_call_id"});
  return kFlagRepairedId | kFlagOrphanResult;
}

}  // namespace

AppendValidation RepairAndValidateAppend(const OpenCallState& state, std::span<Message> batch,
                                         int64_t first_seq) {
  AppendValidation out;
  out.state_after = state;
  out.flags.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    Message& m = batch[i];
    const int64_t seq = first_seq + static_cast<int64_t>(i);
    uint32_t flags = kFlagNone;
    if (m.role == Role::kTool && m.tool_call_id.empty()) {
      bool paired = false;
      flags = RepairResult(out.state_after, m, seq, i, out.warnings, paired);
      // An unpaired result changes nothing in the state (as any orphan).
      if (!paired) {
        out.flags.push_back(flags);
        continue;
      }
    } else if (m.role == Role::kAssistant) {
      flags = RepairCalls(m, seq, i, out.warnings);
    }
    out.flags.push_back(flags | Step(out.state_after, m, i, &out.warnings));
  }
  return out;
}

boost::json::object AppendWarningToJson(const AppendWarning& w) {
  boost::json::object o;
  o["index"] = static_cast<int64_t>(w.index);
  o["tool_call_id"] = w.tool_call_id;
  o["problem"] = w.problem;
  o["message"] = w.message;
  return o;
}

}  // namespace missy
