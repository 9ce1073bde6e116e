#include "core/model_table.h"

#include <cctype>
#include <cmath>
#include <sstream>
#include <utility>

namespace missy {
namespace {

constexpr char kO200k[] = "o200k_base";
constexpr char kCl100k[] = "cl100k_base";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whole-string wildcard match: '*' matches any run (also empty). Inputs are lower-case.
bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_t = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_t;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string FormatDouble(double v) {
  std::ostringstream ss;
  ss << v;
  return ss.str();
}

int64_t LiteralLength(std::string_view pattern) {
  int64_t n = 0;
  for (char c : pattern) n += c != '*';
  return n;
}

}  // namespace

bool IsKnownEncoding(std::string_view encoding) {
  return encoding == kO200k || encoding == kCl100k || encoding == "heuristic";
}

Status ModelSpec::Validate() const {
  if (pattern.empty()) return Status::InvalidArgument("must not be empty", "pattern");
  if (context_window <= 0) {
    return Status::InvalidArgument("must be > 0, got " + std::to_string(context_window),
                                   "context_window");
  }
  if (max_output_tokens <= 0) {
    return Status::InvalidArgument("must be > 0, got " + std::to_string(max_output_tokens),
                                   "max_output_tokens");
  }
  if (max_output_tokens >= context_window) {
    return Status::InvalidArgument("must be less than context_window (" +
                                       std::to_string(context_window) + "), got " +
                                       std::to_string(max_output_tokens),
                                   "max_output_tokens");
  }
  if (!IsKnownEncoding(encoding)) {
    return Status::InvalidArgument(
        "expected one of o200k_base, cl100k_base, heuristic; got '" + encoding + "'", "encoding");
  }
  if (!std::isfinite(factor) || factor <= 0 || factor > 4) {
    return Status::InvalidArgument("must be in (0, 4], got " + FormatDouble(factor), "factor");
  }
  return Status::Ok();
}

ModelTable ModelTable::Builtin() {
  ModelTable t;
  // {pattern, context_window, max_output_tokens, encoding, factor}
  const ModelSpec rows[] = {
      // OpenAI (exact tokenizers).
      {"gpt-4o", 128000, 16384, kO200k, 1.0},
      {"gpt-4o-mini", 128000, 16384, kO200k, 1.0},
      {"chatgpt-4o-latest", 128000, 16384, kO200k, 1.0},
      {"gpt-4.1*", 1047576, 32768, kO200k, 1.0},
      {"gpt-5*", 400000, 128000, kO200k, 1.0},
      {"o1*", 200000, 100000, kO200k, 1.0},
      {"o1-mini*", 128000, 65536, kO200k, 1.0},
      {"o1-preview*", 128000, 32768, kO200k, 1.0},
      {"o3*", 200000, 100000, kO200k, 1.0},
      {"o4-mini*", 200000, 100000, kO200k, 1.0},
      {"gpt-4-turbo*", 128000, 4096, kCl100k, 1.0},
      {"gpt-4-*-preview", 128000, 4096, kCl100k, 1.0},
      {"gpt-4.5*", 128000, 16384, kO200k, 1.0},
      {"gpt-oss*", 131072, 32768, kO200k, 1.0},
      {"gpt-4", 8192, 4096, kCl100k, 1.0},
      {"gpt-4-32k*", 32768, 4096, kCl100k, 1.0},
      {"gpt-3.5-turbo*", 16385, 4096, kCl100k, 1.0},
      // Anthropic: no offline tokenizer; o200k scaled up.
      {"claude-*", 200000, 64000, kO200k, 1.15},
      {"claude-opus-4*", 200000, 32000, kO200k, 1.15},
      {"claude-opus-4-5*", 200000, 64000, kO200k, 1.15},
      {"claude-3*", 200000, 4096, kO200k, 1.15},
      {"claude-3-5*", 200000, 8192, kO200k, 1.15},
      {"claude-3-7*", 200000, 64000, kO200k, 1.15},
      // Google.
      {"gemini-*", 1048576, 65536, kO200k, 1.1},
      {"gemini-1.5-pro*", 2097152, 8192, kO200k, 1.1},
      {"gemini-1.5-flash*", 1048576, 8192, kO200k, 1.1},
      {"gemini-2.0-flash*", 1048576, 8192, kO200k, 1.1},
      // Local models (Ollama names, "name:tag").
      {"llama*", 131072, 8192, kO200k, 1.1},
      {"llama2*", 4096, 1024, kO200k, 1.1},
      {"llama3", 8192, 2048, kO200k, 1.1},
      {"llama3:*", 8192, 2048, kO200k, 1.1},
      {"llama3.*", 131072, 8192, kO200k, 1.1},
      {"qwen*", 32768, 4096, kO200k, 1.1},
      {"mistral*", 32768, 4096, kO200k, 1.1},
      {"mistral-nemo*", 131072, 8192, kO200k, 1.1},
      {"mistral-large*", 131072, 8192, kO200k, 1.1},
      {"mixtral*", 32768, 4096, kO200k, 1.1},
  };
  for (const ModelSpec& row : rows) t.Upsert(row);
  return t;
}

void ModelTable::Upsert(ModelSpec spec) {
  const std::string key = Lower(spec.pattern);
  for (ModelSpec& row : rows_) {
    if (Lower(row.pattern) == key) {
      row = std::move(spec);
      return;
    }
  }
  rows_.push_back(std::move(spec));
}

std::optional<ModelSpec> ModelTable::Lookup(std::string_view model) const {
  const std::string name = Lower(model);
  if (name.empty()) return std::nullopt;
  for (const ModelSpec& row : rows_) {
    if (Lower(row.pattern) == name) return row;
  }
  const ModelSpec* best = nullptr;
  int64_t best_score = -1;
  for (const ModelSpec& row : rows_) {
    const std::string pattern = Lower(row.pattern);
    if (pattern.empty()) continue;
    const bool glob = pattern.find('*') != std::string::npos;
    const bool matched = glob ? GlobMatch(pattern, name) : name.starts_with(pattern);
    if (!matched) continue;
    const int64_t score = LiteralLength(pattern);
    if (score >= best_score) {
      best = &row;
      best_score = score;
    }
  }
  if (best != nullptr) return *best;
  const size_t slash = name.rfind('/');
  if (slash != std::string::npos && slash + 1 < name.size()) {
    return Lookup(std::string_view(model).substr(slash + 1));
  }
  return std::nullopt;
}

Status ModelTable::Validate() const {
  for (size_t i = 0; i < rows_.size(); ++i) {
    Status s = rows_[i].Validate();
    if (!s.ok()) {
      return Status::InvalidArgument("model '" + rows_[i].pattern + "': " + s.message(),
                                     "rows[" + std::to_string(i) + "]." + s.field());
    }
  }
  return Status::Ok();
}

}  // namespace missy
