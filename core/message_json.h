// The JSON forms of the message model (OpenAI chat shape): parsing a message with
// errors naming the offending field ("messages[3].tool_calls[0].id"), serialising it
// back to the same shape, and an append warning as JSON. Kept apart from message.h so
// that code which only stores or assembles messages does not include Boost.JSON.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string_view>

#include "core/message.h"
#include "core/sanitizer.h"
#include "core/status.h"

namespace missy {

// Parses one message. `field` is the path used in errors, e.g. "messages[3]".
Result<Message> ParseMessage(const boost::json::value& v, std::string_view field = "message");
boost::json::object MessageToJson(const Message& m);

// {"index","tool_call_id","problem","message"}
boost::json::object AppendWarningToJson(const AppendWarning& w);

}  // namespace missy
