#include "attention/routed.h"

#include <cstring>
#include <stdexcept>
#include <vector>

namespace swan {

void AttendRouted(const AttentionArgs& args, const uint8_t* route_full, float* out, float* lse) {
  ValidateAttention(args);
  if (args.n_q > 0 && !route_full) throw std::invalid_argument("attention: routes are null");
  const int64_t row = int64_t(args.shape.n_heads) * args.shape.head_dim;  // floats per query
  for (int branch = 0; branch < 2; ++branch) {
    const bool full = branch == 1;
    std::vector<int64_t> index;  // [n_branch] query indices routed to this branch
    for (int64_t i = 0; i < args.n_q; ++i)
      if ((route_full[i] != 0) == full) index.push_back(i);
    if (index.empty()) continue;
    const int64_t n = int64_t(index.size());
    std::vector<float> q(static_cast<size_t>(n * row));                 // [n, n_heads, head_dim]
    std::vector<int32_t> pos(static_cast<size_t>(n));                   // [n]
    std::vector<float> o(static_cast<size_t>(n * row));                 // [n, n_heads, head_dim]
    std::vector<float> l(static_cast<size_t>(n * args.shape.n_heads));  // [n, n_heads]
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(&q[size_t(j * row)], args.q + index[size_t(j)] * row, size_t(row) * sizeof(float));
      pos[size_t(j)] = args.q_pos[index[size_t(j)]];
    }
    AttentionArgs part = args;
    part.q = q.data();
    part.q_pos = pos.data();
    part.n_q = n;
    if (full) part.span = Span{};
    Attend(part, o.data(), l.data());
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = index[size_t(j)];
      std::memcpy(out + i * row, &o[size_t(j * row)], size_t(row) * sizeof(float));
      if (lse)
        std::memcpy(lse + i * args.shape.n_heads, &l[size_t(j * args.shape.n_heads)],
                    size_t(args.shape.n_heads) * sizeof(float));
    }
  }
}

}  // namespace swan
