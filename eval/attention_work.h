// How many keys a plan lets each query see: the attention work that a plan
// really costs (a window layer's O(W) against a full layer's O(position)),
// counted per token-layer pair from the spans and, on routed layers, from
// the route each token took.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/span.h"
#include "model/plan.h"

namespace swan {

// Keys a query at position q (0-based) sees under `span`: the window (the
// query included) plus the sinks that lie before it (docs/design.md §1).
int64_t KeysVisible(const Span& span, int64_t q);

struct AttentionWork {
  double keys = 0;                            // keys visited, summed over token-layer pairs
  int64_t pairs = 0;                          // token-layer pairs
  int64_t routed_pairs = 0, routed_full = 0;  // on routed layers: pairs, of which to full

  double KeysPerQuery() const { return pairs ? keys / double(pairs) : 0.0; }
  double RoutedFullRatio() const { return routed_pairs ? double(routed_full) / double(routed_pairs) : 0.0; }

  // One sequence of T tokens at positions 0..T-1 under `plan`. routes[l]
  // holds routed layer l's route of every token (1 = full attention);
  // empty for the other layers (routes may be empty when nothing routes).
  void AddSequence(const AttentionPlan& plan, int64_t T, const std::vector<std::vector<uint8_t>>& routes);
};

}  // namespace swan
