// The reference attention: plain loops, float64, an explicit mask.
// Every fast kernel is tested against this on random inputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention/attention.h"
#include "attention/kv_rows.h"

namespace swan {

void AttendReference(const AttentionArgs& args, float* out, float* lse, float* max_logit) {
  ValidateAttention(args);
  const AttentionShape& s = args.shape;
  const int64_t n_q = args.n_q, n_rows = args.kv.n_rows, d = s.head_dim;
  const int32_t group = s.n_heads / s.n_kv_heads;
  const double scale = args.scale != 0.0f ? args.scale : 1.0 / std::sqrt(double(d));

  // mask[i * n_rows + j]: query i sees key row j.  (n_q, n_rows)
  std::vector<char> mask(static_cast<size_t>(n_q * n_rows));
  for (int64_t i = 0; i < n_q; ++i)
    for (int64_t j = 0; j < n_rows; ++j) mask[size_t(i * n_rows + j)] = Sees(args.span, args.q_pos[i], args.kv.pos[j]);

  std::vector<double> logits(static_cast<size_t>(n_rows));  // (n_rows)
  std::vector<double> acc(static_cast<size_t>(d));          // (head_dim)
  for (int64_t i = 0; i < n_q; ++i) {
    for (int32_t h = 0; h < s.n_heads; ++h) {
      const int32_t kv_head = h / group;
      const float* q = args.q + (i * s.n_heads + h) * d;
      double key_max = -std::numeric_limits<double>::infinity();  // over the visible keys
      for (int64_t j = 0; j < n_rows; ++j) {
        if (!mask[size_t(i * n_rows + j)]) continue;
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += double(q[c]) * KvElement(args.kv, s, j, kv_head, c, true);
        logits[size_t(j)] = dot * scale;
        if (logits[size_t(j)] > key_max) key_max = logits[size_t(j)];
      }
      if (max_logit) max_logit[i * s.n_heads + h] = float(key_max);
      const double top = args.sink_logits ? std::max(key_max, double(args.sink_logits[h])) : key_max;
      double denom = args.sink_logits ? std::exp(double(args.sink_logits[h]) - top) : 0.0;
      for (auto& a : acc) a = 0;
      for (int64_t j = 0; j < n_rows; ++j) {
        if (!mask[size_t(i * n_rows + j)]) continue;
        const double p = std::exp(logits[size_t(j)] - top);
        denom += p;
        for (int64_t c = 0; c < d; ++c) acc[size_t(c)] += p * KvElement(args.kv, s, j, kv_head, c, false);
      }
      float* o = out + (i * s.n_heads + h) * d;
      for (int64_t c = 0; c < d; ++c) o[c] = denom > 0 ? float(acc[size_t(c)] / denom) : 0.0f;
      if (lse)
        lse[i * s.n_heads + h] = denom > 0 ? float(top + std::log(denom)) : -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace swan
