// The JSON of a summarization job and of its result on the broker (docs/BROKER.md): what
// the daemon publishes to MISSY_JOBS and what a worker publishes back. Versioned ("v": 1);
// a parse error names the field. Shared by the daemon and `missyd worker`.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "daemon/service/summary_dispatch.h"

namespace missy::broker {

inline constexpr int kJobWireVersion = 1;

std::string TaskToJson(const SummaryTask& task);
Result<SummaryTask> TaskFromJson(std::string_view json);

// The task_id of a job that TaskFromJson refused, when it has one ("" otherwise): the
// worker answers it with an error so that its daemon does not wait for the deadline.
std::string TaskIdOf(std::string_view json);

// The stream sequence of the job a JetStream max-deliveries advisory is about
// ({"stream_seq": N, ...}); 0 when the text is not one.
uint64_t AdvisoryStreamSeq(std::string_view json);

std::string ResultToJson(const SummaryTaskResult& result);
Result<SummaryTaskResult> ResultFromJson(std::string_view json);

}  // namespace missy::broker
