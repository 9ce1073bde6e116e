#include "core/system_sections.h"

namespace missy {

std::string JoinSystemSections(const std::string& base, const std::string& memory,
                               const std::string& learnings) {
  std::string out = base;
  for (const std::string* section : {&memory, &learnings}) {
    if (section->empty()) continue;
    if (!out.empty()) out += "\n\n";
    out += *section;
  }
  return out;
}

std::string LearningLine(const Learning& l) {
  std::string out;
  if (!l.task_type.empty() || !l.outcome.empty()) {
    out += "[" + l.task_type + (l.task_type.empty() || l.outcome.empty() ? "" : ", ") + l.outcome +
           "] ";
  }
  return out + l.lesson;
}

}  // namespace missy
