// ProxyService::Managed: one managed request (Anthropic Messages, OpenAI Chat
// Completions), as the table of contents below says.
#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <future>
#include <optional>
#include <span>

#include "core/sanitizer.h"
#include "daemon/audit/audit_bus.h"
#include "daemon/metrics/daemon_metrics.h"
#include "daemon/proxy/context_map.h"
#include "daemon/proxy/proxy_call.h"
#include "daemon/proxy/relay.h"
#include "daemon/proxy/responses_wire.h"
#include "daemon/service/counting.h"
#include "daemon/service/services.h"
#include "storage/stores.h"

namespace missy::proxy {
namespace {

namespace json = boost::json;

struct Codec {
  Result<ParsedRequest> (*parse)(std::string_view);
  std::string (*build)(const ParsedRequest&, const Outgoing&);
  std::unique_ptr<AnswerReader> (*reader)(bool);
  bool (*context_length)(int, std::string_view);
};

Codec CodecFor(Api api) {
  switch (api) {
    case Api::kAnthropic:
      return {ParseAnthropicRequest, BuildAnthropicRequest, MakeAnthropicReader,
              IsAnthropicContextLengthError};
    case Api::kResponses:
      return {ParseResponsesRequest, BuildResponsesRequest, MakeResponsesReader,
              IsOpenAiContextLengthError};
    case Api::kChat:
      break;
  }
  return {ParseChatRequest, BuildChatRequest, MakeChatReader, IsOpenAiContextLengthError};
}

// Reads what is stored of a conversation, once per daemon run.
Status Load(Services& s, Conversation& c) {
  if (c.loaded) return Status::Ok();
  Result<std::optional<ProxyKey>> key = s.deps.stores->proxy.Key(c.key);
  if (!key.ok()) return key.status();
  if (*key) {
    c.session_id = (*key)->session_id;
    c.branches = (*key)->branches;
  }
  c.rows.clear();
  c.last_seq = 0;
  Result<Session> session = s.sessions.Get(c.session_id);
  if (!session.ok() && session.status().code() != StatusCode::kNotFound) return session.status();
  c.exists = session.ok();
  if (c.exists) {
    Result<std::vector<ProxyNativeRow>> rows = s.deps.stores->proxy.Load(c.session_id, false);
    if (!rows.ok()) return rows.status();
    c.rows = std::move(*rows);
    if (!c.rows.empty()) c.last_seq = c.rows.back().first_seq + c.rows.back().seq_count - 1;
    if (session->last_seq != c.last_seq) {
      // Messages stored without their native form (appended through the API, or by a
      // daemon that stopped between the two): no request can match them.
      c.rows.clear();
      c.last_seq = -1;
    }
  }
  c.loaded = true;
  return Status::Ok();
}

// The conversation continues in a new session (the agent rewrote its history).
void Branch(Services& s, Conversation& c, const std::string& base) {
  for (;;) {
    ++c.branches;
    c.session_id = base + ":b" + std::to_string(c.branches);
    if (!s.sessions.Get(c.session_id).ok()) break;
  }
  c.exists = false;
  c.rows.clear();
  c.last_seq = 0;
}

Status EnsureSession(Services& s, Conversation& c, const ParsedRequest& request) {
  if (c.exists) return Status::Ok();
  Session session;
  session.id = c.session_id;
  session.model = request.model;
  session.system_prompt = request.system_text;
  session.metadata_json =
      json::serialize(json::object{{"proxy", true}, {"api", ApiName(request.api)}});
  Result<Session> made = Await<Session>(
      [&](Done<Session> done) { s.sessions.Create(session, false, std::move(done)); });
  if (!made.ok()) return made.status();
  c.exists = true;
  return Status::Ok();
}

// One batch of native messages on its way to the store: its engine messages and their
// rows commit together; the conversation learns the rows when it is finished.
struct AppendInFlight {
  std::future<AppendOutcome> outcome;
  std::shared_ptr<std::vector<ProxyNativeRow>> rows;
  bool finished = true;
};

// Starts storing `natives` as the conversation's messages c.rows.size() on (they must
// outlive FinishAppend).
AppendInFlight StartAppend(Services& s, const Conversation& c,
                           std::span<const NativeMessage> natives) {
  AppendInFlight in_flight;
  in_flight.rows = std::make_shared<std::vector<ProxyNativeRow>>();
  if (natives.empty()) return in_flight;
  in_flight.finished = false;
  const size_t from = c.rows.size();
  AppendRequest append;
  append.session_id = c.session_id;
  std::vector<size_t> counts;
  for (const NativeMessage& n : natives) {
    counts.push_back(n.engine.size());
    for (const Message& m : n.engine) append.messages.push_back(m);
  }
  const ProxyKey key{c.session_id, c.branches};
  append.also_write = [&s, natives, rows = in_flight.rows, counts, from, key,
                       conversation_key = c.key](
                          Txn& txn, const std::vector<StoredMessage>& stored) -> Status {
    size_t k = 0;
    for (size_t j = 0; j < counts.size(); ++j) {
      ProxyNativeRow row;
      row.idx = static_cast<int64_t>(from + j);
      row.hash = natives[j].hash;
      row.first_seq = stored.at(k).seq;
      row.seq_count = static_cast<int64_t>(counts[j]);
      row.native = json::serialize(natives[j].native);
      k += counts[j];
      rows->push_back(std::move(row));
    }
    MISSY_RETURN_IF_ERROR(s.deps.stores->proxy.Append(txn, key.session_id, *rows));
    return s.deps.stores->proxy.SetKey(txn, conversation_key, key);
  };
  auto promise = std::make_shared<std::promise<AppendOutcome>>();
  in_flight.outcome = promise->get_future();
  s.sessions.Append(std::move(append),
                    [promise](AppendOutcome out) { promise->set_value(std::move(out)); });
  return in_flight;
}

// Waits for the batch's commit; the conversation then holds its rows (idempotent).
Status FinishAppend(Conversation& c, AppendInFlight& in_flight) {
  if (in_flight.finished) return Status::Ok();
  in_flight.finished = true;
  AppendOutcome out = in_flight.outcome.get();
  if (!out.status.ok()) return out.status;
  for (ProxyNativeRow& r : *in_flight.rows) {
    r.native.clear();
    c.rows.push_back(std::move(r));
  }
  if (!c.rows.empty()) c.last_seq = c.rows.back().first_seq + c.rows.back().seq_count - 1;
  return Status::Ok();
}

// Appends `natives` in batches of at most SessionService::kMaxBatch engine messages (a
// first request of 10,000 messages and more is stored in a few commits).
Status AppendNatives(Services& s, Conversation& c, std::span<const NativeMessage> natives) {
  size_t begin = 0;
  while (begin < natives.size()) {
    size_t end = begin;
    size_t engine = 0;
    while (end < natives.size() &&
           (end == begin || engine + natives[end].engine.size() <= SessionService::kMaxBatch)) {
      engine += natives[end++].engine.size();
    }
    AppendInFlight batch = StartAppend(s, c, natives.subspan(begin, end - begin));
    MISSY_RETURN_IF_ERROR(FinishAppend(c, batch));
    begin = end;
  }
  return Status::Ok();
}

// Tool definitions and the request's other fields, as the budget counts them (the same
// long tool list turn after turn is counted once: the tokenizer keeps large texts' counts).
int64_t FixedTokens(const DaemonConfig& config, Services& s, const ParsedRequest& request) {
  Session probe;
  probe.model = request.model;
  MessageTokenCounter counter = CounterFor(config, s.deps.tokenizers, probe);
  int64_t tokens = request.tools_json == "[]" ? 0 : counter.CountToolDefinitions(request.tools_json);
  json::object rest;
  for (const auto& [key, value] : request.body) {
    if (key == "messages" || key == "system" || key == "tools" || key == "model" ||
        key == "max_tokens" || key == "stream" || key == "input" || key == "instructions") {
      continue;
    }
    rest[key] = value;
  }
  if (!rest.empty()) tokens += counter.CountText(json::serialize(rest));
  return tokens;
}

// The context request for what the agent asked: its system prompt and fixed fields
// counted, the model's window, its max_tokens as the output's reserve.
ContextRequest ContextFor(const DaemonConfig& config, Services& s, const ParsedRequest& request,
                          const std::string& session_id) {
  ContextRequest context;
  context.session_id = session_id;
  context.system_prompt = request.system_text;
  context.tool_tokens = FixedTokens(config, s, request);
  if (std::optional<ModelSpec> spec = config.models.Lookup(request.model)) {
    context.context_window = spec->context_window;
    // The request's max_tokens is the output's reserve, but never more than three quarters
    // of the window: an agent asking 128k of output from a 64k local model still gets a
    // context (the API bounds what it answers; a refusal compacts and retries).
    const int64_t out = request.max_tokens > 0 ? request.max_tokens : spec->max_output_tokens;
    context.max_output_tokens =
        std::min(out, spec->context_window - std::max<int64_t>(1, spec->context_window / 4));
  }
  context.enrich = config.proxy.memory;
  return context;
}

Result<ContextOutcome> BuildContext(Services& s, ContextRequest request) {
  return Await<ContextOutcome>(
      [&](Done<ContextOutcome> done) { s.context.Build(std::move(request), std::move(done)); });
}

}  // namespace

void ProxyService::CountTokens(Call& call) {
  Services& s = services_;
  // A conversation missyd holds is counted as missyd would send it: its stored part as
  // the context assembles it, then what is new as the agent wrote it. Anything else (a
  // body that is not a Messages request, a conversation not stored or rewritten) is
  // counted as the agent sent it.
  Result<ParsedRequest> parsed = ParseAnthropicRequest(call.request.body);
  if (!parsed.ok()) return Passthrough(call, "count_tokens: not a Messages request");
  const ParsedRequest& request = *parsed;
  const Identity identity =
      IdentifyConversation(call.path.session, call.request.headers, request);
  Conversations::Held held = conversations_.Hold(identity);
  Conversation& conversation = *held;
  if (!Load(s, conversation).ok() || !conversation.exists || conversation.last_seq <= 0 ||
      CommonPrefix(conversation.rows, request.messages) < conversation.rows.size()) {
    return Passthrough(call, "count_tokens: no stored conversation to fit");
  }
  Result<ContextOutcome> built =
      BuildContext(s, ContextFor(*call.config, s, request, conversation.session_id));
  if (!built.ok()) return Passthrough(call, "count_tokens: " + built.status().message());
  const size_t stored = conversation.rows.size();
  Outgoing out = MapContext(built->context,
                            std::vector<NativeMessage>(request.messages.begin(),
                                                       request.messages.begin() + stored),
                            conversation.rows, request.system_text);
  for (size_t i = stored; i < request.messages.size(); ++i) {
    out.items.push_back(OutItem{OutItem::Kind::kNative, i, {}});
  }
  Result<UpstreamTarget> upstream =
      upstreams_.For(*call.config, Family::kAnthropic, request.model, call.path.rest);
  if (!upstream.ok()) {
    return call.Fail(500, "api_error", "missyd proxy: " + upstream.status().message());
  }
  RelayOutcome relayed = Relay(*upstream, "POST",
                               ForwardHeaders(call.request.headers, upstream->credentials),
                               BuildAnthropicRequest(request, out), *call.exchange, nullptr);
  EndRelayed(relayed);
  call.AnswerUnrelayed(relayed, upstream->base);
  s.deps.audit->Emit(AuditRecord{
      "proxy.request", "provider",
      relayed.status >= 200 && relayed.status < 300 ? "allow" : "error", conversation.session_id,
      AuditDetail()
          .Add("api", "anthropic")
          .Add("path", PathOnly(call.path.rest))
          .Add("managed", true)
          .Add("count_tokens", true)
          .Add("agent_messages", request.messages.size())
          .Add("sent_messages", out.items.size())
          .Add("upstream", upstream->base)
          .Add("upstream_status", relayed.status)
          .Add("duration_ms", MsSince(call.start))});
  CountRequest(s.deps.metrics, "anthropic", upstream->base, relayed, call.start);
}

void ProxyService::Managed(Call& call, Api api_kind) {
  Services& s = services_;
  const Codec codec = CodecFor(api_kind);
  const std::string api(ApiName(api_kind));

  // 1. What the agent sent.
  Result<ParsedBody> parsed = parse_cache_.Parse(api_kind, call.request.body, codec.parse,
                                                  std::move(call.request.body_watch));
  if (!parsed.ok()) {
    const std::string field = parsed.status().field();
    return call.Fail(400, "invalid_request_error",
                     "missyd proxy: " + parsed.status().message() +
                         (field.empty() ? "" : " (" + field + ")"));
  }
  ParsedRequest& request = parsed->request;

  // 2. Which conversation, and how much of it is stored.
  Identity identity = IdentifyConversation(call.path.session, call.request.headers, request);
  std::optional<Conversations::Held> held(conversations_.Hold(identity));
  if (Status st = Load(s, **held); !st.ok()) {
    return call.Fail(500, "api_error", "missyd proxy: " + st.message());
  }
  if (!(*held)->rows.empty() && !request.messages.empty() &&
      (*held)->rows.front().hash != request.messages.front().hash) {
    // Another conversation under the same name (an agent's side call: a title, a summary
    // of its own): a session of its own, "NAME.<first message hash>".
    const std::string tag = request.messages.front().hash.substr(0, 8);
    identity = Identity{identity.key + "." + tag, identity.session_id + "." + tag, identity.source};
    held.reset();
    held.emplace(conversations_.Hold(identity));
    if (Status st = Load(s, **held); !st.ok()) {
      return call.Fail(500, "api_error", "missyd proxy: " + st.message());
    }
  }
  Conversation& conversation = **held;
  size_t common = CommonPrefix(conversation.rows, request.messages);
  const bool diverged = conversation.last_seq < 0 || common < conversation.rows.size();
  if (diverged) {
    const std::string from = conversation.session_id;
    const size_t stored = conversation.rows.size();
    Branch(s, conversation, identity.session_id);
    s.deps.audit->Emit(AuditRecord{"proxy.history_diverged", "context", "allow",
                                   conversation.session_id,
                                   AuditDetail()
                                       .Add("from_session", from)
                                       .Add("at_message", common)
                                       .Add("stored_messages", stored)
                                       .Add("agent_messages", request.messages.size())});
    if (s.deps.metrics != nullptr) s.deps.metrics->proxy_divergences.Inc();
    spdlog::info("proxy: {} rewrote its history at message {}: continuing in session {}", from,
                 common, conversation.session_id);
    common = 0;
  }

  // 3. Store what is new (the whole list for a new or branched conversation). One new
  // message on a stored conversation (a turn of the agent's loop: its tool result, its
  // next prompt) is stored while its context is built and sent instead: the context takes
  // it as its new message, the same context as once it is stored (unless the store would
  // repair it: the context is then built from the stored form).
  const std::span<const NativeMessage> fresh =
      std::span<const NativeMessage>(request.messages).subspan(common);
  bool alongside = !diverged && conversation.exists && conversation.last_seq > 0 &&
                   fresh.size() == 1 && fresh[0].engine.size() == 1 &&
                   !NeedsIdRepair(fresh[0].engine[0]);
  if (!alongside) {
    Status stored = EnsureSession(s, conversation, request);
    if (stored.ok()) stored = AppendNatives(s, conversation, fresh);
    if (!stored.ok()) {
      conversations_.Forget(conversation);
      return call.Fail(stored.code() == StatusCode::kInvalidArgument ||
                               stored.code() == StatusCode::kUnprocessable
                           ? 400
                           : 500,
                       "invalid_request_error",
                       "missyd proxy: cannot store the conversation: " + stored.message());
    }
  }

  // 4. The context for the request's model: its window, its max_tokens as the output.
  ContextRequest context = ContextFor(*call.config, s, request, conversation.session_id);
  if (alongside) context.new_message = fresh[0].engine[0];
  const auto build = [&](ContextRequest r) { return BuildContext(s, std::move(r)); };
  Result<ContextOutcome> built = build(context);
  // The new message's append, queued behind the context in the session's queue; every
  // way out of this request waits for it (an agent's answer follows a stored request).
  AppendInFlight in_flight;
  if (alongside) in_flight = StartAppend(s, conversation, fresh);
  std::string store_error;
  const auto settle = [&] {
    if (Status st = FinishAppend(conversation, in_flight); !st.ok()) {
      store_error = st.message();
      spdlog::warn("proxy: cannot store the new message of session {}: {}",
                   conversation.session_id, st.message());
      conversations_.Forget(conversation);
    }
    alongside = false;
  };
  struct Settled {
    const std::function<void()> settle;
    ~Settled() { settle(); }
  } settled{settle};
  if (!built.ok()) {
    const bool overflow = built.status().code() == StatusCode::kContextOverflow;
    return call.Fail(overflow ? 400 : 500, overflow ? "invalid_request_error" : "api_error",
                     "missyd proxy: " + built.status().message());
  }

  // 5. Upstream, relayed as it streams; a context-length refusal compacts and retries once.
  Result<UpstreamTarget> upstream =
      upstreams_.For(*call.config, call.family, request.model, call.path.rest);
  if (!upstream.ok()) {
    return call.Fail(500, "api_error", "missyd proxy: " + upstream.status().message());
  }
  const provider::HeaderList headers =
      ForwardHeaders(call.request.headers, upstream->credentials);
  std::unique_ptr<AnswerReader> reader;
  RelayOutcome out;
  Outgoing sent;
  bool retried = false;
  for (int attempt = 0;; ++attempt) {
    sent = MapContext(built->context, request.messages, conversation.rows, request.system_text,
                      alongside ? std::optional<size_t>(request.messages.size() - 1)
                                : std::nullopt);
    // The agent's bytes of each unchanged message, when the list's places are known.
    if (parsed->spans.size() == request.leading + request.messages.size()) {
      sent.raw = RawList{call.request.body, &parsed->spans, parsed->list_open,
                         ListCloseOf(call.request.body, *parsed)};
    }
    const std::string body = codec.build(request, sent);
    reader = codec.reader(request.stream);
    out = Relay(*upstream, "POST", headers, body, *call.exchange, reader.get(), request.stream);
    if (attempt > 0 || out.relayed || out.failed ||
        !codec.context_length(out.status, out.held_body)) {
      break;
    }
    settle();  // the compaction sees the new message; the retry's context holds it stored
    if (!store_error.empty()) break;
    context.new_message.reset();
    SummarizeRequest compact;
    compact.session_id = conversation.session_id;
    compact.force = true;
    compact.reason = "context_length_exceeded";
    compact.llm_budget = kCompactLlmBudget;
    Result<SummarizeOutcome> compacted = Await<SummarizeOutcome>(
        [&](Done<SummarizeOutcome> done) { s.summarization.Compact(compact, std::move(done)); });
    if (!compacted.ok()) break;
    // The provider counts more than the model table says fits: the retry is assembled
    // for three quarters of the history that was refused, on top of the new summaries.
    ContextRequest smaller = context;
    smaller.reset_anchor = true;
    const int64_t output = context.max_output_tokens.value_or(0);
    smaller.max_output_tokens = output;
    const ContextReport& refused = built->context.report;
    const int64_t fixed = refused.system_tokens + refused.tool_tokens;
    double target = static_cast<double>(
        fixed + std::max<int64_t>(256, (refused.used_tokens - fixed) * 3 / 4));
    // The window is in the provider's units; calibration divides it by the ratio again.
    const CalibrationState& calibration = built->calibration;
    if (calibration.samples > 0 && calibration.ratio > 0) target *= calibration.ratio;
    smaller.context_window = output + static_cast<int64_t>(target);
    Result<ContextOutcome> again = build(smaller);
    if (!again.ok()) break;
    built = std::move(again);
    retried = true;
  }
  call.AnswerUnrelayed(out, upstream->base);

  // 6. The agent gets the end of its answer, then the answer joins the conversation with
  // its audit event (their commit would otherwise hold the last bytes of every stream).
  // Until both are stored the conversation stays held (the agent's next turn waits) and
  // the API holds the requests that come (WriteBarrier): whoever has the answer finds it
  // stored. Then its usage calibrates the counts.
  std::string answer_state = out.complete ? "complete" : out.client_gone ? "client_gone" : "none";
  int64_t prompt_tokens = 0;
  std::optional<UsageReport> usage;
  settle();
  const WriteBarrier::Ticket ticket = s.barrier.Begin();
  EndRelayed(out);
  if (reader) ReadBack(out, *reader);
  if (out.complete && !store_error.empty()) {
    answer_state = "not_stored";  // it would follow a message that is not stored
  } else if (out.complete) {
    Result<Rebuilt> answer = reader->Finish();
    if (answer.ok()) {
      prompt_tokens = answer->input_tokens;
      const NativeMessage native{answer->native, answer->engine, CanonicalHash(answer->engine)};
      if (Status st = AppendNatives(s, conversation, std::span<const NativeMessage>(&native, 1));
          !st.ok()) {
        spdlog::warn("proxy: cannot store the answer of session {}: {}", conversation.session_id,
                     st.message());
        conversations_.Forget(conversation);
        answer_state = "not_stored";
      }
      if (answer->input_tokens > 0) {
        usage = UsageReport{conversation.session_id, built->context_id, answer->input_tokens,
                            answer->output_tokens};
      }
    } else {
      answer_state = "unreadable";
      spdlog::warn("proxy: the answer for session {} could not be read back: {}",
                   conversation.session_id, answer.status().message());
    }
  } else if (out.relayed) {
    answer_state = out.client_gone ? "client_gone" : "cut";
  }

  const ContextReport& report = built->context.report;
  int64_t native_sent = 0;
  for (const OutItem& item : sent.items) native_sent += item.kind == OutItem::Kind::kNative;
  s.deps.audit->Emit(AuditRecord{
      "proxy.request", "provider", out.status >= 200 && out.status < 300 ? "allow" : "error",
      conversation.session_id,
      AuditDetail()
          .Add("api", api)
          .Add("model", request.model)
          .Add("managed", true)
          .Add("identity", identity.source)
          .Add("stream", request.stream)
          .Add("agent_messages", request.messages.size())
          .Add("new_messages", request.messages.size() - common)
          .Add("parsed_messages", request.messages.size() - parsed->reused)
          .Add("sent_messages", sent.items.size())
          .Add("sent_unchanged", native_sent)
          .Add("sent_tokens", report.used_tokens)
          .Add("window", report.context_window)
          .Add("dropped", report.dropped_messages)
          .Add("summarized", report.covered_messages)
          .Add("summaries", report.summaries_included)
          .Add("context_id", built->context_id)
          .Add("upstream", upstream->base)
          .Add("upstream_status", out.status)
          .Add("retried_after_compaction", retried)
          .Add("answer", answer_state)
          .Add("relayed_bytes", out.bytes)
          .Add("partial_chars", out.complete ? size_t{0} : reader->partial_chars())
          .Add("prompt_tokens", prompt_tokens)
          .Add("body_read_ms", MsBetween(call.request.head_read_at, call.start))
          .Add("first_byte_ms", out.status != 0 ? MsBetween(call.start, out.head_at) : 0)
          .Add("duration_ms", MsSince(call.start))});
  // Once the event committed; the requests held run on a worker (never the writer's thread,
  // where one that writes would wait for itself).
  s.deps.audit->AfterPending([&s, ticket](Status) {
    RunOnWorker(s.deps, [&barrier = s.barrier, ticket] { barrier.End(ticket); });
  });
  if (usage) {
    (void)Await<UsageOutcome>(
        [&](Done<UsageOutcome> done) { s.usage.Report(*usage, std::move(done)); });
  }
  CountRequest(s.deps.metrics, api, upstream->base, out, call.start);
  if (retried && s.deps.metrics != nullptr) s.deps.metrics->proxy_retries.With({api}).Inc();
  // The agent's next turn resends this list with a few more messages at its end.
  if (answer_state == "complete") parse_cache_.Keep(std::move(call.request.body), std::move(*parsed));
}

}  // namespace missy::proxy
