// The recorded agent sessions the benchmarks replay: ../shared/data/trajectories/*.jsonl
// next to the repository, sorted by name (empty when the folder is absent). Header-only:
// every bench/*_bench.cpp is its own executable.
#pragma once

#include <algorithm>
#include <filesystem>
#include <vector>

namespace missy::bench {

inline std::vector<std::filesystem::path> TrajectoryFiles() {
  const std::filesystem::path dir = MISSY_SOURCE_DIR "/../shared/data/trajectories";
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".jsonl") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace missy::bench
