#include "daemon/service/session_service.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <span>

#include "core/message_extract.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/service/counting.h"
#include "daemon/service/history_cache.h"
#include "daemon/service/history_loader.h"
#include "daemon/service/ports.h"
#include "daemon/service/session_queue.h"
#include "daemon/service/summary_trigger.h"
#include "storage/database.h"
#include "storage/stores.h"

namespace missy {

namespace {

AppendOutcome Failed(Status status) {
  AppendOutcome out;
  out.status = std::move(status);
  return out;
}

std::string WarningsJson(const std::vector<AppendWarning>& warnings) {
  std::string out = "[";
  for (size_t i = 0; i < warnings.size(); ++i) {
    const AppendWarning& w = warnings[i];
    if (i > 0) out += ',';
    out += AuditDetail()
               .Add("index", w.index)
               .Add("tool_call_id", w.tool_call_id)
               .Add("problem", w.problem)
               .Add("message", w.message)
               .ToJson();
  }
  return out + "]";
}

}  // namespace

bool ValidSessionId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

SessionService::SessionService(const ServiceDeps& deps, HistoryCache& history, SessionQueue& queue,
                               SummaryTrigger* trigger)
    : deps_(deps), history_(history), queue_(queue), trigger_(trigger) {}

void SessionService::Create(Session session, std::optional<bool> strict, Done<Session> done) {
  if (session.id.empty()) session.id = "ses_" + deps_.ids->NewId();
  if (!ValidSessionId(session.id)) {
    return done(
        Status::InvalidArgument("session id must be 1-128 characters of [A-Za-z0-9._:-]", "id"));
  }
  auto config = deps_.config->Get();
  if (!session.summarizer_backend.empty() && session.summarizer_backend != "extractive" &&
      session.summarizer_backend != "llm") {
    return done(Status::InvalidArgument(
        "unknown summarizer backend '" + session.summarizer_backend + "' (extractive or llm)",
        "summarizer.backend"));
  }
  if (!session.summarizer_provider.empty() &&
      config->providers.count(session.summarizer_provider) == 0) {
    std::string known;
    for (const auto& [name, p] : config->providers) known += (known.empty() ? "" : ", ") + name;
    return done(Status::InvalidArgument(
        "no provider '" + session.summarizer_provider +
            "' under providers (configured: " + (known.empty() ? "none" : known) + ")",
        "summarizer.provider"));
  }
  session.strict = strict.value_or(config->strict);
  session.created_at_ms = session.updated_at_ms = deps_.clock->NowMs();
  auto stored = std::make_shared<Session>(std::move(session));
  CommitAsync(
      deps_,
      [this, stored](Txn& txn) -> Status {
        Status st = deps_.stores->sessions.Create(txn, *stored);
        if (st.code() == StatusCode::kAlreadyExists) {
          return Status::AlreadyExists("session '" + stored->id + "' already exists", "id");
        }
        if (!st.ok()) return st;
        return deps_.audit->Append(
            txn, AuditRecord{"session.created", "context", "allow", stored->id,
                             AuditDetail()
                                 .Add("model", stored->model)
                                 .Add("strict", stored->strict)
                                 .Add("has_system_prompt", !stored->system_prompt.empty())});
      },
      [stored, done = std::move(done)](Status st) {
        if (!st.ok()) return done(st);
        spdlog::debug("session {} created (model '{}')", stored->id, stored->model);
        done(*stored);
      });
}

Result<Session> SessionService::Get(const std::string& id) {
  Result<Session> session = deps_.stores->sessions.Get(id);
  if (!session.ok() && session.status().code() == StatusCode::kNotFound) {
    return Status::NotFound("session '" + id + "' not found");
  }
  return session;
}

Result<Session> SessionService::Settings(const std::string& id) {
  if (std::optional<Session> known = settings_.Find(id)) return std::move(*known);
  const uint64_t stamp = settings_.Stamp();
  Result<Session> session = Get(id);
  if (session.ok()) settings_.Put(*session, stamp);
  return session;
}

Result<std::vector<Session>> SessionService::List(const ListOptions& options) {
  return deps_.stores->sessions.List(options);
}

Result<std::vector<StoredMessage>> SessionService::Messages(const std::string& id, int64_t after,
                                                            int64_t limit) {
  Result<Session> session = Get(id);
  if (!session.ok()) return session.status();
  return deps_.stores->messages.Load(id, after, limit);
}

void SessionService::AddDeletionObserver(std::function<void(const std::string&)> observer) {
  deletion_observers_.push_back(std::move(observer));
}

void SessionService::Delete(const std::string& id, Done<SessionDeletion> done) {
  auto result = std::make_shared<SessionDeletion>();
  queue_.Run(id, [this, id, result, done = std::move(done)](SessionQueue::Release release) {
    CommitAsync(
        deps_,
        [this, id, result](Txn& txn) -> Status {
          Result<SessionDeletion> removed = deps_.stores->sessions.Delete(txn, id);
          if (!removed.ok()) return removed.status();
          *result = *removed;
          return deps_.audit->Append(txn, AuditRecord{"session.deleted", "context", "allow", id,
                                                      AuditDetail()
                                                          .Add("messages", result->messages)
                                                          .Add("summaries", result->summaries)
                                                          .Add("memory_items", result->memory_items)
                                                          .Add("jobs", result->jobs)});
        },
        [this, id, result, release, done](Status st) {
          // Even a failed delete leaves the cached window suspect: reload it next time.
          history_.Invalidate(id);
          settings_.Forget(id);
          if (!st.ok()) {
            release();
            return done(st);
          }
          // Its messages and memory items may sit in other sessions' cached searches.
          SearchableChanged(deps_, "");
          for (const auto& observer : deletion_observers_) observer(id);
          RunOnWorker(deps_, release);  // a task queued behind the delete runs beside the answer
          spdlog::info("session {} deleted ({} messages, {} summaries)", id, result->messages,
                       result->summaries);
          done(*result);
        });
  });
}

void SessionService::Append(AppendRequest request, std::function<void(AppendOutcome)> done) {
  if (request.messages.empty()) {
    return done(Failed(Status::InvalidArgument("must not be empty", "messages")));
  }
  if (request.messages.size() > kMaxBatch) {
    return done(Failed(
        Status::PayloadTooLarge("at most " + std::to_string(kMaxBatch) + " messages per append")));
  }
  Result<Session> session = Settings(request.session_id);
  if (!session.ok()) return done(Failed(session.status()));
  const bool strict = request.strict.value_or(session->strict);
  auto config = deps_.config->Get();
  const MessageTokenCounter counter = CounterFor(*config, deps_.tokenizers, *session);
  // Counting and extracting (what the summarizer will take of each message) are the
  // expensive part: done here, before the session's queue.
  std::vector<int64_t> tokens(request.messages.size());
  std::vector<std::string> extracts(request.messages.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = counter.CountMessage(request.messages[i]);
    extracts[i] = ExtractMessage(request.messages[i]);
  }

  struct State {
    AppendRequest request;
    std::vector<int64_t> tokens;
    std::vector<std::string> extracts;
    std::shared_ptr<const DaemonConfig> config;
    MessageTokenCounter counter;
    bool strict = false;
    std::string encoding;
    std::function<void(AppendOutcome)> done;
    AppendValidation validation;
    EncodedBatch encoded;
    int64_t tokens_total = 0;
    std::vector<StoredMessage> stored;
    Session session;  // settings; the counters are the write's
  };
  auto state =
      std::make_shared<State>(State{{}, {}, {}, config, counter, {}, {}, {}, {}, {}, 0, {}, {}});
  state->session = std::move(*session);
  state->request = std::move(request);
  state->tokens = std::move(tokens);
  state->extracts = std::move(extracts);
  state->strict = strict;
  state->encoding = counter.counter().Name();
  state->done = std::move(done);
  const std::string id = state->request.session_id;

  queue_.Run(id, [this, state, id](SessionQueue::Release release) {
    // Validation needs the session's open tool calls: the suffix of its history from
    // the last non-tool message (in the window: it begins with a non-tool message).
    auto history = history_.GetOrLoad(id, [&] {
      return LoadHistoryWindow(deps_.stores->messages, id,
                               KeepFor(*state->config, state->config->budget.total),
                               state->counter);
    });
    if (!history.ok()) return state->done(Failed(history.status()));
    const std::vector<StoredMessage>& all = (*history)->window();
    size_t from = all.size();
    while (from > 0 && all[from - 1].message.role == Role::kTool) --from;
    if (from > 0) --from;
    const std::span<const StoredMessage> recent(all.data() + from, all.size() - from);
    const OpenCallState open = DeriveOpenCallState(recent);
    // Strict refuses empty call ids; otherwise they are repaired here, in the session's
    // queue, where the open calls and the next seq are known.
    state->validation = state->strict ? ValidateAppend(open, state->request.messages)
                                      : RepairAndValidateAppend(open, state->request.messages,
                                                                (*history)->last_seq() + 1);
    for (size_t i = 0; i < state->tokens.size(); ++i) {  // a repaired id is text, too
      if ((state->validation.flags[i] & kFlagRepairedId) != 0) {
        state->tokens[i] = state->counter.CountMessage(state->request.messages[i]);
      }
    }
    if (state->strict && !state->validation.ok()) {
      const AppendWarning& w = state->validation.warnings.front();
      AppendOutcome out = Failed(Status::Unprocessable(
          w.message + " (strict mode: nothing was stored; " +
              std::to_string(state->validation.warnings.size()) + " problem(s))",
          "messages[" + std::to_string(w.index) + "]" + (w.field.empty() ? "" : "." + w.field)));
      out.warnings = std::move(state->validation.warnings);
      return state->done(std::move(out));
    }
    // Serialised here, in the session's queue: the writer thread only binds.
    std::vector<NewMessage> batch(state->request.messages.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].tokens = state->tokens[i];
      batch[i].extract = std::move(state->extracts[i]);
      batch[i].flags = state->validation.flags[i];
      if (i < state->request.pinned.size() && state->request.pinned[i]) {
        batch[i].flags |= kFlagPinned;
      }
      batch[i].message = std::move(state->request.messages[i]);
      state->tokens_total += batch[i].tokens;
    }
    state->encoded = EncodedBatch(std::move(batch));
    const int64_t now = deps_.clock->NowMs();
    CommitAsync(
        deps_,
        [this, state, id, now](Txn& txn) -> Status {
          SessionCounters after;
          Result<std::vector<StoredMessage>> rows =
              deps_.stores->messages.Append(txn, id, std::move(state->encoded), now, &after);
          if (!rows.ok()) return rows.status();
          state->stored = std::move(*rows);
          if (state->request.also_write) {
            MISSY_RETURN_IF_ERROR(state->request.also_write(txn, state->stored));
          }
          after.ApplyTo(state->session);
          AuditDetail detail;
          detail.Add("count", state->stored.size())
              .Add("first_seq", state->stored.front().seq)
              .Add("last_seq", state->stored.back().seq)
              .Add("tokens", state->tokens_total)
              .Add("encoding", state->encoding);
          if (!state->validation.warnings.empty()) {
            detail.AddJson("warnings", WarningsJson(state->validation.warnings));
          }
          return deps_.audit->Append(
              txn, AuditRecord{"messages.appended", "context", "allow", id, std::move(detail)});
        },
        [this, state, id, release](Status st) {
          if (!st.ok()) {
            history_.Invalidate(id);
            if (st.code() == StatusCode::kNotFound) settings_.Forget(id);  // deleted meanwhile
            release();
            return state->done(Failed(st));
          }
          AppendOutcome out;
          out.warnings = std::move(state->validation.warnings);
          out.encoding = state->encoding;
          out.messages.reserve(state->stored.size());
          for (const StoredMessage& m : state->stored) {
            out.messages.push_back(AppendedMessage{m.seq, m.tokens, m.flags});
          }
          history_.Appended(id, std::move(state->stored));
          if (HistoryCache::History h = history_.Find(id); h && h->Fold(state->counter)) {
            history_.Recharge(id);
          }
          SearchableChanged(deps_, id);
          RunOnWorker(deps_, release);  // the next task runs beside this answer
          if (trigger_ != nullptr) trigger_->Appended(state->session);
          out.session = std::move(state->session);
          state->done(std::move(out));
        });
  });
}

}  // namespace missy
