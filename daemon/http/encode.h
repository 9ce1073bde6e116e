// Records as API JSON (docs/API.md): one function per record type.
#pragma once

#include <boost/json/object.hpp>

#include "core/message.h"
#include "core/message_json.h"
#include "core/session.h"
#include "storage/records.h"

namespace missy::http {

boost::json::object SessionToJson(const Session& s);
boost::json::object StoredMessageToJson(const StoredMessage& m);
boost::json::array FlagNames(uint32_t flags);
boost::json::object SummaryToJson(const SummaryRecord& r);
boost::json::object MemoryToJson(const MemoryItem& m);
boost::json::object LearningToJson(const LearningRecord& l);
boost::json::object JobToJson(const Job& j);
boost::json::array StringsToJson(const std::vector<std::string>& v);

}  // namespace missy::http
