#include "daemon/service/summary_token_cache.h"

#include "core/context_summaries.h"
#include "core/message.h"

namespace missy {

namespace {

// The counter (encoding and the options that change a count) and the summary (its id,
// and its text's size as a guard: a summary whose text were replaced counts again).
std::string Key(const MessageTokenCounter& counter, const SummaryView& s) {
  const MessageCountingOptions& o = counter.options();
  return counter.counter().Name() + '|' + std::to_string(o.factor) + '|' +
         std::to_string(o.per_message_overhead) + '|' + s.id + '|' + std::to_string(s.tokens) +
         '|' + std::to_string(s.text.size());
}

}  // namespace

void SummaryTokenCache::Fill(std::vector<SummaryView>& views, const MessageTokenCounter& counter) {
  std::vector<std::string> keys;
  keys.reserve(views.size());
  std::vector<size_t> missing;
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < views.size(); ++i) {
      keys.push_back(Key(counter, views[i]));
      auto it = counts_.find(keys.back());
      if (it != counts_.end()) {
        views[i].message_tokens = it->second.message;
        views[i].stub_tokens = it->second.stub;
      } else {
        missing.push_back(i);
      }
    }
  }
  if (missing.empty()) return;
  for (size_t i : missing) {  // counted outside the lock
    const SummaryView& s = views[i];
    views[i].message_tokens = counter.CountMessage(SummaryMessage(s, /*stub=*/false));
    views[i].stub_tokens = counter.CountMessage(SummaryMessage(s, /*stub=*/true));
  }
  std::lock_guard lock(mu_);
  if (counts_.size() + missing.size() > kMaxEntries) counts_.clear();
  for (size_t i : missing) counts_[keys[i]] = {views[i].message_tokens, views[i].stub_tokens};
}

size_t SummaryTokenCache::size() const {
  std::lock_guard lock(mu_);
  return counts_.size();
}

}  // namespace missy
