#include "model/cache_positions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace swan {

void AttendCachePositions(float* out, const AttentionArgs& args, const float* q_unrotated, const Rope& rope) {
  const Span span = args.span;
  if (span.window <= 0 || span.sinks <= 0)
    throw std::invalid_argument("cache positions need a window layer with sinks, got " + span.ToString());
  const AttentionShape& s = args.shape;
  const int64_t n = args.n_q, heads = s.n_heads, d = s.head_dim;

  // The window part: absolute rotation, no sinks.
  AttentionArgs window = args;
  window.span = Span{span.window, 0};
  std::vector<float> lse_window(static_cast<size_t>(n * heads));  // [n_q, n_heads]
  Attend(window, out, lse_window.data());

  // The sinks the window no longer covers, seen from min(q, S + W - 1).
  std::vector<float> q_sink(q_unrotated, q_unrotated + n * heads * d);  // [n_q, n_heads, head_dim]
  std::vector<int32_t> rope_pos(static_cast<size_t>(n)), visible_until(static_cast<size_t>(n));  // [n_q]
  for (int64_t i = 0; i < n; ++i) {
    rope_pos[size_t(i)] = std::min<int32_t>(args.q_pos[i], span.sinks + span.window - 1);
    visible_until[size_t(i)] = args.q_pos[i] - span.window;  // sinks j <= q - W
  }
  rope.Apply(q_sink.data(), rope_pos.data(), n, s.n_heads);
  AttentionArgs sinks = args;
  sinks.q = q_sink.data();
  sinks.q_pos = visible_until.data();
  sinks.kv.n_rows = std::min<int64_t>(span.sinks, args.kv.n_rows);
  sinks.span = Span{};
  sinks.sink_logits = nullptr;                                       // learned sinks count once, in the window part
  std::vector<float> out_sinks(static_cast<size_t>(n * heads * d));  // [n_q, n_heads, head_dim]
  std::vector<float> lse_sinks(static_cast<size_t>(n * heads));      // [n_q, n_heads]
  Attend(sinks, out_sinks.data(), lse_sinks.data());

  // Merge the two softmax parts.
  for (int64_t r = 0; r < n * heads; ++r) {
    const float a = lse_window[size_t(r)], b = lse_sinks[size_t(r)];
    if (b == -std::numeric_limits<float>::infinity()) continue;
    const float m = std::max(a, b);
    const float wa = std::exp(a - m), wb = std::exp(b - m);
    const float inv = 1.0f / (wa + wb);
    float* o = out + r * d;
    const float* o2 = &out_sinks[size_t(r * d)];
    for (int64_t c = 0; c < d; ++c) o[c] = (wa * o[c] + wb * o2[c]) * inv;
  }
}

}  // namespace swan
