#include "cli/table.h"

#include <algorithm>
#include <cstdio>

namespace missy::cli {
namespace {

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026

// Length of the UTF-8 sequence starting with `lead` when it is a valid lead byte, else 1.
size_t SequenceLength(std::string_view s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  size_t n = lead < 0x80           ? 1
             : (lead >> 5) == 0x6  ? 2
             : (lead >> 4) == 0xE  ? 3
             : (lead >> 3) == 0x1E ? 4
                                   : 1;
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

std::string OneLine(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7F) ? ' ' : c;
  }
  return out;
}

}  // namespace

size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size(); i += SequenceLength(text, i)) ++width;
  return width;
}

std::string Ellipsize(std::string_view text, size_t width) {
  const std::string line = OneLine(text);
  if (DisplayWidth(line) <= width) return line;
  if (width == 0) return "";
  std::string out;
  size_t used = 0;
  for (size_t i = 0; i < line.size() && used + 1 < width; ++used) {
    const size_t n = SequenceLength(line, i);
    out.append(line, i, n);
    i += n;
  }
  return out + std::string(kEllipsis);
}

std::string PadRight(std::string_view text, size_t width) {
  std::string out = Ellipsize(text, width);
  out.append(width - DisplayWidth(out), ' ');
  return out;
}

std::string PadLeft(std::string_view text, size_t width) {
  std::string cut = Ellipsize(text, width);
  return std::string(width - DisplayWidth(cut), ' ') + cut;
}

std::string Thousands(int64_t n) {
  const bool negative = n < 0;
  std::string digits = std::to_string(n);
  if (negative) digits.erase(0, 1);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return negative ? "-" + out : out;
}

std::string HumanDuration(int64_t ms) {
  char buf[48];
  if (ms < 0) ms = 0;
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lld ms", static_cast<long long>(ms));
  } else if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  } else {
    const long long s = ms / 1000;
    if (s < 3600) {
      std::snprintf(buf, sizeof buf, "%lldm %02llds", s / 60, s % 60);
    } else if (s < 86400) {
      std::snprintf(buf, sizeof buf, "%lldh %02lldm", s / 3600, (s % 3600) / 60);
    } else {
      std::snprintf(buf, sizeof buf, "%lldd %02lldh", s / 86400, (s % 86400) / 3600);
    }
  }
  return buf;
}

std::string HumanBytes(int64_t bytes) {
  char buf[48];
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(std::max<int64_t>(bytes, 0)));
    return buf;
  }
  double v = static_cast<double>(bytes) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string ShortTimestamp(std::string_view iso) {
  // 2026-11-21T17:03:44.276Z
  if (iso.size() < 19 || iso[10] != 'T' || iso[4] != '-' || iso[13] != ':') return std::string(iso);
  std::string out(iso.substr(0, 19));
  out[10] = ' ';
  return out;
}

std::string Count(int64_t n, std::string_view singular, std::string_view plural) {
  std::string word = n == 1 ? std::string(singular)
                            : (plural.empty() ? std::string(singular) + "s" : std::string(plural));
  return Thousands(n) + " " + word;
}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::Render(size_t max_width) const {
  const size_t n = columns_.size();
  if (n == 0) return "";
  std::vector<size_t> width(n);
  for (size_t c = 0; c < n; ++c) {
    width[c] = DisplayWidth(columns_[c].title);
    for (const auto& row : rows_) width[c] = std::max(width[c], DisplayWidth(OneLine(row[c])));
  }
  auto total = [&] {
    size_t sum = 2 * (n - 1);
    for (size_t w : width) sum += w;
    return sum;
  };
  // Shrink the widest flexible column one step at a time: the cut is shared fairly.
  while (total() > max_width) {
    size_t widest = n;
    for (size_t c = 0; c < n; ++c) {
      if (!columns_[c].flexible || width[c] <= columns_[c].min_width) continue;
      if (widest == n || width[c] > width[widest]) widest = c;
    }
    if (widest == n) break;
    --width[widest];
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < n; ++c) {
      if (c > 0) out += "  ";
      out += columns_[c].align == Align::kRight ? PadLeft(cells[c], width[c])
                                                : PadRight(cells[c], width[c]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> titles;
  for (const Column& c : columns_) titles.push_back(c.title);
  std::string out = line(titles);
  for (const auto& row : rows_) out += line(row);
  return out;
}

}  // namespace missy::cli
