// AssembleContext reads as its table of contents: each pass is one function over the
// shared AssemblyState, declared with its contract in core/assembly_state.h and defined
// in one core/assembly_*.cpp file per concern.
#include "core/assembler.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <utility>

#include "core/assembly_state.h"

namespace missy {

std::string FormatIsoUtcSeconds(int64_t epoch_ms) {
  using namespace std::chrono;
  const sys_seconds tp{seconds{epoch_ms >= 0 ? epoch_ms / 1000 : (epoch_ms - 999) / 1000}};
  const sys_days day = floor<days>(tp);
  const year_month_day ymd{day};
  const hh_mm_ss hms{tp - day};
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

std::string SummaryHeader(const SummaryView& s) {
  return "[Conversation Summary — depth " + std::to_string(s.depth) + ", " +
         std::to_string(s.message_count) + " messages, covers " + FormatIsoUtcSeconds(s.start_ms) +
         " to " + FormatIsoUtcSeconds(s.end_ms) +
         (s.id.empty() ? "" : "; id " + s.id + ", originals via missy_recall") + "]";
}

std::string TaskHeader(int64_t seq) {
  return "[Session task — message " + std::to_string(seq) + ", pinned]";
}

namespace {

// The pipeline. `squeezed`: the tool outputs an anchor's move squeezes, when a first run
// found them (see below).
Result<AssembledContext> RunPasses(const ContextInput& in, const MessageTokenCounter& counter,
                                   std::optional<int64_t> squeezed) {
  using namespace assembly;  // the passes: core/assembly_state.h
  AssemblyState s(in, counter);
  s.squeeze_preset = squeezed;
  if (Status st = MeasureFixedParts(s); !st.ok()) return st;
  SanitizeHistory(s);
  MeasureDemand(s);
  PruneOldToolOutput(s);
  if (Status st = TakeFreshTail(s); !st.ok()) return st;
  if (s.ctx.needs_more_history) return std::move(s.ctx);
  AddMemoryAndLearnings(s);
  PinTask(s);
  if (in.eviction.anchor_seq > 0) {
    KeepFromAnchor(s);
    // The move squeezed more tool outputs: the fresh tail (squeezed further to fit, when
    // it must, from different caps), the memory's room and the rest are sized again with
    // them squeezed from the start, as the next request at the new anchor will size them
    // (else that one would differ from this one).
    if (s.squeeze_moved) return RunPasses(in, counter, s.squeezed_through);
  } else {
    ChooseSummaryForms(s);
    FillNewestFirst(s);
  }
  if (s.ctx.needs_more_history) return std::move(s.ctx);
  CapKeptToolOutputs(s);
  WriteMessagesAndReport(s);
  return std::move(s.ctx);
}

}  // namespace

Result<AssembledContext> AssembleContext(const ContextInput& in,
                                         const MessageTokenCounter& counter) {
  if (Status st = assembly::ValidateInput(in); !st.ok()) return st;
  return RunPasses(in, counter, std::nullopt);
}

namespace assembly {

Status ValidateInput(const ContextInput& in) {
  if (Status s = in.budget.Validate(); !s.ok()) return s;
  if (in.tool_output_max_tokens <= 0) {
    return Status::InvalidArgument("must be positive", "tool_output_max_tokens");
  }
  if (!(in.threshold_pct >= 0.0 && in.threshold_pct <= 1.0)) {
    return Status::InvalidArgument("must be between 0 and 1", "threshold_pct");
  }
  return Status::Ok();
}

}  // namespace assembly

}  // namespace missy
