// How missyctl shows the daemon's answers: JSON bodies (docs/API.md) rendered as text
// that fits `width` columns (tables cut long cells with "…"). Pure functions of their
// input, tolerant of missing fields (shown as 0 or ""), so an older or newer daemon's
// answer still renders.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "cli/table.h"

namespace missy::cli {

// --- Reading JSON without throwing ---------------------------------------------------
const boost::json::value* At(const boost::json::value& v,
                             std::initializer_list<std::string_view> path);
int64_t IntAt(const boost::json::value& v, std::initializer_list<std::string_view> path,
              int64_t fallback = 0);
double NumAt(const boost::json::value& v, std::initializer_list<std::string_view> path,
             double fallback = 0);
std::string StrAt(const boost::json::value& v, std::initializer_list<std::string_view> path);
bool BoolAt(const boost::json::value& v, std::initializer_list<std::string_view> path);

// Indented JSON (two spaces), ending in "\n".
std::string PrettyJson(const boost::json::value& v);
// One "path = value" line per scalar ("context.budget.total = 30000"); arrays of
// scalars as [a, b]; empty containers as [] / {}.
std::string FlattenJson(const boost::json::value& v);

// GET /v1/sessions: ID, MODEL, MSGS, TOKENS, UPDATED.
std::string RenderSessions(const boost::json::value& body, size_t width = kTerminalWidth);
// GET /v1/sessions/{id}: one "key: value" line each.
std::string RenderSession(const boost::json::value& session, size_t width = kTerminalWidth);
// POST /v1/sessions/{id}/context (or /compact): the budget report as a table of
// sections plus what was evicted, pruned, truncated, sanitized and summarized.
std::string RenderContext(const boost::json::value& answer, size_t width = kTerminalWidth);
// GET /v1/sessions/{id}/summaries: ID, DEPTH, SEQS, TOKENS, PARENT.
std::string RenderSummaries(const boost::json::value& body, size_t width = kTerminalWidth);
std::string RenderSearch(const boost::json::value& body, size_t width = kTerminalWidth);
std::string RenderMemoryList(const boost::json::value& body, size_t width = kTerminalWidth);
std::string RenderLearnings(const boost::json::value& body, size_t width = kTerminalWidth);
std::string RenderJobs(const boost::json::value& body, size_t width = kTerminalWidth);

// What `missyctl status` adds to /v1/health from other endpoints (unset: unknown).
struct StatusExtras {
  std::optional<int64_t> sessions;
  bool more_sessions = false;  // at least `sessions`
  std::string tokenizer;       // context.tokenizer
  std::optional<int64_t> jobs_queued, jobs_running, jobs_failed;
};
std::string RenderStatus(const boost::json::value& health, const StatusExtras& extras);

// One audit event on one line: time (UTC, month-day), seq, type, session and the detail,
// cut to the width: "11-21 17:03:44    12 session.created    demo       model=gpt-4o …".
std::string AuditLine(const boost::json::value& event, size_t width = kTerminalWidth);
// The event's detail as "key=value ..." (scalars; arrays as their size).
std::string AuditDetailText(const boost::json::value& detail);

}  // namespace missy::cli
