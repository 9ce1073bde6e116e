// A JSON text scanned without parsing it: where a value ends, and the members of the
// top-level object. The parse cache finds a message list's elements with it, and a
// request body is checked with it for a member named twice (a parser keeps one of them,
// another parser the other: the proxy and the upstream would read different requests).
// Checks nesting and strings, not every rule of JSON: what it accepts is parsed as well.
// Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace missy::proxy {

// The offset of the first byte at or after `p` that is not JSON white space.
size_t SkipSpace(std::string_view t, size_t p);
// The offset just past the string that opens at t[p] ('"'), or npos.
size_t SkipString(std::string_view t, size_t p);
// The offset just past the JSON value that starts at t[p], or npos.
size_t SkipValue(std::string_view t, size_t p);

// The name of a member the top-level object of `text` holds twice (names compared as
// JSON strings: "a" and "\u0061" are one name); "" when none is, or when the scan cannot
// read `text` as an object. Meant for a text the JSON parser accepted.
std::string DuplicateMember(std::string_view text);

}  // namespace missy::proxy
