#include "cli/input_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace swan::cli {

std::vector<std::string> ExpandInputFiles(const std::vector<std::string>& paths, const std::string& ext) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
      continue;
    }
    if (!fs::is_directory(p, ec)) throw std::invalid_argument(p + ": no such file or directory");
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied);
         it != fs::recursive_directory_iterator(); ++it) {
      if (!it->is_regular_file(ec)) continue;
      const std::string name = it->path().string();
      if (ext.empty() || (name.size() >= ext.size() && name.ends_with(ext))) found.push_back(name);
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace swan::cli
