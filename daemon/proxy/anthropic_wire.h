// The Anthropic Messages API (POST /v1/messages) as the proxy reads and writes it:
// a request's messages as engine messages beside their native JSON, the request sent
// upstream (the agent's body with `messages` replaced), and the answer (JSON or SSE) rebuilt into the assistant message.
// Pure; no I/O.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "daemon/proxy/wire.h"

namespace missy::proxy {

// kInvalidArgument naming the field ("messages[2].content[0].tool_use_id") for a body
// that is not a Messages request.
Result<ParsedRequest> ParseAnthropicRequest(std::string_view body);

// One native message's engine form (also used for the message rebuilt from an answer,
// so that it hashes as the agent's copy of it will next turn).
Result<std::vector<Message>> AnthropicToEngine(const boost::json::value& native,
                                               std::string_view field);

// The body to send upstream: the agent's, with `messages` built from `out` (natives as
// they came, rewritten and injected ones in the API's shape); everything else as sent.
std::string BuildAnthropicRequest(const ParsedRequest& request, const Outgoing& out);

std::unique_ptr<AnswerReader> MakeAnthropicReader(bool stream);

// {"type":"error","error":{"type":TYPE,"message":MESSAGE}}
std::string AnthropicError(std::string_view type, std::string_view message);

// The API's refusal of a prompt longer than the model's window.
bool IsAnthropicContextLengthError(int status, std::string_view body);

}  // namespace missy::proxy
