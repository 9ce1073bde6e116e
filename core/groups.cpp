#include "core/groups.h"

namespace missy {

std::vector<GroupSpan> ComputeGroups(size_t n, const MessageAt& at) {
  std::vector<GroupSpan> groups;
  for (size_t i = 0; i < n; ++i) {
    const Message& m = at(i);
    if (groups.empty() || IsGroupStart(m)) {
      groups.push_back({i, i + 1, m.role == Role::kAssistant && m.HasToolCalls()});
    } else {
      groups.back().end = i + 1;
    }
  }
  return groups;
}

std::vector<GroupSpan> ComputeGroups(std::span<const Message> messages) {
  return ComputeGroups(messages.size(), [&](size_t i) -> const Message& { return messages[i]; });
}

std::vector<GroupSpan> ComputeGroups(std::span<const StoredMessage> history) {
  return ComputeGroups(history.size(),
                       [&](size_t i) -> const Message& { return history[i].message; });
}

size_t GroupStartAtOrBefore(size_t n, const MessageAt& at, size_t index) {
  if (index >= n) return index;
  while (index > 0 && !IsGroupStart(at(index))) --index;
  return index;
}

size_t FreshTailStart(size_t n, const MessageAt& at, int64_t count) {
  if (count <= 0) return n;
  size_t start = static_cast<size_t>(count) >= n ? 0 : n - static_cast<size_t>(count);
  return GroupStartAtOrBefore(n, at, start);
}

size_t FreshTailStart(std::span<const StoredMessage> history, int64_t count) {
  return FreshTailStart(
      history.size(), [&](size_t i) -> const Message& { return history[i].message; }, count);
}

std::vector<GroupSpan> ChunkOnGroups(size_t begin, size_t end, const MessageAt& at,
                                     const std::function<int64_t(size_t)>& tokens_of,
                                     int64_t max_tokens) {
  std::vector<GroupSpan> chunks;
  size_t i = begin;
  while (i < end) {
    GroupSpan chunk{i, i, false};
    int64_t used = 0;
    while (i < end) {
      // The group starting at i.
      size_t j = i + 1;
      int64_t t = tokens_of(i);
      while (j < end && !IsGroupStart(at(j))) t += tokens_of(j++);
      if (chunk.end > chunk.begin && used + t > max_tokens) break;
      used += t;
      chunk.has_tool_calls =
          chunk.has_tool_calls || (at(i).role == Role::kAssistant && at(i).HasToolCalls());
      chunk.end = j;
      i = j;
    }
    chunks.push_back(chunk);
  }
  return chunks;
}

std::vector<size_t> TurnStarts(size_t n, const MessageAt& at) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < n; ++i) {
    if (at(i).role == Role::kUser) starts.push_back(i);
  }
  return starts;
}

size_t LastTurnStart(size_t n, const MessageAt& at) {
  for (size_t i = n; i > 0; --i) {
    if (at(i - 1).role == Role::kUser) return i - 1;
  }
  return n;
}

}  // namespace missy
