// Helpers shared by the summarizer tests: the heuristic counter, and messages as a store
// returns them (seqs from 1, their token counts, and their extracts when asked).
#pragma once

#include <memory>
#include <vector>

#include "core/message.h"
#include "core/message_extract.h"
#include "core/token_counter.h"

namespace missy::testing {

inline MessageTokenCounter HeuristicCounter() {
  return MessageTokenCounter(std::make_shared<HeuristicTokenCounter>());
}

inline std::vector<StoredMessage> StoredMessages(std::vector<Message> messages,
                                                 bool with_extracts = false) {
  std::vector<StoredMessage> out;
  const MessageTokenCounter counter = HeuristicCounter();
  for (Message& m : messages) {
    StoredMessage s;
    s.seq = static_cast<int64_t>(out.size()) + 1;
    s.tokens = counter.CountMessage(m);
    if (with_extracts) s.extract = ExtractMessage(m);
    s.message = std::move(m);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace missy::testing
