#include "eval/attention_work.h"

#include <algorithm>
#include <stdexcept>

namespace swan {

int64_t KeysVisible(const Span& span, int64_t q) {
  if (span.full()) return q + 1;
  const int64_t window = std::min<int64_t>(q + 1, span.window);
  const int64_t hidden = q + 1 - window;  // keys before the window
  return window + std::min<int64_t>(span.sinks, hidden);
}

void AttentionWork::AddSequence(const AttentionPlan& plan, int64_t T, const std::vector<std::vector<uint8_t>>& routes) {
  for (size_t l = 0; l < plan.layers.size(); ++l) {
    const LayerPlan& layer = plan.layers[l];
    const bool routed = layer.kind == LayerKind::kRouted;
    if (routed && (l >= routes.size() || int64_t(routes[l].size()) != T))
      throw std::invalid_argument("AttentionWork: routed layer " + std::to_string(l) +
                                  " needs the route of every token");
    for (int64_t q = 0; q < T; ++q) {
      const bool full = layer.kind == LayerKind::kFull || (routed && routes[l][size_t(q)] != 0);
      if (layer.kind == LayerKind::kLinear) {
        // A query reads the state: P rows of head_dim, like P keys (and a
        // hybrid's window keys too).
        if (plan.linear_phi_dim <= 0) throw std::invalid_argument("AttentionWork: a linear plan must know its P");
        keys += double(plan.linear_phi_dim) + (layer.span.full() ? 0.0 : double(KeysVisible(layer.span, q)));
        continue;
      }
      if (layer.kind == LayerKind::kPerHead) {
        // The mean over KV heads: the full ones see every key.
        if (plan.n_kv_heads <= 0) throw std::invalid_argument("AttentionWork: a per-head plan must know its KV heads");
        const double f = double(layer.full_heads.size()) / plan.n_kv_heads;
        keys += f * double(q + 1) + (1.0 - f) * double(KeysVisible(layer.span, q));
        continue;
      }
      keys += double(full ? q + 1 : KeysVisible(layer.span, q));
      if (routed) {
        ++routed_pairs;
        routed_full += full;
      }
    }
    pairs += T;
  }
}

}  // namespace swan
