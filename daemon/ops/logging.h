// missyd's log output. Under systemd (stderr is the journal's stream, or the daemon was
// socket-activated) each line is "<N>message" with the sd-daemon(3) priority prefix
// ("<3>" error, "<4>" warning, "<6>" info, "<7>" debug) and no timestamp: journald adds
// both. Otherwise: coloured, timestamped lines on stderr.
#pragma once

#include <spdlog/common.h>
#include <spdlog/logger.h>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace missy::ops {

// True when stderr is the journal's stream: $JOURNAL_STREAM ("dev:ino") names the
// device and inode of file descriptor 2.
bool StderrIsJournal();

// "<3>" for err, "<4>" warn, "<6>" info, "<7>" debug and trace, "<2>" critical.
std::string_view JournalPrefix(spdlog::level::level_enum level);

// A logger named `name` writing to stderr: journal lines when `journal`, else coloured
// console lines.
std::shared_ptr<spdlog::logger> MakeStderrLogger(const std::string& name, bool journal);

// The same journal format into any FILE* (tests).
std::shared_ptr<spdlog::logger> MakeJournalLogger(const std::string& name, std::FILE* out);

}  // namespace missy::ops
