// Expands command-line paths into the regular files a command reads: files
// are taken as they are, directories are walked recursively (sorted, so the
// order is the same on every run) keeping names that end with `ext`.
#pragma once

#include <string>
#include <vector>

namespace swan::cli {

// Throws std::invalid_argument for a path that does not exist.
std::vector<std::string> ExpandInputFiles(const std::vector<std::string>& paths, const std::string& ext);

// The whole file as bytes; throws std::runtime_error naming it on failure.
std::string ReadWholeFile(const std::string& path);

}  // namespace swan::cli
