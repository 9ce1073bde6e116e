// The OpenAI Chat Completions API (POST /v1/chat/completions) as the proxy reads and
// writes it: the leading system/developer messages are the system prompt (sent first as
// they came), the rest is history; the answer (JSON or `stream: true` chunks, tool-call
// deltas included) is rebuilt into the assistant message. Pure; no I/O.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "daemon/proxy/wire.h"

namespace missy::proxy {

Result<ParsedRequest> ParseChatRequest(std::string_view body);
Result<std::vector<Message>> ChatToEngine(const boost::json::value& native, std::string_view field);
std::string BuildChatRequest(const ParsedRequest& request, const Outgoing& out);
std::unique_ptr<AnswerReader> MakeChatReader(bool stream);

// {"error":{"message":MESSAGE,"type":TYPE,"param":null,"code":CODE}}
std::string OpenAiError(std::string_view type, std::string_view message, std::string_view code);
bool IsOpenAiContextLengthError(int status, std::string_view body);

}  // namespace missy::proxy
