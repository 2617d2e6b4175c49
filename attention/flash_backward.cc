// The fast attention backward (see backward.h for the formulas).
//
// Pass 1, one task per (KV head, key block): the block's K and V are
// transposed once (KT, VT [head_dim][kBlockKeys]); for every query tile that
// sees the block, scores S [rows][keys] and dP = dO V^T come out query-major
// with vectors along the keys, then dV += P^T dO and dK += dS^T Q. Each
// task owns its rows of dK and dV, so no two threads write the same row.
// Pass 2, one task per (KV head, query tile), as the forward: scores
// key-major [keys][rows], then dQ += dS K. P is recomputed in both passes
// from the forward's log-sum-exp and never stored.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "attention/attention.h"
#include "attention/backward.h"
#include "attention/backward_plan.h"
#include "attention/block_visibility.h"
#include "attention/softmax_state.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/flash_backward.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "attention/tile_kernels-inl.h"

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

struct BackwardScratch {
  std::vector<float> a, b, c, d, e, f, g;
  std::vector<int32_t> row_pos;
};

static float* Sized(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Rows of the tile: row r = (query q_begin + r / group, head kv_head*group + r % group).
// Copies q and d_out rows into [rows][dim_padded] (zero padded), and lse, D.
static void GatherRows(const BackwardPlan& plan, int32_t kv_head, int64_t q_begin, int64_t rows, int64_t dim_padded,
                       float* q_rows, float* go_rows, float* lse, float* D, int32_t* row_pos) {
  const AttentionArgs& a = *plan.args;
  const int64_t d = a.shape.head_dim;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = q_begin + r / plan.group;
    const int64_t row = i * a.shape.n_heads + int64_t(kv_head) * plan.group + r % plan.group;
    std::memcpy(q_rows + r * dim_padded, a.q + row * d, size_t(d) * sizeof(float));
    std::memcpy(go_rows + r * dim_padded, plan.saved->d_out + row * d, size_t(d) * sizeof(float));
    std::fill(q_rows + r * dim_padded + d, q_rows + (r + 1) * dim_padded, 0.0f);
    std::fill(go_rows + r * dim_padded + d, go_rows + (r + 1) * dim_padded, 0.0f);
    lse[r] = plan.saved->lse[row];
    D[r] = plan.D[size_t(row)];
    row_pos[r] = a.q_pos[i];
  }
}

// Pass 1: dK and dV of one key block of one KV head.
void BackwardKeyBlock(const BackwardPlan& plan, int64_t task) {
  const AttentionArgs& a = *plan.args;
  const AttentionShape& shape = a.shape;
  const int64_t n_blocks = int64_t(plan.blocks.size());
  const int32_t kv_head = int32_t(task / n_blocks);
  const int64_t block = task % n_blocks;
  const int64_t d = shape.head_dim;
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t dim_padded = (d + L - 1) / L * L;
  const int64_t rows_max = plan.tile_queries * plan.group;
  const int64_t j0 = block * kBlockKeys;
  const int64_t n_keys = std::min(kBlockKeys, a.kv.n_rows - j0);
  const int64_t kv_stride = int64_t(shape.n_kv_heads) * d;
  const float* k = static_cast<const float*>(a.kv.k);
  const float* v = static_cast<const float*>(a.kv.v);

  static thread_local BackwardScratch s;
  float* kt = Sized(s.a, size_t(d * kBlockKeys));              // [d][kBlockKeys]
  float* vt = Sized(s.b, size_t(d * kBlockKeys));              // [d][kBlockKeys]
  float* dk = Sized(s.c, size_t(kBlockKeys * dim_padded));     // [keys][dim_padded]
  float* dv = Sized(s.d, size_t(kBlockKeys * dim_padded));     // [keys][dim_padded]
  float* q_rows = Sized(s.e, size_t(rows_max * dim_padded));   // [rows][dim_padded]
  float* go_rows = Sized(s.f, size_t(rows_max * dim_padded));  // [rows][dim_padded]
  float* work = Sized(s.g, size_t(2 * rows_max * kBlockKeys + 2 * rows_max));
  float* p = work;                           // [rows][kBlockKeys] probabilities
  float* ds = work + rows_max * kBlockKeys;  // [rows][kBlockKeys] dP, then dS
  float* lse = ds + rows_max * kBlockKeys;   // [rows]
  float* D = lse + rows_max;                 // [rows]
  if (s.row_pos.size() < size_t(rows_max)) s.row_pos.resize(size_t(rows_max));
  int32_t* row_pos = s.row_pos.data();  // [rows]

  std::fill_n(kt, d * kBlockKeys, 0.0f);
  std::fill_n(vt, d * kBlockKeys, 0.0f);
  for (int64_t j = 0; j < n_keys; ++j)
    for (int64_t c = 0; c < d; ++c) {
      kt[c * kBlockKeys + j] = k[(j0 + j) * kv_stride + int64_t(kv_head) * d + c];
      vt[c * kBlockKeys + j] = v[(j0 + j) * kv_stride + int64_t(kv_head) * d + c];
    }
  std::fill_n(dk, kBlockKeys * dim_padded, 0.0f);
  std::fill_n(dv, kBlockKeys * dim_padded, 0.0f);
  const int32_t* k_pos = a.kv.pos + j0;
  const auto vscale = hn::Set(df, plan.scale);

  for (size_t tile = 0; tile < plan.tiles.size(); ++tile) {
    const Visibility vis = ClassifyBlock(a.span, plan.blocks[size_t(block)], plan.tiles[tile]).span;
    if (vis == Visibility::kNone) continue;
    const int64_t q_begin = int64_t(tile) * plan.tile_queries;
    const int64_t rows = (std::min(a.n_q, q_begin + plan.tile_queries) - q_begin) * plan.group;
    GatherRows(plan, kv_head, q_begin, rows, dim_padded, q_rows, go_rows, lse, D, row_pos);
    // S[r][j] = q_r . k_j and dP[r][j] = dO_r . v_j, vectors along keys.
    ScoreBlock(q_rows, dim_padded, d, kt, kBlockKeys, rows, p);
    ScoreBlock(go_rows, dim_padded, d, vt, kBlockKeys, rows, ds);
    for (int64_t r = 0; r < rows; ++r) {
      const auto vlse = hn::Set(df, lse[r]);
      const auto vD = hn::Set(df, D[r]);
      float* pr = p + r * kBlockKeys;
      float* dsr = ds + r * kBlockKeys;
      for (int64_t j = 0; j < kBlockKeys; j += L) {
        const auto prob = hn::Exp(df, hn::MulSub(hn::LoadU(df, pr + j), vscale, vlse));
        hn::StoreU(prob, df, pr + j);
        hn::StoreU(hn::Mul(prob, hn::Sub(hn::LoadU(df, dsr + j), vD)), df, dsr + j);
      }
      const bool masked = vis == Visibility::kPartial;
      for (int64_t j = 0; j < kBlockKeys; ++j) {
        if (j < n_keys && (!masked || Sees(a.span, row_pos[r], k_pos[j]))) continue;
        pr[j] = 0.0f;
        dsr[j] = 0.0f;
      }
    }
    // dV[j] += sum_r P[r][j] dO[r];  dK[j] += sum_r dS[r][j] q[r].
    AccumulateAllRows(p, kBlockKeys, go_rows, dim_padded, rows, n_keys, dv);
    AccumulateAllRows(ds, kBlockKeys, q_rows, dim_padded, rows, n_keys, dk);
  }

  const bool add = plan.grads->accumulate;
  for (int64_t j = 0; j < n_keys; ++j) {
    float* dk_out = plan.grads->dk + (j0 + j) * kv_stride + int64_t(kv_head) * d;
    float* dv_out = plan.grads->dv + (j0 + j) * kv_stride + int64_t(kv_head) * d;
    for (int64_t c = 0; c < d; ++c) {
      const float gk = dk[j * dim_padded + c] * plan.scale, gv = dv[j * dim_padded + c];
      dk_out[c] = add ? dk_out[c] + gk : gk;
      dv_out[c] = add ? dv_out[c] + gv : gv;
    }
  }
}

// Pass 2: dQ of one query tile of one KV head's query heads.
void BackwardQueryTile(const BackwardPlan& plan, int64_t task) {
  const AttentionArgs& a = *plan.args;
  const AttentionShape& shape = a.shape;
  const int64_t n_tiles = int64_t(plan.tiles.size());
  const int32_t kv_head = int32_t(task % shape.n_kv_heads);
  const int64_t tile = n_tiles - 1 - task / shape.n_kv_heads;  // later tiles see more keys
  const int64_t d = shape.head_dim;
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t dim_padded = (d + L - 1) / L * L;
  const int64_t q_begin = tile * plan.tile_queries;
  const int64_t rows = (std::min(a.n_q, q_begin + plan.tile_queries) - q_begin) * plan.group;
  const int64_t rows_padded = (rows + L - 1) / L * L;
  const int64_t kv_stride = int64_t(shape.n_kv_heads) * d;
  const float* k = static_cast<const float*>(a.kv.k);
  const float* v = static_cast<const float*>(a.kv.v);

  static thread_local BackwardScratch s;
  float* q_rows = Sized(s.a, size_t(rows * dim_padded));    // [rows][dim_padded]
  float* go_rows = Sized(s.b, size_t(rows * dim_padded));   // [rows][dim_padded]
  float* qt = Sized(s.c, size_t(d * rows_padded));          // [d][rows_padded]
  float* got = Sized(s.d, size_t(d * rows_padded));         // [d][rows_padded]
  float* kf = Sized(s.e, size_t(kBlockKeys * dim_padded));  // [keys][dim_padded]
  float* dq = Sized(s.f, size_t(rows * dim_padded));        // [rows][dim_padded]
  float* work = Sized(s.g, size_t(2 * kBlockKeys * rows_padded + 2 * rows_padded));
  float* pt = work;                              // [keys][rows_padded] P, then dS
  float* dpt = work + kBlockKeys * rows_padded;  // [keys][rows_padded] dP
  float* lse = dpt + kBlockKeys * rows_padded;   // [rows_padded]
  float* D = lse + rows_padded;                  // [rows_padded]
  if (s.row_pos.size() < size_t(rows)) s.row_pos.resize(size_t(rows));
  int32_t* row_pos = s.row_pos.data();

  GatherRows(plan, kv_head, q_begin, rows, dim_padded, q_rows, go_rows, lse, D, row_pos);
  std::fill(lse + rows, lse + rows_padded, std::numeric_limits<float>::infinity());  // P = 0
  std::fill(D + rows, D + rows_padded, 0.0f);
  std::fill_n(qt, d * rows_padded, 0.0f);
  std::fill_n(got, d * rows_padded, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < d; ++c) {
      qt[c * rows_padded + r] = q_rows[r * dim_padded + c];
      got[c * rows_padded + r] = go_rows[r * dim_padded + c];
    }
  std::fill_n(dq, rows * dim_padded, 0.0f);
  std::fill_n(kf, kBlockKeys * dim_padded, 0.0f);
  const auto vscale = hn::Set(df, plan.scale);

  for (size_t block = 0; block < plan.blocks.size(); ++block) {
    const Visibility vis = ClassifyBlock(a.span, plan.blocks[block], plan.tiles[size_t(tile)]).span;
    if (vis == Visibility::kNone) continue;
    const int64_t j0 = int64_t(block) * kBlockKeys;
    const int64_t n_keys = std::min(kBlockKeys, a.kv.n_rows - j0);
    const float* k_block = k + j0 * kv_stride + int64_t(kv_head) * d;
    const float* v_block = v + j0 * kv_stride + int64_t(kv_head) * d;
    for (int64_t j = 0; j < n_keys; ++j)
      std::memcpy(kf + j * dim_padded, k_block + j * kv_stride, size_t(d) * sizeof(float));
    // S^T[j][r] = k_j . q_r and dP^T[j][r] = v_j . dO_r, vectors along rows.
    ScoreBlock(k_block, kv_stride, d, qt, rows_padded, n_keys, pt);
    ScoreBlock(v_block, kv_stride, d, got, rows_padded, n_keys, dpt);
    for (int64_t j = 0; j < n_keys; ++j) {
      float* pj = pt + j * rows_padded;
      const float* dpj = dpt + j * rows_padded;
      for (int64_t r = 0; r < rows_padded; r += L) {
        const auto prob = hn::Exp(df, hn::MulSub(hn::LoadU(df, pj + r), vscale, hn::LoadU(df, lse + r)));
        hn::StoreU(hn::Mul(prob, hn::Sub(hn::LoadU(df, dpj + r), hn::LoadU(df, D + r))), df, pj + r);
      }
      if (vis == Visibility::kPartial)
        for (int64_t r = 0; r < rows; ++r)
          if (!Sees(a.span, row_pos[r], a.kv.pos[j0 + j])) pj[r] = 0.0f;
    }
    // dQ[r] += sum_j dS^T[j][r] k_j.
    AccumulateAllRows(pt, rows_padded, kf, dim_padded, n_keys, rows, dq);
  }

  const bool add = plan.grads->accumulate;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = q_begin + r / plan.group;
    float* out = plan.grads->dq + (i * shape.n_heads + int64_t(kv_head) * plan.group + r % plan.group) * d;
    for (int64_t c = 0; c < d; ++c) {
      const float g = dq[r * dim_padded + c] * plan.scale;
      out[c] = add ? out[c] + g : g;
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {

HWY_EXPORT(BackwardKeyBlock);
HWY_EXPORT(BackwardQueryTile);

void AttendBackward(const AttentionArgs& args, const AttentionSaved& saved, const AttentionGrads& grads) {
  ValidateBackward(args, saved, grads);
  const AttentionShape& s = args.shape;
  BackwardPlan plan{&args, &saved, &grads, 0.0f, 0, 0, {}, {}, {}};
  plan.scale = args.scale != 0.0f ? args.scale : 1.0f / std::sqrt(float(s.head_dim));
  plan.group = s.n_heads / s.n_kv_heads;
  plan.tile_queries = std::max<int64_t>(1, 64 / plan.group);
  plan.blocks = ComputeBlockBounds(args.kv.pos, args.kv.n_rows);
  plan.tiles = ComputeQueryRanges(args.q_pos, args.n_q, plan.tile_queries);

  const int64_t n_rows_q = args.n_q * s.n_heads, d = s.head_dim;
  plan.D.resize(size_t(n_rows_q));
#pragma omp parallel for schedule(static) if (n_rows_q * d > 65536)
  for (int64_t row = 0; row < n_rows_q; ++row) {
    double dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += double(saved.d_out[row * d + c]) * saved.out[row * d + c];
    plan.D[size_t(row)] = float(dot);
  }
  if (args.sink_logits && grads.d_sink_logits) {
    for (int64_t row = 0; row < n_rows_q; ++row) {
      const int64_t h = row % s.n_heads;
      grads.d_sink_logits[h] -= std::exp(args.sink_logits[h] - saved.lse[row]) * plan.D[size_t(row)];
    }
  }

  // As in the forward: no threads for a tiny problem.
  const bool threaded = double(args.n_q) * double(args.kv.n_rows) * s.n_heads * d > double(1 << 18);
  const int64_t key_tasks = int64_t(plan.blocks.size()) * s.n_kv_heads;
#pragma omp parallel for schedule(dynamic, 1) if (threaded)
  for (int64_t task = 0; task < key_tasks; ++task) HWY_DYNAMIC_DISPATCH(BackwardKeyBlock)(plan, task);
  const int64_t query_tasks = int64_t(plan.tiles.size()) * s.n_kv_heads;
#pragma omp parallel for schedule(dynamic, 1) if (threaded)
  for (int64_t task = 0; task < query_tasks; ++task) HWY_DYNAMIC_DISPATCH(BackwardQueryTile)(plan, task);
}

}  // namespace swan
#endif  // HWY_ONCE
