// The inspector page's files (ui/ in the source tree), compiled into the binary by
// daemon/ui/embed_assets.cmake: the page needs nothing on disk and nothing from another
// host. The bytes are static and never change while the process runs.
#pragma once

#include <span>
#include <string_view>

namespace missy::ui {

struct UiAsset {
  std::string_view name;  // relative to ui/: "index.html", "app.js"
  std::string_view body;
};

// Every file under ui/, sorted by name (generated at build time).
std::span<const UiAsset> EmbeddedAssets();

}  // namespace missy::ui
