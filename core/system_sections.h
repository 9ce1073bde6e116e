// The enriched system message's format: the agent's prompt, then "## Relevant Memory" and
// "## Past Learnings" with one "\n- " item per hit or learning. One definition for the
// assembler that writes it (assembly_system.cpp) and the rebuild that must write the same
// bytes again (context_rebuild.cpp). Pure.
#pragma once

#include <string>
#include <string_view>

#include "core/context_types.h"

namespace missy {

inline constexpr std::string_view kMemoryHeading = "## Relevant Memory";
inline constexpr std::string_view kLearningsHeading = "## Past Learnings";
inline constexpr std::string_view kSectionItem = "\n- ";

// The system message's text: `base`, then each non-empty section after a blank line.
std::string JoinSystemSections(const std::string& base, const std::string& memory,
                               const std::string& learnings);

// "[task_type, outcome] lesson": a learning's item, without the "\n- ".
std::string LearningLine(const Learning& l);

}  // namespace missy
