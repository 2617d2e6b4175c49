#include "model/gguf.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace swan {
namespace {

struct TypeInfo {
  uint32_t id;
  const char* name;
  int64_t block_values;  // values per block (1 for plain floats)
  size_t block_bytes;
};

// ggml's type traits for the types GGUF files hold.
constexpr TypeInfo kTypes[] = {
    {0, "F32", 1, 4},       {1, "F16", 1, 2},       {2, "Q4_0", 32, 18},    {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},    {7, "Q5_1", 32, 24},    {8, "Q8_0", 32, 34},    {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},  {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {30, "BF16", 1, 2},
};

const TypeInfo* FindType(uint32_t id) {
  for (const TypeInfo& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read little-endian
constexpr size_t kMaxDims = 4;           // GGML_MAX_DIMS

// Reads little-endian values off the bytes, every read checked.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& origin) : data_(data), size_(size), origin_(origin) {}

  [[noreturn]] void Fail(const std::string& what) const {
    throw std::runtime_error(origin_ + ": not a valid GGUF file: " + what + " (at byte " + std::to_string(pos_) +
                             " of " + std::to_string(size_) + ")");
  }
  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  template <class T>
  T Get() {
    if (left() < sizeof(T)) Fail("it ends inside a value");
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string String() {
    const uint64_t n = Get<uint64_t>();
    if (n > left()) Fail("a string of " + std::to_string(n) + " bytes runs past the end");
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
    pos_ += size_t(n);
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& origin_;
};

// Bytes of one element of a scalar type; 0 for strings and arrays.
size_t ScalarBytes(uint32_t type) {
  switch (type) {
    case GgufValue::kU8:
    case GgufValue::kI8:
    case GgufValue::kBool: return 1;
    case GgufValue::kU16:
    case GgufValue::kI16: return 2;
    case GgufValue::kU32:
    case GgufValue::kI32:
    case GgufValue::kF32: return 4;
    case GgufValue::kU64:
    case GgufValue::kI64:
    case GgufValue::kF64: return 8;
    default: return 0;
  }
}

// A scalar of `type` as a double, and into v's member of its kind.
double ReadScalar(Reader& r, uint32_t type, GgufValue* v) {
  double d = 0;
  int64_t i = 0;
  switch (type) {
    case GgufValue::kU8:
      i = r.Get<uint8_t>();
      d = double(i);
      break;
    case GgufValue::kI8:
      i = r.Get<int8_t>();
      d = double(i);
      break;
    case GgufValue::kU16:
      i = r.Get<uint16_t>();
      d = double(i);
      break;
    case GgufValue::kI16:
      i = r.Get<int16_t>();
      d = double(i);
      break;
    case GgufValue::kU32:
      i = r.Get<uint32_t>();
      d = double(i);
      break;
    case GgufValue::kI32:
      i = r.Get<int32_t>();
      d = double(i);
      break;
    case GgufValue::kBool: {
      const uint8_t b = r.Get<uint8_t>();
      if (b > 1) r.Fail("a bool of value " + std::to_string(b));
      i = b;
      d = b;
      break;
    }
    case GgufValue::kI64:
      i = r.Get<int64_t>();
      d = double(i);
      break;
    case GgufValue::kU64: {
      const uint64_t u = r.Get<uint64_t>();
      if (v) v->u = u;
      i = u > uint64_t(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max() : int64_t(u);
      d = double(u);
      break;
    }
    case GgufValue::kF32: d = r.Get<float>(); break;
    case GgufValue::kF64: d = r.Get<double>(); break;
    default: r.Fail("value type " + std::to_string(type));
  }
  if (v) {
    v->i = i;
    v->f = d;
  }
  return d;
}

GgufValue ReadValue(Reader& r) {
  GgufValue v;
  const uint32_t type = r.Get<uint32_t>();
  if (type > GgufValue::kF64) r.Fail("unknown value type " + std::to_string(type));
  v.type = GgufValue::Type(type);
  if (type == GgufValue::kString) {
    v.s = r.String();
  } else if (type == GgufValue::kArray) {
    const uint32_t element = r.Get<uint32_t>();
    if (element > GgufValue::kF64 || element == GgufValue::kArray)
      r.Fail("array of element type " + std::to_string(element));
    v.element = GgufValue::Type(element);
    const uint64_t n = r.Get<uint64_t>();
    // each element takes at least its scalar bytes (a string, its length)
    const size_t least = element == GgufValue::kString ? 8 : ScalarBytes(element);
    if (n > r.left() / least) r.Fail("an array of " + std::to_string(n) + " elements runs past the end");
    if (element == GgufValue::kString) {
      v.strings.reserve(size_t(n));
      for (uint64_t k = 0; k < n; ++k) v.strings.push_back(r.String());
    } else {
      v.numbers.reserve(size_t(n));
      for (uint64_t k = 0; k < n; ++k) v.numbers.push_back(ReadScalar(r, element, nullptr));
    }
  } else {
    ReadScalar(r, type, &v);
  }
  return v;
}

}  // namespace

bool IsGgufFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in && std::memcmp(magic, "GGUF", 4) == 0;
}

GgufValue GgufString(const std::string& s) {
  GgufValue v;
  v.type = GgufValue::kString;
  v.s = s;
  return v;
}

GgufValue GgufNumber(GgufValue::Type type, double d) {
  GgufValue v;
  v.type = type;
  v.f = d;
  v.i = int64_t(d);
  v.u = uint64_t(d < 0 ? 0 : d);
  return v;
}

std::string GgmlTypeName(uint32_t type) {
  const TypeInfo* t = FindType(type);
  return t ? t->name : "type " + std::to_string(type);
}

std::optional<WeightType> WeightTypeOf(uint32_t ggml_type) {
  switch (GgmlType(ggml_type)) {
    case GgmlType::kF32: return WeightType::kF32;
    case GgmlType::kF16: return WeightType::kF16;
    case GgmlType::kBF16: return WeightType::kBF16;
    case GgmlType::kQ8_0: return WeightType::kQ8_0;
    case GgmlType::kQ4_0: return WeightType::kQ4_0;
    case GgmlType::kQ4_1: return WeightType::kQ4_1;
    case GgmlType::kQ5_0: return WeightType::kQ5_0;
    case GgmlType::kQ5_1: return WeightType::kQ5_1;
    case GgmlType::kQ4_K: return WeightType::kQ4_K;
    case GgmlType::kQ5_K: return WeightType::kQ5_K;
    case GgmlType::kQ6_K: return WeightType::kQ6_K;
    default: return std::nullopt;
  }
}

int64_t GgufTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

GgufFile::GgufFile(const std::string& path, OnePart)
    : map_(std::make_shared<MappedFile>(path)), owner_(map_), paths_{path}, origin_(path) {
  Parse(map_->data(), map_->size());
}

GgufFile::GgufFile(const std::string& path) : GgufFile(path, OnePart{}) { JoinSplitParts(); }

GgufFile::GgufFile(const uint8_t* data, size_t size, const std::string& origin) : origin_(origin) { Parse(data, size); }

void GgufFile::Parse(const uint8_t* data, size_t size) {
  Reader r(data, size, origin_);
  if (r.Get<uint32_t>() != kMagic) r.Fail("it does not start with \"GGUF\"");
  version_ = r.Get<uint32_t>();
  if (version_ != 2 && version_ != 3) r.Fail("version " + std::to_string(version_) + " (2 and 3 are read)");
  const uint64_t n_tensors = r.Get<uint64_t>(), n_metadata = r.Get<uint64_t>();
  // a metadata entry takes at least 12 bytes, a tensor description 24
  if (n_metadata > r.left() / 12) r.Fail(std::to_string(n_metadata) + " metadata entries cannot fit");
  for (uint64_t k = 0; k < n_metadata; ++k) {
    std::string key = r.String();
    if (metadata_.count(key)) r.Fail("metadata key '" + key + "' appears twice");
    metadata_[key] = ReadValue(r);
  }
  if (n_tensors > r.left() / 24) r.Fail(std::to_string(n_tensors) + " tensors cannot fit");
  struct Pending {
    GgufTensor t;
    uint64_t offset;
  };
  std::vector<Pending> pending;
  for (uint64_t k = 0; k < n_tensors; ++k) {
    Pending p;
    p.t.name = r.String();
    const uint32_t dims = r.Get<uint32_t>();
    if (dims == 0 || dims > kMaxDims) r.Fail("tensor '" + p.t.name + "' has " + std::to_string(dims) + " dimensions");
    uint64_t numel = 1;
    for (uint32_t d = 0; d < dims; ++d) {
      const uint64_t ne = r.Get<uint64_t>();
      if (ne == 0 || ne > (uint64_t(1) << 40) || numel > (uint64_t(1) << 48) / ne)
        r.Fail("tensor '" + p.t.name + "' has a dimension of " + std::to_string(ne));
      numel *= ne;
      p.t.ne.push_back(int64_t(ne));
    }
    p.t.type = r.Get<uint32_t>();
    const TypeInfo* info = FindType(p.t.type);
    if (!info) r.Fail("tensor '" + p.t.name + "' has unknown type " + std::to_string(p.t.type));
    if (p.t.ne[0] % info->block_values != 0)
      r.Fail("tensor '" + p.t.name + "' of " + info->name + " has rows of " + std::to_string(p.t.ne[0]) +
             " values, not a multiple of its blocks' " + std::to_string(info->block_values));
    p.t.n_bytes = size_t(numel / uint64_t(info->block_values)) * info->block_bytes;
    p.offset = r.Get<uint64_t>();
    if (index_.count(p.t.name)) r.Fail("tensor '" + p.t.name + "' appears twice");
    index_[p.t.name] = pending.size();
    pending.push_back(std::move(p));
  }
  uint64_t alignment = 32;
  if (const GgufValue* a = Find("general.alignment")) {
    if (a->type != GgufValue::kU32 || a->i == 0 || (a->i & (a->i - 1)) != 0)
      r.Fail("general.alignment must be a u32 power of two");
    alignment = uint64_t(a->i);
  }
  const uint64_t data_start = (r.pos() + alignment - 1) / alignment * alignment;
  if (data_start > size && n_tensors > 0) r.Fail("the tensor data would start past the end");
  for (Pending& p : pending) {
    if (p.offset % alignment != 0)
      r.Fail("tensor '" + p.t.name + "' at offset " + std::to_string(p.offset) + ", off the alignment of " +
             std::to_string(alignment));
    if (p.offset > size - data_start || p.t.n_bytes > size - data_start - p.offset)
      r.Fail("tensor '" + p.t.name + "' (" + std::to_string(p.t.n_bytes) + " bytes at offset " +
             std::to_string(p.offset) + ") runs past the end");
    p.t.data = data + data_start + p.offset;
    tensors_.push_back(std::move(p.t));
  }
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

std::string GgufFile::String(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v || v->type != GgufValue::kString) throw std::runtime_error(origin_ + ": no string metadata '" + key + "'");
  return v->s;
}

std::optional<int64_t> GgufFile::OptionalInt(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return std::nullopt;
  if (v->type == GgufValue::kString || v->type == GgufValue::kArray || v->type == GgufValue::kF32 ||
      v->type == GgufValue::kF64)
    throw std::runtime_error(origin_ + ": metadata '" + key + "' is not an integer");
  return v->i;
}

int64_t GgufFile::Int(const std::string& key) const {
  const std::optional<int64_t> v = OptionalInt(key);
  if (!v) throw std::runtime_error(origin_ + ": no integer metadata '" + key + "'");
  return *v;
}

double GgufFile::Float(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v || v->type == GgufValue::kString || v->type == GgufValue::kArray)
    throw std::runtime_error(origin_ + ": no numeric metadata '" + key + "'");
  return v->f;
}

const GgufTensor* GgufFile::Tensor(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

template <class T>
void Put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
void PutString(std::string& out, const std::string& s) {
  Put<uint64_t>(out, s.size());
  out += s;
}
void PutScalar(std::string& out, uint32_t type, double d, int64_t i, uint64_t u) {
  switch (type) {
    case GgufValue::kU8:
    case GgufValue::kBool: Put<uint8_t>(out, uint8_t(i)); break;
    case GgufValue::kI8: Put<int8_t>(out, int8_t(i)); break;
    case GgufValue::kU16: Put<uint16_t>(out, uint16_t(i)); break;
    case GgufValue::kI16: Put<int16_t>(out, int16_t(i)); break;
    case GgufValue::kU32: Put<uint32_t>(out, uint32_t(i)); break;
    case GgufValue::kI32: Put<int32_t>(out, int32_t(i)); break;
    case GgufValue::kU64: Put<uint64_t>(out, u); break;
    case GgufValue::kI64: Put<int64_t>(out, i); break;
    case GgufValue::kF32: Put<float>(out, float(d)); break;
    case GgufValue::kF64: Put<double>(out, d); break;
    default: throw std::invalid_argument("GgufBytes: value type " + std::to_string(type));
  }
}

}  // namespace

std::string GgufBytes(const std::vector<std::pair<std::string, GgufValue>>& metadata,
                      const std::vector<GgufTensorBytes>& tensors) {
  constexpr size_t kAlign = 32;
  std::string out;
  Put<uint32_t>(out, kMagic);
  Put<uint32_t>(out, 3);
  Put<uint64_t>(out, tensors.size());
  Put<uint64_t>(out, metadata.size());
  for (const auto& [key, v] : metadata) {
    PutString(out, key);
    Put<uint32_t>(out, v.type);
    if (v.type == GgufValue::kString) {
      PutString(out, v.s);
    } else if (v.type == GgufValue::kArray) {
      Put<uint32_t>(out, v.element);
      if (v.element == GgufValue::kString) {
        Put<uint64_t>(out, v.strings.size());
        for (const std::string& s : v.strings) PutString(out, s);
      } else {
        Put<uint64_t>(out, v.numbers.size());
        for (double d : v.numbers) PutScalar(out, v.element, d, int64_t(d), uint64_t(d));
      }
    } else {
      PutScalar(out, v.type, v.f, v.i, v.u);
    }
  }
  uint64_t offset = 0;
  for (const GgufTensorBytes& t : tensors) {
    PutString(out, t.name);
    Put<uint32_t>(out, uint32_t(t.ne.size()));
    for (int64_t d : t.ne) Put<uint64_t>(out, uint64_t(d));
    Put<uint32_t>(out, t.type);
    Put<uint64_t>(out, offset);
    offset += (t.bytes.size() + kAlign - 1) / kAlign * kAlign;
  }
  out.resize((out.size() + kAlign - 1) / kAlign * kAlign, '\0');
  for (const GgufTensorBytes& t : tensors) {
    out += t.bytes;
    out.resize((out.size() + kAlign - 1) / kAlign * kAlign, '\0');
  }
  return out;
}

}  // namespace swan
