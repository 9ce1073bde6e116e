// Cutting a tool call's arguments (a JSON document as text) to a token cap without breaking
// them: the longest string values are cut middle-out (a file's content being written, a
// heredoc), keys and the short values (paths, names, flags) stay whole, and the result is
// still one JSON document of the same shape, so a provider that parses the arguments (the
// Anthropic API's tool_use `input`) takes it. Pure.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/token_counter.h"
#include "core/truncation.h"

namespace missy {

// Keeps `arguments` when CountText(arguments) <= max_tokens. Otherwise, for a JSON object,
// array or string, its string values above one common length are cut middle-out (each with the
// usual marker) to the longest such length that brings the whole under max_tokens, and
// the document is serialized again; text that is not JSON of those kinds is cut
// middle-out as text. When even every string cut to its marker leaves the document over
// max_tokens (many keys, numbers), that smallest form is returned: tokens then exceed
// max_tokens, and the caller sees it in `tokens`; and when no cut makes the document
// smaller at all (values shorter than the marker), it is returned whole, not truncated.
TruncatedText TruncateToolArguments(std::string_view arguments, int64_t max_tokens,
                                    const MessageTokenCounter& counter);

// The largest level L >= 0 with sum(min(size, L)) <= budget: cutting every piece above L
// to L ("water-filling") takes the excess off the longest pieces only. The largest size
// when all fit whole.
int64_t CutLevel(std::vector<int64_t> sizes, int64_t budget);

}  // namespace missy
