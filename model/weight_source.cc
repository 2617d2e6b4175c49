#include "model/weight_source.h"

#include <cstring>
#include <functional>
#include <stdexcept>
#include <string_view>

#include "util/bf16.h"

namespace swan {

std::vector<float> CheckpointWeights::F32(const std::string& name, const std::vector<int64_t>& shape) const {
  read_.insert(name);
  return store_.ReadF32(name, shape);
}

void CheckpointWeights::RequireAllUsed(bool tied_embeddings, const std::string& origin) const {
  std::vector<std::string> unused;
  for (const std::string& name : store_.Names()) {
    const bool buffer = std::string_view(name).ends_with("rotary_emb.inv_freq");
    const bool tied_head = tied_embeddings && name == "lm_head.weight";
    if (!read_.count(name) && !buffer && !tied_head) unused.push_back(name);
  }
  if (unused.empty()) return;
  std::string list;
  for (size_t i = 0; i < unused.size() && i < 3; ++i) list += (i ? ", " : "") + unused[i];
  if (unused.size() > 3) list += ", ...";
  throw std::runtime_error(origin + ": the checkpoint holds " + std::to_string(unused.size()) +
                           " tensors that config.json's shape does not use (" + list +
                           "): the config and the weights are of different models");
}

namespace {

bool Aligned(const void* p, size_t to) { return reinterpret_cast<uintptr_t>(p) % to == 0; }

void RequireShape(const TensorInfo& t, const std::vector<int64_t>& shape) {
  if (t.shape != shape)
    throw std::runtime_error(t.file + ": tensor '" + t.name + "' has shape " + ShapeToString(t.shape) + ", expected " +
                             ShapeToString(shape));
}

}  // namespace

WeightType CheckpointWeights::LinearType(const std::string& name) const {
  const std::string& dtype = store_.Info(name).dtype;
  return dtype == "BF16" ? WeightType::kBF16 : dtype == "F16" ? WeightType::kF16 : WeightType::kF32;
}

LinearWeight ConvertedWeights::Linear(const std::string& name, int64_t out, int64_t in) const {
  LinearWeight stored = stored_.Linear(name, out, in);
  if (stored.type() == type_ || !RowFits(type_, in)) return stored;
  LinearWeight converted =
      IsBlockQuantized(type_) && stored.f32()  // quantized from where it lies (a mapped checkpoint)
          ? LinearWeight::Quantized(stored.f32(), out, in, type_)
          : LinearWeight(stored.ToF32(), out, in, type_);
  stored = LinearWeight();
  // The stored bytes are not read again: a mapping's pages leave the
  // resident set, so the peak holds one copy of the weights, not two.
  stored_.Evict(name);
  return converted;
}

LinearWeight CheckpointWeights::Linear(const std::string& name, int64_t out, int64_t in) const {
  read_.insert(name);
  const TensorInfo& t = store_.Info(name);
  // F32, BF16 and F16 are used where they lie in the mapping; a tensor off
  // its alignment is copied (half-width ones keep their type).
  const WeightType type = LinearType(name);
  if (type == WeightType::kF32 && t.dtype != "F32") return LinearWeight(store_.ReadF32(name, {out, in}), out, in);
  RequireShape(t, {out, in});
  if (!Aligned(t.data, type == WeightType::kF32 ? alignof(float) : alignof(uint16_t))) {
    if (type == WeightType::kF32) return LinearWeight(store_.ReadF32(name, {out, in}), out, in);
    std::vector<uint16_t> bits(static_cast<size_t>(out * in));  // [out, in] bf16 or f16
    std::memcpy(bits.data(), t.data, bits.size() * sizeof(uint16_t));
    return LinearWeight(std::move(bits), out, in, type);
  }
  return LinearWeight::Borrow(store_.Owner(name), t.data, type, out, in);
}

LinearWeight HeadWeight(const WeightSource& w, bool tied, const LinearWeight& embed, int64_t vocab, int64_t hidden) {
  return tied ? embed : w.Linear("lm_head.weight", vocab, hidden);
}

namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform on [-a, a] with a = 0.02 * sqrt(3): standard deviation 0.02.
void FillUniform(float* out, int64_t n, uint64_t seed) {
  const float a = 0.02f * 1.7320508f;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = SplitMix64(seed ^ (uint64_t(i) * 0xd1342543de82ef95ull));
    out[i] = (float(r >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * a;
  }
}

}  // namespace

std::vector<float> RandomWeights::F32(const std::string& name, const std::vector<int64_t>& shape) const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n), 1.0f);  // [numel]
  if (name.find("norm") == std::string::npos) FillUniform(out.data(), n, seed_ ^ std::hash<std::string>{}(name));
  return out;
}

LinearWeight RandomWeights::Linear(const std::string& name, int64_t out, int64_t in) const {
  return LinearWeight(F32(name, {out, in}), out, in, linear_type_);
}

}  // namespace swan
