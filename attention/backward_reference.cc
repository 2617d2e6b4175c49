// The reference backward: float64 loops over an explicit visibility mask,
// the formulas of backward.h written out once.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "attention/backward.h"
#include "attention/backward_plan.h"
#include "attention/kv_rows.h"

namespace swan {

void ValidateBackward(const AttentionArgs& args, const AttentionSaved& saved, const AttentionGrads& grads) {
  ValidateAttention(args);
  if (args.kv.type != KvType::kF32) throw std::invalid_argument("attention backward: K and V must be float32");
  if (args.kv.row_stride != 0 && args.kv.row_stride != int64_t(args.shape.n_kv_heads) * args.shape.head_dim)
    throw std::invalid_argument("attention backward: K and V rows must be packed");
  if (!saved.out || !saved.lse || !saved.d_out)
    throw std::invalid_argument("attention backward: out, lse and d_out are required");
  if (!grads.dq || !grads.dk || !grads.dv)
    throw std::invalid_argument("attention backward: dq, dk and dv are required");
}

void AttendBackwardReference(const AttentionArgs& args, const AttentionSaved& saved, const AttentionGrads& grads) {
  ValidateBackward(args, saved, grads);
  const AttentionShape& s = args.shape;
  const int64_t n_q = args.n_q, n_rows = args.kv.n_rows, d = s.head_dim;
  const int32_t group = s.n_heads / s.n_kv_heads;
  const double scale = args.scale != 0.0f ? args.scale : 1.0 / std::sqrt(double(d));
  const float* k = static_cast<const float*>(args.kv.k);
  const float* v = static_cast<const float*>(args.kv.v);
  const int64_t q_size = n_q * s.n_heads * d, kv_size = n_rows * s.n_kv_heads * d;

  std::vector<double> dq(static_cast<size_t>(q_size), 0.0);   // [n_q, n_heads, d]
  std::vector<double> dk(static_cast<size_t>(kv_size), 0.0);  // [n_rows, n_kv_heads, d]
  std::vector<double> dv(static_cast<size_t>(kv_size), 0.0);  // [n_rows, n_kv_heads, d]
  for (int64_t i = 0; i < n_q; ++i) {
    for (int32_t h = 0; h < s.n_heads; ++h) {
      const int64_t row = i * s.n_heads + h;
      const int32_t kvh = h / group;
      const float* q = args.q + row * d;
      const float* o = saved.out + row * d;
      const float* go = saved.d_out + row * d;
      double D = 0;
      for (int64_t c = 0; c < d; ++c) D += double(go[c]) * o[c];
      const double lse = saved.lse[row];
      if (args.sink_logits && grads.d_sink_logits)
        grads.d_sink_logits[h] += float(-std::exp(double(args.sink_logits[h]) - lse) * D);
      for (int64_t j = 0; j < n_rows; ++j) {
        if (!Sees(args.span, args.q_pos[i], args.kv.pos[j])) continue;
        const float* kj = k + (j * s.n_kv_heads + kvh) * d;
        const float* vj = v + (j * s.n_kv_heads + kvh) * d;
        double dot = 0, dp = 0;
        for (int64_t c = 0; c < d; ++c) {
          dot += double(q[c]) * kj[c];
          dp += double(go[c]) * vj[c];
        }
        const double p = std::exp(dot * scale - lse);
        const double ds = p * (dp - D);
        double* dkj = dk.data() + (j * s.n_kv_heads + kvh) * d;
        double* dvj = dv.data() + (j * s.n_kv_heads + kvh) * d;
        for (int64_t c = 0; c < d; ++c) {
          dvj[c] += p * go[c];
          dkj[c] += scale * ds * q[c];
          dq[size_t(row * d + c)] += scale * ds * kj[c];
        }
      }
    }
  }
  auto store = [&](float* dst, const std::vector<double>& src) {
    for (size_t x = 0; x < src.size(); ++x) dst[x] = float(grads.accumulate ? dst[x] + src[x] : src[x]);
  };
  store(grads.dq, dq);
  store(grads.dk, dk);
  store(grads.dv, dv);
}

}  // namespace swan
