#include "core/context_summaries.h"

#include <algorithm>
#include <string_view>

#include "core/assembler.h"
#include "core/extractive_summarizer.h"
#include "core/summary_text.h"

namespace missy {

std::string SummaryStubText(const SummaryView& s) {
  std::string out = SummaryHeader(s) + "\n" + kSummaryStubNote;
  const std::string_view text = s.text;
  const std::string_view errors_line =
      kSummaryErrorsHeader.substr(0, kSummaryErrorsHeader.size() - 1);
  bool in_errors = false;  // inside the extractive form's error bullets and their continuations
  extractive::ForEachRawLine(text, [&](std::string_view line) {
    if (!(in_errors && (line.starts_with("- ") || line.starts_with("  ")))) {
      in_errors = line == errors_line;
    }
    // The llm form's artifact lines: daemon/service/summary_backend.cpp (RenderTrail).
    if (in_errors || line.starts_with(kSummaryFilesHeader) || line.starts_with("files: ") ||
        line.starts_with("errors: ")) {
      out += '\n';
      out += line;
    }
  });
  return out;
}

Message SummaryMessage(const SummaryView& s, bool stub) {
  return Message::User(stub ? SummaryStubText(s) : SummaryHeader(s) + "\n" + s.text);
}

int64_t SummaryMessageTokens(const SummaryView& s, bool stub, const MessageTokenCounter& counter) {
  const int64_t known = stub ? s.stub_tokens : s.message_tokens;
  return known > 0 ? known : counter.CountMessage(SummaryMessage(s, stub));
}

SummaryChoice ChooseSummaries(const std::vector<SummaryView>& from, int64_t before_seq,
                              int64_t stub_through, int64_t room,
                              const MessageTokenCounter& counter) {
  SummaryChoice c;
  c.stub_through = stub_through;
  for (const SummaryView& s : from) {
    if (s.first_seq >= before_seq) continue;
    const int64_t whole = SummaryMessageTokens(s, false, counter);
    bool stub = stub_through > 0 && s.last_seq <= stub_through;
    const int64_t t = stub ? std::min(whole, SummaryMessageTokens(s, true, counter)) : whole;
    stub = stub && t < whole;  // a summary shorter than its short form goes whole
    if (c.tokens + t > room) {
      c.skipped_ids.push_back(s.id);
      continue;
    }
    c.tokens += t;
    if (stub) ++c.stubbed;
    c.included_ids.push_back(s.id);
    c.included.push_back({s.first_seq, s.last_seq});
    c.messages.push_back(SummaryMessage(s, stub));
  }
  c.included = MergeRanges(std::move(c.included));
  return c;
}

int64_t StubThroughFor(const std::vector<SummaryView>& from, int64_t target,
                       const MessageTokenCounter& counter) {
  int64_t total = 0;
  for (const SummaryView& s : from) total += SummaryMessageTokens(s, false, counter);
  int64_t through = 0;
  for (const SummaryView& s : from) {
    if (total <= target) break;
    total -= std::max<int64_t>(
        0, SummaryMessageTokens(s, false, counter) - SummaryMessageTokens(s, true, counter));
    through = s.last_seq;
  }
  return through;
}

}  // namespace missy
