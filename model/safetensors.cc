#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>

#include "util/bf16.h"
#include "util/f16.h"
#include "util/json_integer.h"
#include "util/memory.h"

namespace swan {
namespace {

using nlohmann::json;

[[noreturn]] void Fail(const std::string& file, const std::string& what) {
  throw std::runtime_error(file + ": " + what);
}

// Bytes per element of every dtype the format defines; 0 = unknown.
size_t DTypeSize(const std::string& dtype) {
  static const std::map<std::string, size_t> kSizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},  {"I32", 4},     {"I16", 2},    {"I8", 1},
      {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

}  // namespace

// --- MappedFile ---------------------------------------------------------------

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    Fail(path, std::string("cannot stat: ") + std::strerror(err));
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      Fail(path, std::string("cannot mmap: ") + std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

// --- TensorInfo ---------------------------------------------------------------

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// --- SafetensorsFile ----------------------------------------------------------

SafetensorsFile::SafetensorsFile(const std::string& path) : map_(path) {
  const size_t size = map_.size();
  if (size < 8) Fail(path, "not a safetensors file: " + std::to_string(size) + " bytes, too short");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | map_.data()[i];
  if (header_len > size - 8)
    Fail(path, "not a safetensors file (or truncated): header length " + std::to_string(header_len) +
                   " exceeds file size " + std::to_string(size));
  const char* header = reinterpret_cast<const char*>(map_.data() + 8);
  json j;
  try {
    j = json::parse(header, header + header_len);
  } catch (const json::parse_error& e) {
    // The offset, not the parser's message: that quotes the bytes it read,
    // which in a file that is not safetensors are binary.
    Fail(path, "not a safetensors file: its " + std::to_string(header_len) +
                   "-byte header is not JSON (error at byte " + std::to_string(e.byte) + ")");
  }
  if (!j.is_object()) Fail(path, "not a safetensors file: header is not a JSON object");

  const uint8_t* data_start = map_.data() + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  for (const auto& [name, entry] : j.items()) {
    if (name == "__metadata__") continue;
    const std::string where = "tensor '" + name + "': ";
    try {
      TensorInfo t;
      t.name = name;
      t.file = path;
      t.dtype = entry.at("dtype").get<std::string>();
      if (!entry.at("shape").is_array() || !entry.at("data_offsets").is_array())
        Fail(path, where + "shape and data_offsets must be arrays");
      for (const json& d : entry.at("shape")) {
        const std::optional<int64_t> dim = JsonInteger<int64_t>(d);
        if (!dim) Fail(path, where + "shape entry " + d.dump() + " is not a whole number");
        t.shape.push_back(*dim);
      }
      std::vector<uint64_t> offsets;  // [2]: begin, end in the data section
      for (const json& o : entry.at("data_offsets")) {
        const std::optional<uint64_t> at = JsonInteger<uint64_t>(o);
        if (!at) Fail(path, where + "bad data_offsets");
        offsets.push_back(*at);
      }
      if (offsets.size() != 2 || offsets[0] > offsets[1]) Fail(path, where + "bad data_offsets");
      // Element count, refused before it can overflow: no tensor holds more
      // elements than the file has bytes.
      uint64_t elements = 1;
      for (int64_t d : t.shape) {
        if (d < 0) Fail(path, where + "negative dimension in shape " + ShapeToString(t.shape));
        if (d != 0 && elements > size / uint64_t(d))
          Fail(path, where + "shape " + ShapeToString(t.shape) + " is larger than the file");
        elements *= uint64_t(d);
      }
      if (offsets[1] > data_size)
        Fail(path, where + "data ends at byte " + std::to_string(offsets[1]) + " of the data section, which has only " +
                       std::to_string(data_size) + " bytes (truncated file?)");
      t.n_bytes = size_t(offsets[1] - offsets[0]);
      t.data = data_start + offsets[0];
      const size_t elem = DTypeSize(t.dtype);
      if (elem == 0) Fail(path, where + "unknown dtype '" + t.dtype + "'");
      if (size_t(t.numel()) * elem != t.n_bytes)
        Fail(path, where + "shape " + ShapeToString(t.shape) + " of " + t.dtype + " needs " +
                       std::to_string(size_t(t.numel()) * elem) + " bytes but data_offsets give " +
                       std::to_string(t.n_bytes));
      tensors_.emplace(name, std::move(t));
    } catch (const json::exception& e) {
      Fail(path, where + "malformed header entry (" + e.what() + ")");
    }
  }
}

// --- Writing ------------------------------------------------------------------

std::string SafetensorsBytes(const std::vector<TensorHeader>& tensors,
                             const std::function<void(size_t i, std::string& out)>& append_data) {
  json header = json::object();
  header["__metadata__"] = {{"format", "pt"}};
  size_t offset = 0;
  for (const TensorHeader& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.n_bytes}}};
    offset += t.n_bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i) out.push_back(char((uint64_t(text.size()) >> (8 * i)) & 0xff));  // little-endian
  out += text;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const size_t before = out.size();
    append_data(i, out);
    if (out.size() - before != tensors[i].n_bytes)
      throw std::logic_error("SafetensorsBytes: tensor '" + tensors[i].name + "' got " +
                             std::to_string(out.size() - before) + " bytes, its header says " +
                             std::to_string(tensors[i].n_bytes));
  }
  return out;
}

// --- TensorStore --------------------------------------------------------------

TensorStore TensorStore::OpenFiles(const std::vector<std::string>& paths) {
  TensorStore store;
  for (size_t i = 0; i < paths.size(); ++i) store.origin_ += (i ? ", " : "") + paths[i];
  for (const std::string& p : paths) {
    auto file = std::make_shared<SafetensorsFile>(p);
    for (const auto& [name, info] : file->tensors()) {
      auto [it, inserted] = store.tensors_.emplace(name, &info);
      store.file_of_[name] = store.files_.size();
      if (!inserted)
        throw std::runtime_error("tensor '" + name + "' appears in both " + it->second->file + " and " + p);
    }
    store.files_.push_back(std::move(file));
  }
  return store;
}

TensorStore TensorStore::OpenDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  const fs::path index = root / "model.safetensors.index.json";
  const fs::path single = root / "model.safetensors";
  if (fs::exists(index)) {
    std::ifstream in(index);
    json j;
    try {
      j = json::parse(in);
    } catch (const json::exception& e) {
      throw std::runtime_error(index.string() + ": not valid JSON (" + e.what() + ")");
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw std::runtime_error(index.string() + ": no \"weight_map\" object");
    std::set<std::string> shard_names;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string())
        throw std::runtime_error(index.string() + ": weight_map entry for '" + name + "' is not a file name");
      shard_names.insert(file.get<std::string>());
    }
    std::vector<std::string> paths;
    for (const std::string& s : shard_names) paths.push_back((root / s).string());
    TensorStore store = OpenFiles(paths);
    // Every tensor the index promises must be in the shard it names.
    for (const auto& [name, file] : j["weight_map"].items()) {
      auto it = store.tensors_.find(name);
      if (it == store.tensors_.end())
        throw std::runtime_error(index.string() + " lists tensor '" + name + "' in " + file.get<std::string>() +
                                 ", which does not contain it");
    }
    store.origin_ = dir;
    return store;
  }
  if (fs::exists(single)) {
    // Messages name the one file (its path includes the directory).
    return OpenFiles({single.string()});
  }
  throw std::runtime_error(dir + ": no model.safetensors or model.safetensors.index.json");
}

const TensorInfo& TensorStore::Info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw std::runtime_error(origin_ + ": missing tensor '" + name + "'");
  return *it->second;
}

std::shared_ptr<const void> TensorStore::Owner(const std::string& name) const {
  Info(name);  // throws when missing
  return files_[file_of_.at(name)];
}

void TensorStore::EvictPages(const std::string& name) const {
  const TensorInfo& t = Info(name);
  EvictMappedPages(t.data, t.n_bytes);
}

std::vector<std::string> TensorStore::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, info] : tensors_) names.push_back(name);
  return names;
}

std::vector<float> TensorStore::ReadF32(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = Info(name);
  if (t.shape != shape)
    throw std::runtime_error(t.file + ": tensor '" + name + "' has shape " + ShapeToString(t.shape) + ", expected " +
                             ShapeToString(shape));
  const size_t n = size_t(t.numel());
  std::vector<float> out(n);  // [numel]
  if (t.dtype == "F32") {
    std::memcpy(out.data(), t.data, n * sizeof(float));
  } else if (t.dtype == "BF16" || t.dtype == "F16") {
    const bool bf16 = t.dtype == "BF16";
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, t.data + 2 * i, sizeof(h));
      out[i] = bf16 ? BF16ToF32(h) : F16ToF32(h);
    }
  } else {
    throw std::runtime_error(t.file + ": tensor '" + name + "' has dtype " + t.dtype +
                             "; swan reads F32, F16 and BF16");
  }
  return out;
}

}  // namespace swan
