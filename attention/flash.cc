// The fast attention kernel: blocked online softmax (FlashAttention-2 style)
// over a KV view, vectorised with Highway (runtime dispatch) and threaded
// with OpenMP over (KV head, query tile, key split) tasks. Decode (a few
// rows per KV head) runs its own tasks instead: flash_decode.cc.
//
// One task takes the G query heads that share a KV head, for a tile of
// consecutive queries: R = queries x G rows, so each K/V block is loaded
// once for all of them. The tile's queries are transposed once into
// QT [head_dim][R] so that, key by key, a K element is broadcast against R
// query values in a vector: scores come out key-major, ST [keys][R], and the
// softmax statistics (max, sum) of R rows are updated in vectors too.
//
// Key blocks hold kBlockKeys consecutive rows of the view. Before the tile
// runs, the block's smallest and largest positions decide, without a mask,
// whether it is invisible (skipped: this is what makes a window layer cost
// O(N (W + S))), fully visible (no mask), or on the boundary (a per-element
// mask from Sees()).
#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attention/attention.h"
#include "attention/flash_decode.h"
#include "attention/flash_plan.h"
#include "attention/kv_rows.h"
#include "attention/softmax_exp.h"
#include "attention/softmax_state.h"
#include "util/parallel_ranges.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/flash.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "attention/softmax_exp-inl.h"
#include "attention/tile_kernels-inl.h"

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Per-thread scratch of one task, grown on demand.
struct TileScratch {
  std::vector<float> qt;          // [head_dim][rows_padded] scaled queries, transposed
  std::vector<float> st;          // [kBlockKeys][strip] scores of a strip of rows, key-major
  std::vector<float> sm;          // [kBlockKeys][strip] masked scores
  std::vector<float> pt;          // [kBlockKeys][strip] probabilities
  std::vector<float> kf;          // [kBlockKeys][dim_padded] K block as float
  std::vector<float> vf;          // [kBlockKeys][dim_padded] V block as float
  std::vector<float> alpha;       // [strip] rescale factor of this block
  std::vector<float> m[2], l[2];  // [rows_padded] per state
  std::vector<float> acc[2];      // [rows][dim_padded] per state
};

static void Grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// The online-softmax step of rows [r0, r0 + kVecs L) over a block of
// scores ST [n_keys][rows_padded]: new max m, probabilities PT, sums l, and
// alpha, the factor that rescales what the rows had accumulated.
template <int kVecs>
static void SoftmaxRows(const float* st, int64_t n_keys, int64_t rows_padded, int64_t r0, float* m, float* l, float* pt,
                        float* alpha) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const auto neg_inf = hn::Set(df, kNegInf);
  const auto one = hn::Set(df, 1.0f);
  hn::Vec<DF> shift[kVecs], sum[kVecs];
  for (int v = 0; v < kVecs; ++v) {
    const int64_t r = r0 + v * L;
    auto block_max = neg_inf;
    for (int64_t j = 0; j < n_keys; ++j) block_max = hn::Max(block_max, hn::LoadU(df, st + j * rows_padded + r));
    const auto m_old = hn::LoadU(df, m + r);
    const auto m_new = hn::Max(m_old, block_max);
    const auto none = hn::Eq(m_new, neg_inf);  // rows that have seen no key yet
    // Subtracting 0 instead of -inf keeps -inf scores at -inf (exp -> 0).
    shift[v] = hn::IfThenZeroElse(none, m_new);
    hn::StoreU(m_new, df, m + r);
    hn::StoreU(hn::IfThenElse(none, one, SoftmaxExp(df, hn::Sub(m_old, shift[v]))), df, alpha + r);
    sum[v] = hn::Zero(df);
  }
  for (int64_t j = 0; j < n_keys; ++j)
    for (int v = 0; v < kVecs; ++v) {
      const int64_t at = j * rows_padded + r0 + v * L;
      const auto p = SoftmaxExp(df, hn::Sub(hn::LoadU(df, st + at), shift[v]));
      hn::StoreU(p, df, pt + at);
      sum[v] = hn::Add(sum[v], p);
    }
  for (int v = 0; v < kVecs; ++v) {
    const int64_t r = r0 + v * L;
    hn::StoreU(hn::MulAdd(hn::LoadU(df, l + r), hn::LoadU(df, alpha + r), sum[v]), df, l + r);
  }
}

// One online-softmax step of state `s` over a block of scores ST [n_keys][R]
// (masked entries are -inf): new max, rescale, probabilities, sums, PV.
static void UpdateState(const float* st, int64_t n_keys, int64_t rows, int64_t rows_padded, const float* vf,
                        int64_t dim_padded, float* m, float* l, float* acc, float* pt, float* alpha) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  // Two vectors of rows at a time where there are two: e^x is one long
  // chain of dependent operations, and two independent ones per key keep
  // the FMA units busy where one left them waiting on its latency.
  int64_t r = 0;
  for (; r + 2 * L <= rows_padded; r += 2 * L) SoftmaxRows<2>(st, n_keys, rows_padded, r, m, l, pt, alpha);
  for (; r < rows_padded; r += L) SoftmaxRows<1>(st, n_keys, rows_padded, r, m, l, pt, alpha);
  for (int64_t row_index = 0; row_index < rows; ++row_index) {
    if (alpha[row_index] == 1.0f) continue;
    const auto a = hn::Set(df, alpha[row_index]);
    float* row = acc + row_index * dim_padded;
    for (int64_t c = 0; c < dim_padded; c += L) hn::StoreU(hn::Mul(hn::LoadU(df, row + c), a), df, row + c);
  }
  AccumulateAllRows(pt, rows_padded, vf, dim_padded, n_keys, rows, acc);
}

// Copies ST to SM with -inf wherever the query of row r does not see key j
// under `visible` (a predicate on (q_pos, k_pos)).
template <class Visible>
static void MaskScores(const float* st, const int32_t* k_pos, int64_t n_keys, const int32_t* row_pos, int64_t rows,
                       int64_t rows_padded, const Visible& visible, float* sm) {
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* src = st + j * rows_padded;
    float* dst = sm + j * rows_padded;
    for (int64_t r = 0; r < rows; ++r) dst[r] = visible(row_pos[r], k_pos[j]) ? src[r] : kNegInf;
    for (int64_t r = rows; r < rows_padded; ++r) dst[r] = src[r];
  }
}

void SoftmaxExpRange(const float* x, int64_t n, float* y) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(SoftmaxExp(df, hn::LoadU(df, x + i)), df, y + i);
  for (; i < n; ++i) {  // the tail through one padded vector
    HWY_ALIGN float lanes[hn::MaxLanes(DF())] = {};
    lanes[0] = x[i];
    hn::Store(SoftmaxExp(df, hn::Load(df, lanes)), df, lanes);
    y[i] = lanes[0];
  }
}

void RunFlashTask(const FlashPlan& plan, int64_t task) {
  const AttentionArgs& args = *plan.args;
  const AttentionShape& shape = args.shape;
  const FlashTask t = plan.Task(task);
  const int64_t d = shape.head_dim;
  const int32_t group = shape.n_heads / shape.n_kv_heads;
  const int64_t q_begin = t.tile * plan.tile_queries;
  const int64_t q_end = std::min(args.n_q, q_begin + plan.tile_queries);
  const int64_t rows = (q_end - q_begin) * group;
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t rows_padded = (rows + L - 1) / L * L;
  const int64_t dim_padded = (d + L - 1) / L * L;
  const int n_states = plan.dual ? 2 : 1;
  // Rows scored and softmaxed together: the width of ScoreBlock's widest tile.
  const int64_t strip_rows = int64_t(kTileVecs) * L;

  static thread_local TileScratch s;
  Grow(s.qt, size_t(d * rows_padded));
  Grow(s.st, size_t(kBlockKeys * strip_rows));
  Grow(s.sm, size_t(kBlockKeys * strip_rows));
  Grow(s.pt, size_t(kBlockKeys * strip_rows));
  Grow(s.kf, size_t(kBlockKeys * dim_padded));
  Grow(s.vf, size_t(kBlockKeys * dim_padded));
  Grow(s.alpha, size_t(strip_rows));
  for (int i = 0; i < n_states; ++i) {
    Grow(s.m[i], size_t(rows_padded));
    Grow(s.l[i], size_t(rows_padded));
    Grow(s.acc[i], size_t(rows * dim_padded));
    std::fill_n(s.m[i].begin(), rows_padded, kNegInf);
    std::fill_n(s.l[i].begin(), rows_padded, 0.0f);
    std::fill_n(s.acc[i].begin(), rows * dim_padded, 0.0f);
  }
  std::fill_n(s.vf.begin(), kBlockKeys * dim_padded, 0.0f);  // keeps padding columns 0
  std::fill_n(s.kf.begin(), kBlockKeys * dim_padded, 0.0f);

  // QT[c][r] = scale * q[query(r)][head(r)][c]; padded rows are 0.
  std::vector<int32_t> row_pos(static_cast<size_t>(rows));  // [rows] query position of each row
  std::fill_n(s.qt.begin(), d * rows_padded, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = q_begin + r / group;
    const int64_t h = int64_t(t.kv_head) * group + r % group;
    row_pos[size_t(r)] = args.q_pos[i];
    const float* q = args.q + (i * shape.n_heads + h) * d;
    for (int64_t c = 0; c < d; ++c) s.qt[size_t(c * rows_padded + r)] = q[c] * plan.scale;
  }

  const KvView& kv = args.kv;
  const int64_t stride = KvRowStride(kv, shape);
  const Span span = args.span;
  auto in_span = [span](int64_t q, int64_t k) { return Sees(span, q, k); };
  auto outside_span = [span](int64_t q, int64_t k) { return Sees(Span{}, q, k) && !Sees(span, q, k); };

  const std::vector<BlockVisit> visits = plan.VisitsFor(t);
  const int64_t row_bytes = KvBytes(kv.type, d);
  // This head's K and V rows of block `b`, requested ahead: a row is a few
  // cache lines far apart from the next, and decode does too little work
  // per row for the hardware prefetcher alone to keep loads in flight.
  // Part `part` of `parts` of block b's rows.
  auto prefetch_block = [&](int64_t b, int64_t part, int64_t parts) {
    const int64_t first = b * kBlockKeys + kBlockKeys * part / parts;
    const int64_t last = std::min<int64_t>(kv.n_rows, b * kBlockKeys + kBlockKeys * (part + 1) / parts);
    for (int64_t j = first; j < last; ++j) {
      const int64_t offset = KvBytes(kv.type, j * stride + int64_t(t.kv_head) * d);
      for (int64_t byte = 0; byte < row_bytes; byte += 64) {
        hwy::Prefetch(static_cast<const char*>(kv.k) + offset + byte);
        hwy::Prefetch(static_cast<const char*>(kv.v) + offset + byte);
      }
    }
  };
  const int64_t n_strips = (rows_padded + strip_rows - 1) / strip_rows;
  if (!visits.empty()) prefetch_block(visits[0].block, 0, 1);
  for (size_t vi = 0; vi < visits.size(); ++vi) {
    const BlockVisit& visit = visits[vi];
    const int64_t j0 = visit.block * kBlockKeys;
    const int64_t n_keys = std::min<int64_t>(kBlockKeys, kv.n_rows - j0);
    for (int64_t j = 0; j < n_keys; ++j) {
      const int64_t index = (j0 + j) * stride + int64_t(t.kv_head) * d;
      LoadRowAsFloat(kv.k, kv.type, index, d, s.kf.data() + j * dim_padded);
      LoadRowAsFloat(kv.v, kv.type, index, d, s.vf.data() + j * dim_padded);
    }
    const int32_t* k_pos = kv.pos + j0;
    // Strip by strip of the tile's rows, so that a strip's scores and
    // probabilities stay in L1 from its QK product through its PV product.
    for (int64_t r0 = 0; r0 < rows_padded; r0 += strip_rows) {
      const int64_t strip = std::min(strip_rows, rows_padded - r0);   // padded rows of the strip
      const int64_t real = std::clamp<int64_t>(rows - r0, 0, strip);  // rows of queries in it
      // The next block's rows, requested a part per strip: all at once they
      // stalled on the misses they left outstanding.
      if (vi + 1 < visits.size()) prefetch_block(visits[vi + 1].block, r0 / strip_rows, n_strips);
      ScoreBlock(s.kf.data(), dim_padded, d, s.qt.data() + r0, rows_padded, strip, n_keys, s.st.data());
      for (int state = 0; state < n_states; ++state) {
        const Visibility vis = state == 0 ? visit.span : visit.outside;
        if (vis == Visibility::kNone) continue;
        const float* scores = s.st.data();
        if (vis == Visibility::kPartial) {
          const int32_t* pos = row_pos.data() + r0;
          if (state == 0)
            MaskScores(s.st.data(), k_pos, n_keys, pos, real, strip, in_span, s.sm.data());
          else
            MaskScores(s.st.data(), k_pos, n_keys, pos, real, strip, outside_span, s.sm.data());
          scores = s.sm.data();
        }
        UpdateState(scores, n_keys, real, strip, s.vf.data(), dim_padded, s.m[state].data() + r0,
                    s.l[state].data() + r0, s.acc[state].data() + r0 * dim_padded, s.pt.data(), s.alpha.data());
      }
    }
  }

  for (int state = 0; state < n_states; ++state)
    for (int64_t r = 0; r < rows; ++r)
      plan.StoreRow(t, state, q_begin + r / group, int64_t(t.kv_head) * group + r % group, s.m[state][size_t(r)],
                    s.l[state][size_t(r)], s.acc[state].data() + r * dim_padded);
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {

HWY_EXPORT(RunFlashTask);
HWY_EXPORT(SoftmaxExpRange);

void SoftmaxExpForTest(const float* x, int64_t n, float* y) { HWY_DYNAMIC_DISPATCH(SoftmaxExpRange)(x, n, y); }

static void RunFlash(const AttentionArgs& args, const DualOutput& out, bool dual) {
  ValidateAttention(args);
  if (args.n_q == 0) return;
  FlashPlan plan(args, out, dual);
  const int64_t n_tasks = plan.n_tasks();
  // Threads only pay off past a few hundred thousand multiply-adds; below
  // that (a tiny model's decode step) waking them costs more than the work.
  const bool threaded =
      n_tasks > 1 &&
      double(args.n_q) * double(args.kv.n_rows) * args.shape.n_heads * args.shape.head_dim > double(1 << 18);
  const RegionThreads on = plan.decode ? RegionThreads::kSpinTeam : RegionThreads::kOpenMp;
  ForEachDynamic(n_tasks, threaded ? omp_get_max_threads() : 1, on, [&](int64_t task) {
    if (plan.decode)
      RunDecodeTask(plan, task);
    else
      HWY_DYNAMIC_DISPATCH(RunFlashTask)(plan, task);
  });
  plan.Finish();
}

void Attend(const AttentionArgs& args, float* out, float* lse, float* max_logit) {
  DualOutput o;
  o.out_window = out;
  o.lse_window = lse;
  o.max_window = max_logit;
  RunFlash(args, o, /*dual=*/false);
}

void AttendDual(const AttentionArgs& args, const DualOutput& out) {
  if (!out.out_window || !out.out_full) throw std::invalid_argument("attention: AttendDual needs both output buffers");
  RunFlash(args, out, /*dual=*/true);
}

}  // namespace swan
#endif  // HWY_ONCE
