// Helpers for tests that write their own model files.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "util/test_paths.h"
#include <system_error>
#include <vector>

#include "model/safetensors.h"

namespace swan::test {

struct RawTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", "I32", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

inline RawTensor F32Tensor(const std::string& name, const std::vector<int64_t>& shape,
                           const std::vector<float>& values) {
  RawTensor t{name, "F32", shape, std::vector<uint8_t>(values.size() * 4)};
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

// The bytes of a safetensors file holding `tensors` in order.
inline std::string SafetensorsBytes(const std::vector<RawTensor>& tensors) {
  std::vector<swan::TensorHeader> headers;
  for (const RawTensor& t : tensors) headers.push_back({t.name, t.dtype, t.shape, t.bytes.size()});
  return swan::SafetensorsBytes(headers, [&](size_t i, std::string& out) {
    out.append(reinterpret_cast<const char*>(tensors[i].bytes.data()), tensors[i].bytes.size());
  });
}

inline void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A fresh empty directory under the system temp dir.
// The directories TempDir made, removed when the test program exits, so
// that test runs do not fill the temporary directory (SWAN_KEEP_TEST_DIRS=1
// keeps them, for a look after a failure).
struct MadeTempDirs {
  std::vector<std::filesystem::path> dirs;
  ~MadeTempDirs() {
    if (std::getenv("SWAN_KEEP_TEST_DIRS")) return;
    std::error_code ignored;
    for (const auto& dir : dirs) std::filesystem::remove_all(dir, ignored);
  }
};

inline std::filesystem::path TempDir(const std::string& name) {
  static MadeTempDirs made;
  std::random_device rd;
  const auto dir = std::filesystem::temp_directory_path() / ("swan_" + name + "_" + std::to_string(rd()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  made.dirs.push_back(dir);
  return dir;
}

// RMS of the difference over the RMS of the reference (logits against
// logits, say).
inline double RelativeRms(const std::vector<float>& got, const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace swan::test
