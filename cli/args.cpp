#include "cli/args.h"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace missy::cli {

std::string ParsedArgs::Get(const std::string& name, const std::string& fallback) const {
  auto range = values.equal_range(name);
  if (range.first == range.second) return fallback;
  return std::prev(range.second)->second;
}

std::vector<std::string> ParsedArgs::All(const std::string& name) const {
  std::vector<std::string> out;
  auto range = values.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

Result<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                             const std::vector<OptionSpec>& options) {
  ParsedArgs out;
  auto find = [&](const std::string& name) -> const OptionSpec* {
    for (const OptionSpec& o : options) {
      if (o.name == name || (!o.alias.empty() && o.alias == name)) return &o;
    }
    return nullptr;
  };
  bool only_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positional || a.size() < 2 || a[0] != '-') {
      out.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      out.help = true;
      continue;
    }
    std::string name = a;
    std::optional<std::string> inline_value;
    if (size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
    }
    const OptionSpec* spec = find(name);
    if (spec == nullptr) {
      // A negative number is a positional (e.g. text to count), not an option.
      if (a.size() > 1 && std::isdigit(static_cast<unsigned char>(a[1]))) {
        out.positional.push_back(a);
        continue;
      }
      return Status::InvalidArgument("unknown option '" + name + "'", name);
    }
    if (!spec->takes_value) {
      if (inline_value) {
        return Status::InvalidArgument("option " + spec->name + " takes no value", spec->name);
      }
      out.switches.insert(spec->name);
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) {
        return Status::InvalidArgument("option " + spec->name + " needs a value", spec->name);
      }
      inline_value = args[++i];
    }
    out.values.emplace(spec->name, *inline_value);
  }
  return out;
}

Result<int64_t> IntOption(const ParsedArgs& args, const std::string& name, int64_t min, int64_t max,
                          int64_t fallback) {
  if (!args.Has(name)) return fallback;
  const std::string text = args.Get(name);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return Status::InvalidArgument(name + ": expected an integer from " + std::to_string(min) +
                                       " to " + std::to_string(max) + ", got '" + text + "'",
                                   name);
  }
  return value;
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace missy::cli
