#include "storage/store_util.h"

#include "core/digest.h"

namespace missy::store_util {

std::string GenerateId(std::string_view prefix) { return std::string(prefix) + RandomHexId(); }

void BindPage(sqlite::Statement& q, const ListOptions& options) {
  q.Bind(1, static_cast<int64_t>(options.limit < 0 ? -1 : options.limit))
      .Bind(2, static_cast<int64_t>(options.offset < 0 ? 0 : options.offset));
}

}  // namespace missy::store_util
