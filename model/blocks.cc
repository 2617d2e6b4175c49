#include "model/blocks.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/head_groups.h"
#include "attention/hedgehog.h"
#include "attention/linear_attention.h"
#include "attention/routed.h"
#include "model/cache_positions.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/router.h"
#include "util/scratch.h"

namespace swan {

namespace {

uint64_t Mix64(uint64_t x) {  // SplitMix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A uniform draw in [0, 1) that depends only on (seed, layer, pos): a token
// gets the same forced route however the sequence is chunked.
double RouteDraw(uint64_t seed, int32_t layer, int32_t pos) {
  const uint64_t r = Mix64(Mix64(seed ^ (uint64_t(uint32_t(layer)) << 32)) ^ uint64_t(uint32_t(pos)));
  return double(r >> 11) * (1.0 / 9007199254740992.0);  // 53 bits
}

}  // namespace

void RouteTokens(uint8_t* route_full, const float* xn, const int32_t* pos, int64_t n, int64_t hidden,
                 const LayerRoutes& routes) {
  if (routes.forced_full_ratio >= 0) {
    for (int64_t t = 0; t < n; ++t)
      route_full[t] = RouteDraw(routes.seed, routes.layer, pos[t]) < routes.forced_full_ratio;
  } else {
    if (!routes.router || int64_t(routes.router->weight.size()) != hidden)
      throw std::logic_error("RouteTokens: layer " + std::to_string(routes.layer) + " has no router of width " +
                             std::to_string(hidden));
    std::vector<float> logit(static_cast<size_t>(n));  // [n]
    RouterForward(logit.data(), xn, routes.router->weight.data(), &routes.router->bias, n, hidden);
    for (int64_t t = 0; t < n; ++t) route_full[t] = RoutesFull(logit[size_t(t)]);
  }
  if (routes.record) routes.record->insert(routes.record->end(), route_full, route_full + n);
}

LayerRoutes SessionLayerRoutes(const Session& session, int32_t layer, const RouterWeights* router) {
  LayerRoutes r;
  r.router = router;
  r.forced_full_ratio = session.routing.forced_full_ratio;
  r.seed = session.routing.seed;
  r.layer = layer;
  if (size_t(layer) < session.routing.record.size()) r.record = session.routing.record[size_t(layer)];
  return r;
}

void RequireRouters(const Session& session, const std::vector<const RouterWeights*>& routers,
                    const std::string& origin) {
  const double forced = session.routing.forced_full_ratio;
  if (forced > 1.0) throw std::invalid_argument("forced route ratio " + std::to_string(forced) + " is above 1");
  if (forced >= 0) return;
  for (size_t i = 0; i < session.plan.layers.size(); ++i) {
    const LayerPlan& l = session.plan.layers[i];
    if (l.kind != LayerKind::kRouted || (i < routers.size() && routers[i])) continue;
    const std::string file = std::filesystem::is_directory(origin) ? origin + "/model.safetensors" : origin;
    throw std::runtime_error(
        file + " has no router for layer " + std::to_string(i) + " (model.layers." + std::to_string(i) +
        ".self_attn.router.weight), which the plan '" + session.plan.spec + "' routes: run `swan train --init " +
        origin + " --attn routed:" + std::to_string(l.span.window) +
        "` to train one (or force a route ratio, e.g. swan bench --route-ratio R, to measure cost alone)");
  }
}

void AttentionBlock(float* residual, const float* xn, const int32_t* pos, int64_t n, const AttentionLayer& layer,
                    const BlockSizes& sizes) {
  AttentionBlockBatch(residual, xn, n, {AttentionRows{0, n, pos, layer}}, sizes);
}

namespace {

// RoPE, the cache write and attention for one sequence's rows.
//   q [n, n_heads, head_dim] (rotated in place), k [n, n_kv_heads, head_dim]
//   (rotated in place), v [n, n_kv_heads, head_dim], xn [n, hidden],
//   out [n, n_heads, head_dim]
// A linear layer: the feature maps of q and k, then linear attention over
// the state, which the n tokens join (positions must follow the state's).
// `window` (LoLCATs' hybrid; null for linear alone): the softmax attention
// over the layer's ring, which holds the n tokens' keys already.
void AttendLinear(float* out, const float* q, const float* k, const float* v, const AttentionArgs* window,
                  const AttentionRows& part, const BlockSizes& sizes) {
  const AttentionWeights& w = *part.layer.weights;
  const AttentionShape& h = sizes.heads;
  const int64_t n = part.n, F = w.feature_dim;
  if (F <= 0) throw std::logic_error("a linear layer without feature maps");
  LinearState& state = part.layer.cache->linear_state();
  std::vector<float> phi_q(size_t(n * h.n_heads * 2 * F));     // [n, n_heads, 2F]
  std::vector<float> phi_k(size_t(n * h.n_kv_heads * 2 * F));  // [n, n_kv_heads, 2F]
  HedgehogForward(phi_q.data(), q, w.fq_w.data(), w.fq_b.data(), n, {h.n_heads, h.head_dim, int32_t(F)});
  HedgehogForward(phi_k.data(), k, w.fk_w.data(), w.fk_b.data(), n, {h.n_kv_heads, h.head_dim, int32_t(F)});
  const LinearAttentionShape shape{h.n_heads, h.n_kv_heads, h.head_dim, int32_t(2 * F)};
  if (!window) return LinearAttend(out, nullptr, state, phi_q.data(), phi_k.data(), v, n, shape);
  // LoLCATs' hybrid: softmax over the window's ring, then the older keys.
  std::vector<float> window_out(size_t(n * h.n_heads * h.head_dim));  // [n, n_heads, head_dim]
  std::vector<float> window_lse(size_t(n * h.n_heads));               // [n, n_heads]
  std::vector<float> window_max(size_t(n * h.n_heads));               // [n, n_heads]
  Attend(*window, window_out.data(), window_lse.data(), window_max.data());
  if (int64_t(w.window_factor.size()) != h.n_heads) throw std::logic_error("a linear + window layer without factors");
  LinearWindowAttend(out, window_out.data(), window_lse.data(), window_max.data(), w.window_factor.data(), state,
                     phi_q.data(), phi_k.data(), v, n, shape, part.layer.span.window);
}

void AttendRows(float* out, float* q, float* k, const float* v, const float* xn, const AttentionRows& part,
                const BlockSizes& sizes) {
  const AttentionLayer& layer = part.layer;
  const AttentionShape& h = sizes.heads;
  const int64_t n = part.n;
  // Cache positions (StreamingLLM) rotate the queries a second way for the sinks.
  const bool cache_positions = layer.position_mode == PositionMode::kCache && layer.span.sinks > 0;
  std::vector<float> q_unrotated;  // [n, n_heads, head_dim] before RoPE
  if (cache_positions) q_unrotated.assign(q, q + n * h.n_heads * h.head_dim);
  layer.rope->Apply(q, h.n_heads, k, h.n_kv_heads, part.pos, n);
  if (layer.cache->linear() && part.pos[0] != layer.cache->linear_state().tokens)  // before any write
    throw std::invalid_argument("a linear layer's state holds " + std::to_string(layer.cache->linear_state().tokens) +
                                " tokens; the next must be at that position, not " + std::to_string(part.pos[0]));
  if (layer.cache->linear() && layer.span.full()) return AttendLinear(out, q, k, v, nullptr, part, sizes);
  layer.cache->Write(k, v, part.pos, n);

  AttentionArgs args;
  args.shape = h;
  args.q = q;
  args.q_pos = part.pos;
  args.n_q = n;
  args.span = layer.span;
  args.scale = layer.scale;
  if (layer.cache->per_head()) {
    // Each head group against its own store (attention/head_groups.h).
    AttendHeadGroups(args, layer.cache->Groups(), out);
    return;
  }
  args.kv = layer.cache->View();
  if (layer.cache->linear()) {  // linear + window
    AttendLinear(out, q, k, v, &args, part, sizes);
  } else if (layer.routes) {
    std::vector<uint8_t> route_full(static_cast<size_t>(n));  // [n] 1 = full attention
    RouteTokens(route_full.data(), xn, part.pos, n, sizes.hidden, *layer.routes);
    AttendRouted(args, route_full.data(), out);
  } else if (cache_positions) {
    AttendCachePositions(out, args, q_unrotated.data(), *layer.rope);
  } else {
    Attend(args, out);
  }
}

}  // namespace

namespace {

// The blocks' temporaries, one set per thread (the one that runs the forward pass).
struct BlockScratch {
  ScratchFloats q, k, v, out;  // attention: [n, n_heads or n_kv_heads, head_dim]
  ScratchFloats gate, up;      // MLP: [rows, intermediate]
};

BlockScratch& ThreadBlockScratch() {
  thread_local BlockScratch scratch;
  return scratch;
}

}  // namespace

void ReleaseBlockScratch() { ThreadBlockScratch() = BlockScratch{}; }

void AttentionBlockBatch(float* residual, const float* xn, int64_t n, const std::vector<AttentionRows>& parts,
                         const BlockSizes& sizes) {
  if (parts.empty()) throw std::logic_error("AttentionBlockBatch: no sequences");
  const AttentionLayer& shared = parts[0].layer;
  int64_t covered = 0;
  for (const AttentionRows& part : parts) {
    const AttentionLayer& layer = part.layer;
    if (part.first != covered || part.n <= 0)
      throw std::logic_error("AttentionBlockBatch: the parts do not cover the rows in order");
    covered += part.n;
    if (layer.weights != shared.weights || layer.scale != shared.scale || layer.qk_norm_eps != shared.qk_norm_eps)
      throw std::logic_error("AttentionBlockBatch: the parts run different layers");
    // A cache that keeps every key under a window span is a routed layer's
    // (LayerPlan::cache_span): running it without routes would silently give
    // every token the window.
    if (!layer.routes && layer.cache->span().full() && !layer.span.full())
      throw std::invalid_argument("a routed layer (" + layer.span.ToString() +
                                  " or full) needs routes, and none were given");
  }
  if (covered != n) throw std::logic_error("AttentionBlockBatch: the parts do not cover the rows");
  const AttentionShape& h = sizes.heads;
  const int64_t q_dim = int64_t(h.n_heads) * h.head_dim;
  const int64_t kv_dim = int64_t(h.n_kv_heads) * h.head_dim;
  BlockScratch& scratch = ThreadBlockScratch();
  float* q = scratch.q.Get(size_t(n * q_dim));      // [n, n_heads, head_dim]
  float* k = scratch.k.Get(size_t(n * kv_dim));     // [n, n_kv_heads, head_dim]
  float* v = scratch.v.Get(size_t(n * kv_dim));     // [n, n_kv_heads, head_dim]
  float* out = scratch.out.Get(size_t(n * q_dim));  // [n, n_heads, head_dim]
  std::fill_n(out, n * q_dim, 0.0f);                // zero, as a fresh vector was
  const AttentionWeights& w = *shared.weights;
  LinearSameInput(xn, n, {{q, &w.q}, {k, &w.k}, {v, &w.v}});
  if (!w.q_bias.empty()) AddBias(q, w.q_bias.data(), n, q_dim);
  if (!w.k_bias.empty()) AddBias(k, w.k_bias.data(), n, kv_dim);
  if (!w.v_bias.empty()) AddBias(v, w.v_bias.data(), n, kv_dim);
  // QK-norm: each head's vector is one RMSNorm row.
  if (!w.q_norm.empty()) RmsNorm(q, q, w.q_norm.data(), shared.qk_norm_eps, n * h.n_heads, h.head_dim);
  if (!w.k_norm.empty()) RmsNorm(k, k, w.k_norm.data(), shared.qk_norm_eps, n * h.n_kv_heads, h.head_dim);
  for (const AttentionRows& part : parts)
    AttendRows(out + part.first * q_dim, q + part.first * q_dim, k + part.first * kv_dim, v + part.first * kv_dim,
               xn + part.first * sizes.hidden, part, sizes);
  Linear(residual, out, n, w.o, /*accumulate=*/true);
}

void MlpBlock(float* residual, const float* xn, int64_t n, const MlpWeights& w, const BlockSizes& sizes,
              MlpActivation activation) {
  const int64_t inter = sizes.intermediate;
  // Rows are independent here: a 512-token prefill chunk goes through in
  // two parts, which halves the two [rows, intermediate] temporaries. With
  // oneDNN's float32 GEMM (f16 weights on AVX2), whole chunks left its
  // worker thread's heap fragmented: Gemma 3 f16 peaked 20 MiB higher.
  // Smaller parts cost prefill speed (f16 weights are converted once per
  // product): 128 rows, 5-10%.
  constexpr int64_t kMlpRows = 256;
  const int64_t part_rows = std::min(n, kMlpRows);
  BlockScratch& scratch = ThreadBlockScratch();
  float* gate = scratch.gate.Get(size_t(part_rows * inter));  // [part_rows, intermediate]
  float* up = scratch.up.Get(size_t(part_rows * inter));      // [part_rows, intermediate]
  for (int64_t r0 = 0; r0 < n; r0 += part_rows) {
    const int64_t rows = std::min(part_rows, n - r0);
    LinearSameInput(xn + r0 * sizes.hidden, rows, {{gate, &w.gate}, {up, &w.up}});
    if (activation == MlpActivation::kSilu)
      SiluMul(gate, gate, up, rows * inter);
    else
      GeluTanhMul(gate, gate, up, rows * inter);
    Linear(residual + r0 * sizes.hidden, gate, rows, w.down, /*accumulate=*/true);
  }
}

std::vector<float> GemmaNormWeight(std::vector<float> weight) {
  for (float& x : weight) x = 1.0f + x;
  return weight;
}

StepRows ConcatSteps(const std::vector<SequenceStep>& steps) {
  StepRows rows;
  rows.first.push_back(0);
  for (const SequenceStep& step : steps) {
    const Batch& b = step.batch;
    const int64_t first = rows.n();
    rows.tokens.insert(rows.tokens.end(), b.tokens, b.tokens + b.n);
    rows.first.push_back(rows.n());
    for (int64_t r = b.all_logits ? first : rows.n() - 1; r < rows.n(); ++r) rows.logit_rows.push_back(r);
  }
  return rows;
}

bool StepsFitChunks(const std::vector<SequenceStep>& steps) {
  for (const SequenceStep& step : steps)
    if (step.batch.n > step.session->cache.options().max_chunk) return false;
  return true;
}

std::vector<AttentionRows> StepAttention(const std::vector<SequenceStep>& steps, const StepRows& rows, int32_t layer,
                                         const AttentionWeights& weights, const RouterWeights* router,
                                         std::vector<LayerRoutes>* routes) {
  std::vector<AttentionRows> parts(steps.size());  // [n_steps]
  if (routes) routes->resize(steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    Session& session = *steps[s].session;
    const LayerPlan& plan = session.plan.layers[size_t(layer)];
    AttentionRows& part = parts[s];
    part.first = rows.first[s];
    part.n = steps[s].batch.n;
    part.pos = steps[s].batch.pos;
    part.layer.weights = &weights;
    part.layer.rope = &session.ropes[size_t(layer)];
    part.layer.span = plan.span;
    part.layer.cache = &session.cache.layer(layer);
    part.layer.position_mode = plan.position_mode;
    if (routes && plan.kind == LayerKind::kRouted) {
      (*routes)[s] = SessionLayerRoutes(session, layer, router);
      part.layer.routes = &(*routes)[s];
    }
  }
  return parts;
}

void OutputLogits(float* logits, const float* x, const std::vector<int64_t>& rows, const float* norm, float eps,
                  const LinearWeight& head, int64_t hidden) {
  const int64_t n = int64_t(rows.size());
  std::vector<float> xn(size_t(n * hidden));  // [n, hidden] the wanted rows, then normed
  for (int64_t i = 0; i < n; ++i) std::copy_n(x + rows[size_t(i)] * hidden, hidden, xn.data() + i * hidden);
  RmsNorm(xn.data(), xn.data(), norm, eps, n, hidden);
  Linear(logits, xn.data(), n, head);
}

void ForwardInChunks(float* logits, const Batch& batch, int64_t max_chunk, int64_t vocab,
                     const std::function<void(float* logits, const Batch& part)>& chunk_forward) {
  for (int64_t start = 0; start < batch.n; start += max_chunk) {
    Batch part = batch;
    part.tokens = batch.tokens + start;
    part.pos = batch.pos + start;
    part.n = std::min(max_chunk, batch.n - start);
    const bool last = start + part.n == batch.n;
    if (!batch.all_logits) {
      part.all_logits = false;
      if (!last) {
        std::vector<float> unused(static_cast<size_t>(vocab));  // [1, vocab]
        chunk_forward(unused.data(), part);
        continue;
      }
    }
    chunk_forward(batch.all_logits ? logits + start * vocab : logits, part);
  }
}

void ForwardByPasses(float* logits, const Batch& batch, Session& session, int64_t vocab, const StepsPass& pass) {
  ForwardInChunks(logits, batch, session.cache.options().max_chunk, vocab, [&](float* part_logits, const Batch& part) {
    pass(part_logits, {SequenceStep{part, &session}});
  });
}

void ForwardBatchByPasses(const LanguageModel& model, float* logits, const std::vector<SequenceStep>& steps,
                          const StepsPass& pass) {
  if (!StepsFitChunks(steps))
    model.LanguageModel::ForwardBatch(logits, steps);
  else if (!steps.empty())
    pass(logits, steps);
}

}  // namespace swan
