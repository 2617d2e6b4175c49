// What the GGUF tests share: a file taken apart to be changed and written
// again, and a model's logits to compare.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "model/gguf.h"
#include "model/model.h"

namespace swan::test {

// Logits of ids 3, 4, ... at positions 0.. under `plan` (the model's own when empty).
inline std::vector<float> Logits(const LanguageModel& model, int64_t n, const std::string& plan = "") {
  std::vector<int32_t> ids(static_cast<size_t>(n)), pos(static_cast<size_t>(n));  // [n]
  std::iota(ids.begin(), ids.end(), 3);
  std::iota(pos.begin(), pos.end(), 0);
  std::vector<float> logits(size_t(n * model.config().vocab_size));  // [n, vocab]
  auto session = model.NewSession(model.ResolvePlan(plan));
  model.Forward(logits.data(), Batch{ids.data(), pos.data(), n}, *session);
  return logits;
}

inline double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
  return d;
}

// A file's metadata and tensors as GgufBytes takes them: to change and write again.
struct GgufParts {
  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::vector<GgufTensorBytes> tensors;
  std::string Bytes() const { return GgufBytes(metadata, tensors); }
};
inline GgufParts PartsOf(const GgufFile& file) {
  GgufParts parts{{file.metadata().begin(), file.metadata().end()}, {}};
  for (const GgufTensor& t : file.tensors())
    parts.tensors.push_back({t.name, t.type, t.ne, std::string(reinterpret_cast<const char*>(t.data), t.n_bytes)});
  return parts;
}

}  // namespace swan::test
