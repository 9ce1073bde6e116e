// Plain-text formatting for missyctl: a table that fits a given width (80 columns by
// default) by shrinking its flexible columns and cutting cells with "…", and the small
// number/time formats its commands share. Widths count code points (each counts one
// column; wide CJK glyphs are not special-cased). Pure functions, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace missy::cli {

inline constexpr size_t kTerminalWidth = 80;

// Columns of text (code points); invalid UTF-8 bytes count one each.
size_t DisplayWidth(std::string_view text);
// `text` on one line (control characters, newlines and tabs become spaces) and at most
// `width` columns: cut with a trailing "…" when longer. width 0 gives "".
std::string Ellipsize(std::string_view text, size_t width);
// Pads (or cuts, with "…") to exactly `width` columns.
std::string PadRight(std::string_view text, size_t width);
std::string PadLeft(std::string_view text, size_t width);

// 1234567 -> "1,234,567"; negative numbers keep their sign.
std::string Thousands(int64_t n);
// Milliseconds as "850 ms", "12.3 s", "4m 05s", "2h 03m", "3d 04h".
std::string HumanDuration(int64_t ms);
// Bytes as "512 B", "2.3 KiB", "31.5 MiB", "1.2 GiB".
std::string HumanBytes(int64_t bytes);
// "2026-11-21T17:03:44.276Z" -> "2026-11-21 17:03:44" (other text is returned as is).
std::string ShortTimestamp(std::string_view iso);
// "1 message" / "3 messages" (`plural` defaults to singular + "s").
std::string Count(int64_t n, std::string_view singular, std::string_view plural = {});

enum class Align { kLeft, kRight };

struct Column {
  std::string title;
  Align align = Align::kLeft;
  // Flexible columns shrink (largest first, not below min_width) when the table is too
  // wide; the others keep their natural width.
  bool flexible = false;
  size_t min_width = 4;
};

class Table {
 public:
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  // Missing cells are empty; extra cells are ignored.
  void AddRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  // Header line then one line per row, columns two spaces apart, each line ending in
  // "\n" without trailing spaces, no line wider than max_width once flexible columns
  // reached their minimum (fixed columns are never cut).
  std::string Render(size_t max_width = kTerminalWidth) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace missy::cli
