// Which extra response headers (HttpResponse::headers, HttpExchange::Stream) the server
// sends (internal to daemon/net; pure, no Asio).
#pragma once

#include <string_view>

namespace missy::net {

// Content-Type, Content-Length, Transfer-Encoding, Connection (any case): the server
// sets those itself.
bool ServerOwnedHeader(std::string_view name);

// True for a field the server may send as given: the name is a non-empty HTTP token
// (RFC 9110 tchar) and the value holds no CR, LF or NUL (no response splitting).
bool ValidHeaderField(std::string_view name, std::string_view value);

// What the server does with one extra header: send it, skip it quietly (server-owned),
// or drop it with a warning (invalid). `what` names the request in the log.
bool SendExtraHeader(std::string_view name, std::string_view value, std::string_view what);

}  // namespace missy::net
