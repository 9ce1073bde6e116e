#include "daemon/proxy/context_map.h"

#include <algorithm>

namespace missy::proxy {
namespace {

// The index of the row whose seqs hold `seq`, or rows.size().
size_t RowOf(const std::vector<ProxyNativeRow>& rows, int64_t seq) {
  auto it = std::upper_bound(rows.begin(), rows.end(), seq,
                             [](int64_t s, const ProxyNativeRow& r) { return s < r.first_seq; });
  if (it == rows.begin()) return rows.size();
  const size_t i = static_cast<size_t>(it - rows.begin()) - 1;
  return seq < rows[i].first_seq + rows[i].seq_count ? i : rows.size();
}

std::string SystemSuffix(const std::string& enriched, const std::string& agent) {
  if (enriched.empty() || enriched == agent) return {};
  std::string rest = enriched;
  if (!agent.empty() && enriched.compare(0, agent.size(), agent) == 0) {
    rest = enriched.substr(agent.size());
  }
  size_t start = rest.find_first_not_of('\n');
  return start == std::string::npos ? std::string() : rest.substr(start);
}

}  // namespace

Outgoing MapContext(const AssembledContext& ctx, const std::vector<NativeMessage>& natives,
                    const std::vector<ProxyNativeRow>& rows, const std::string& agent_system,
                    std::optional<size_t> new_index) {
  Outgoing out;
  // The new message, when the context holds it, is its last message.
  const bool has_new = new_index && *new_index < natives.size() &&
                       !ctx.report.new_message_dropped && !ctx.messages.empty();
  const size_t n_messages = ctx.messages.size() - (has_new ? 1 : 0);
  const size_t n_hist = std::min(ctx.kept_seqs.size(), n_messages);
  const size_t prefix = n_messages - n_hist;
  size_t i = 0;
  if (prefix > 0 && ctx.messages[0].role == Role::kSystem) {
    // What the engine added to the agent's system prompt (memory, learnings) goes out as
    // the first message: the agent's system prompt is sent as it came.
    std::string added = SystemSuffix(ctx.messages[0].PlainText(), agent_system);
    if (!added.empty()) {
      out.items.push_back(OutItem{OutItem::Kind::kInjected, 0, {Message::User(std::move(added))}});
    }
    i = 1;
  }
  for (; i < prefix; ++i) {
    out.items.push_back(OutItem{OutItem::Kind::kInjected, 0, {ctx.messages[i]}});
  }
  size_t k = 0;
  while (k < n_hist) {
    const size_t row = RowOf(rows, ctx.kept_seqs[k]);
    if (row >= rows.size() || row >= natives.size()) {
      // Stored without a native form (cannot happen for a consistent conversation).
      out.items.push_back(OutItem{OutItem::Kind::kInjected, 0, {ctx.messages[prefix + k]}});
      ++k;
      continue;
    }
    const ProxyNativeRow& r = rows[row];
    const NativeMessage& native = natives[row];
    std::vector<Message> kept;
    bool unchanged = true;
    int64_t expect = r.first_seq;
    while (k < n_hist && RowOf(rows, ctx.kept_seqs[k]) == row) {
      const int64_t seq = ctx.kept_seqs[k];
      const Message& m = ctx.messages[prefix + k];
      const size_t j = static_cast<size_t>(seq - r.first_seq);
      if (seq != expect || j >= native.engine.size() || !(m == native.engine[j])) {
        unchanged = false;
      }
      kept.push_back(m);
      expect = seq + 1;
      ++k;
    }
    if (unchanged && static_cast<int64_t>(kept.size()) == r.seq_count) {
      out.items.push_back(OutItem{OutItem::Kind::kNative, row, {}});
    } else {
      out.items.push_back(OutItem{OutItem::Kind::kRewritten, row, std::move(kept)});
    }
  }
  if (has_new) {
    const Message& m = ctx.messages.back();
    const NativeMessage& native = natives[*new_index];
    if (native.engine.size() == 1 && m == native.engine[0]) {
      out.items.push_back(OutItem{OutItem::Kind::kNative, *new_index, {}});
    } else {
      out.items.push_back(OutItem{OutItem::Kind::kRewritten, *new_index, {m}});  // cut
    }
  }
  return out;
}

}  // namespace missy::proxy
