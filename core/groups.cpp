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
  return FreshTailStart(history.size(),
                        [&](size_t i) -> const Message& { return history[i].message; }, count);
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
