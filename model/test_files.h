// Helpers for tests that write their own model files.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

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
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  size_t offset = 0;
  for (const RawTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::string out(8, '\0');
  uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((len >> (8 * i)) & 0xff);
  out += h;
  for (const RawTensor& t : tensors) out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
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
inline std::filesystem::path TempDir(const std::string& name) {
  std::random_device rd;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("swan_" + name + "_" + std::to_string(rd()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string SharedDir() {
  const char* d = std::getenv("SWAN_SHARED_DIR");
  return d ? d : "../shared";
}

inline std::string Stories260K() { return SharedDir() + "/data/stories260K"; }

}  // namespace swan::test
