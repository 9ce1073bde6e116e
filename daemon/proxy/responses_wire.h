// The OpenAI Responses API (POST /v1/responses, stateless: `store: false` and the whole
// `input` every turn, as Codex CLI sends it) as the proxy reads and writes it. Input items
// are grouped into the agent's turns: a run of items the model produced (reasoning with
// its encrypted_content, assistant messages, function/custom/local-shell calls) is one
// native "message" (a JSON array of items) and one engine assistant message; each call's
// output item is a tool result; user, system and developer messages are user messages.
// `instructions` is the system prompt. A request chained by previous_response_id is not
// read here (the provider holds that history): the service forwards it unchanged.
// Pure; no I/O.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "daemon/proxy/wire.h"

namespace missy::proxy {

Result<ParsedRequest> ParseResponsesRequest(std::string_view body);
// Groups a list of items (an `input`, or an answer's `output`) into natives.
Result<std::vector<NativeMessage>> ResponsesItemsToNatives(const boost::json::array& items,
                                                           std::string_view field);
std::string BuildResponsesRequest(const ParsedRequest& request, const Outgoing& out);
std::unique_ptr<AnswerReader> MakeResponsesReader(bool stream);

}  // namespace missy::proxy
