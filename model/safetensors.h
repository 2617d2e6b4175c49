// Reading checkpoints in the safetensors format, memory-mapped.
//
// A safetensors file is: 8 bytes little-endian header length N, N bytes of
// JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]},
// "__metadata__": {..}}, then the tensor bytes (offsets relative to the end
// of the header). A model directory holds either `model.safetensors` or
// shards listed in `model.safetensors.index.json` ("weight_map": name ->
// file).
//
// Every error is a std::runtime_error that names the file and the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace swan {

// A read-only memory map of a whole file; unmapped when destroyed.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// One tensor's place in a mapped file.
struct TensorInfo {
  std::string name;
  std::string dtype;  // as written in the file: "F32", "BF16", ...
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // [numel] elements of `dtype`
  size_t n_bytes = 0;
  std::string file;  // the file it lives in, for messages

  int64_t numel() const;
};

// "[512, 64]"
std::string ShapeToString(const std::vector<int64_t>& shape);

// One mapped safetensors file and its tensor table.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::string& path() const { return map_.path(); }

 private:
  MappedFile map_;
  std::map<std::string, TensorInfo> tensors_;
};

// One tensor of a file to write: what the header says of it.
struct TensorHeader {
  std::string name;
  std::string dtype;  // "F32", "BF16", "F16", "I32", ...
  std::vector<int64_t> shape;
  size_t n_bytes = 0;  // its data's bytes
};

// The bytes of a safetensors file holding `tensors` in order: the header
// (padded so that the data starts 8-byte aligned), then each tensor's data
// as append_data(i, out) appends it to `out` (exactly n_bytes). Throws
// std::logic_error when an append gives another number of bytes.
std::string SafetensorsBytes(const std::vector<TensorHeader>& tensors,
                             const std::function<void(size_t i, std::string& out)>& append_data);

// The tensors of a model directory, from one or several files.
class TensorStore {
 public:
  // Opens DIR/model.safetensors, or the shards that
  // DIR/model.safetensors.index.json lists.
  static TensorStore OpenDirectory(const std::string& dir);
  // Opens the given files (names must be unique across them).
  static TensorStore OpenFiles(const std::vector<std::string>& paths);

  bool Has(const std::string& name) const { return tensors_.count(name) > 0; }
  // Throws when the tensor is missing, naming the directory or files.
  const TensorInfo& Info(const std::string& name) const;
  // The tensor converted to float32 (from F32, F16 or BF16). Throws when it is
  // missing, has another shape than `shape`, or has another dtype.
  std::vector<float> ReadF32(const std::string& name, const std::vector<int64_t>& shape) const;
  std::vector<std::string> Names() const;
  // What keeps the tensor's bytes (Info(name).data) mapped: hold it to use
  // them in place after the store is gone.
  std::shared_ptr<const void> Owner(const std::string& name) const;
  // Lets the kernel take back the pages of the tensor's bytes (those wholly
  // inside it): they leave the resident set, and a later read faults them
  // in again from the file. For a tensor converted into a copy.
  void EvictPages(const std::string& name) const;

 private:
  std::string origin_;  // the directory or file list, for messages
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorInfo*> tensors_;
  std::map<std::string, size_t> file_of_;  // name -> index into files_
};

}  // namespace swan
