// GGUF, llama.cpp's model file: a header, typed metadata (architecture,
// hyperparameters, the tokenizer), tensor descriptions, then the tensors'
// bytes at an alignment, read here from a memory map without copies.
//   "GGUF", u32 version (2 or 3), u64 tensors, u64 metadata entries;
//   entry: string key, u32 value type, value (arrays: u32 element type,
//          u64 count, elements); string: u64 length, bytes;
//   tensor: string name, u32 dims, u64 ne[dims] (ne[0] the innermost),
//           u32 ggml type, u64 offset into the data (a multiple of the
//           alignment, general.alignment or 32).
// Every length and offset is checked against the file: a truncated or
// hostile file is refused with a message naming it, never read past.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/safetensors.h"  // MappedFile
#include "ops/weight_type.h"

namespace swan {

// Whether `path` is a file that starts with "GGUF".
bool IsGgufFile(const std::string& path);

// ggml's tensor type ids (ggml.h), the ones a GGUF file may hold.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kBF16 = 30,
};
// "F32", "Q4_K", ...; "type N" for an id this table does not know.
std::string GgmlTypeName(uint32_t type);
// The WeightType swan computes a tensor of this type in, if it can.
std::optional<WeightType> WeightTypeOf(uint32_t ggml_type);

// One metadata value. Scalars are in the member their type fills (all
// integers in `i`, u64 beyond int64 in `u`); arrays in `strings` or
// `numbers` by their element type.
struct GgufValue {
  enum Type : uint32_t {
    kU8 = 0,
    kI8 = 1,
    kU16 = 2,
    kI16 = 3,
    kU32 = 4,
    kI32 = 5,
    kF32 = 6,
    kBool = 7,
    kString = 8,
    kArray = 9,
    kU64 = 10,
    kI64 = 11,
    kF64 = 12,
  };
  Type type = kU8;
  Type element = kU8;                // for arrays
  int64_t i = 0;                     // integer and bool scalars
  uint64_t u = 0;                    // kU64 scalars
  double f = 0;                      // float scalars
  std::string s;                     // kString
  std::vector<std::string> strings;  // [count] arrays of strings
  std::vector<double> numbers;       // [count] arrays of numbers (and bools)
};

// A string value, and a scalar of a numeric type (bool, integers, floats).
GgufValue GgufString(const std::string& s);
GgufValue GgufNumber(GgufValue::Type type, double v);

struct GgufTensor {
  std::string name;
  uint32_t type = 0;              // GgmlType's value
  std::vector<int64_t> ne;        // [dims], ne[0] innermost: a matrix [out, in] has ne = {in, out}
  const uint8_t* data = nullptr;  // n_bytes, in the mapping
  size_t n_bytes = 0;

  int64_t numel() const;
};

class GgufFile {
 public:
  // Maps and parses `path`. Throws std::runtime_error naming the file and
  // what is wrong with it. The first part of a model llama.cpp's gguf-split
  // cut into files (split.count > 1; PREFIX-00001-of-0000N.gguf) brings in
  // the others from beside it (gguf_split.cc): their tensors join its own,
  // its metadata is the model's.
  explicit GgufFile(const std::string& path);
  // Parses `size` bytes at `data` (kept by the caller); `origin` names them
  // in messages. For tests and the fuzz target.
  GgufFile(const uint8_t* data, size_t size, const std::string& origin);

  uint32_t version() const { return version_; }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const std::string& origin() const { return origin_; }
  // What keeps the tensors' bytes mapped, every part's (null for caller-kept bytes).
  std::shared_ptr<const void> owner() const { return owner_; }
  // The files read: the path, then a split model's other parts.
  const std::vector<std::string>& paths() const { return paths_; }

  // A metadata value of the right kind, or a message naming the key.
  const GgufValue* Find(const std::string& key) const;
  std::string String(const std::string& key) const;  // throws when missing or not a string
  int64_t Int(const std::string& key) const;         // any integer type
  std::optional<int64_t> OptionalInt(const std::string& key) const;
  double Float(const std::string& key) const;               // any number
  const GgufTensor* Tensor(const std::string& name) const;  // null when absent

 private:
  struct OnePart {};
  // Maps and parses one file, a split model's part as it is.
  GgufFile(const std::string& path, OnePart);
  void Parse(const uint8_t* data, size_t size);
  // Adds the tensors of the other parts of a split model (gguf_split.cc).
  void JoinSplitParts();

  std::shared_ptr<MappedFile> map_;    // null for caller-kept bytes
  std::shared_ptr<const void> owner_;  // map_, or every part's mapping
  std::vector<std::string> paths_;     // [parts] the files read (empty for caller-kept bytes)
  std::string origin_;
  uint32_t version_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> index_;  // name -> tensors_ index
};

// A GGUF file's bytes (version 3, alignment 32): the metadata in order,
// then each tensor with its ggml type, ne and bytes. For tests and export.
struct GgufTensorBytes {
  std::string name;
  uint32_t type = 0;
  std::vector<int64_t> ne;
  std::string bytes;
};
std::string GgufBytes(const std::vector<std::pair<std::string, GgufValue>>& metadata,
                      const std::vector<GgufTensorBytes>& tensors);

}  // namespace swan
