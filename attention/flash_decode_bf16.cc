// Decode with bf16 dot products (see the header). The task's structure is
// flash_decode.cc's: per key block and KV head, the scores of every row
// (queries x G), the online softmax, then P.V; the next block is requested
// while this one is computed. What changes is the arithmetic:
//  * Scores: K rows are multiplied as loaded, 32 values per vdpbf16ps
//    against the bf16 query; two keys' accumulators fold into one vector
//    and 8 such into the 16 scores of 16 keys, as in flash_decode.cc.
//    Rows in fours put one row in each 128-bit lane instead, against 8
//    values of one key (ScoreKeysFourRows), and fold far less.
//  * P.V: two V rows are interleaved (vpunpck{l,h}wd) so that each 32-bit
//    lane holds one head_dim element of both keys; vdpbf16ps against the
//    two keys' bf16 probabilities, broadcast, adds p0 v0 + p1 v1 into 16
//    float32 outputs. The outputs come out in "unpack order": per 32 values,
//    lane i of the first vector is element 8 (i / 4) + i % 4, of the second
//    element 8 (i / 4) + 4 + i % 4; they are put back in order at the end.
#include "attention/flash_decode_bf16.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "attention/block_visibility.h"
#include "attention/decode_walk.h"
#include "attention/kv_rows.h"
#include "attention/softmax_state.h"
#include "attention/span.h"
#include "util/bf16.h"
#include "util/simd_target.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define SWAN_BF16_DOT_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")))
#endif

namespace swan {

bool DecodeRunsBf16Dot(const AttentionArgs& args) {
  const int64_t rows = args.n_q * (args.shape.n_heads / std::max(args.shape.n_kv_heads, 1));
  return args.kv.type == KvType::kBF16 && args.shape.head_dim % 32 == 0 && rows <= kDecodeMaxRows && AvxBF16DotsHere();
}

#if defined(__x86_64__)
namespace {

constexpr int64_t kMaxRows = 8;    // rows whose accumulators a kernel keeps in registers
constexpr int64_t kKeyGroup = 16;  // keys whose scores one vector holds

// Per-thread scratch of one task, grown on demand.
struct Bf16Scratch {
  std::vector<uint16_t> q;   // [heads][rows][d] queries rounded to bf16
  std::vector<uint16_t> q4;  // [heads][rows / 4][d / 8][4][8] the same, 4 rows interleaved
  std::vector<float> acc;    // [heads][rows][d] sum of p v, unpack order
  std::vector<float> m, l;   // [heads][rows]
  std::vector<float> s;      // [rows][kBlockKeys] scores, then probabilities
  std::vector<uint16_t> p;   // [rows][kBlockKeys] probabilities rounded to bf16
  std::vector<float> folds;  // [kMaxRows][8][16] folded key pairs
  std::vector<float> alpha;  // [rows]
  std::vector<float> row;    // [d] one row in order
};

template <class T>
void Grow(std::vector<T>& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(size_t(n));
}

SWAN_BF16_DOT_TARGET inline __m512bh AsBF16(__m512i v) { return reinterpret_cast<__m512bh&>(v); }

// Every lane, for the masked forms of instructions: g++ 12 warns that the
// unmasked forms' undefined operand is uninitialised.
constexpr __mmask16 kAllLanes = 0xFFFF;

// Requests the cache line holding p into L2, not L1 (prefetcht1). A
// request into L1 holds one of the core's few L1 miss buffers until the
// line arrives, and decode requests every line of the next key block: on a
// Zen 4 this kernel read a 4K-key view that was not in the caches at
// 11.6 GB/s with L1 requests and 18.2 GB/s with L2 requests
// (bench/attention_bench BM_Decode/32768/64/8/2/1, 2 threads); the float32
// kernel, bound by its arithmetic, reads as fast with either.
inline void RequestKvLine(const void* p) { __builtin_prefetch(p, 0, 2); }

// Pairwise sums of a's lanes in the lower half, of b's in the upper half
// (flash_decode.cc's FoldPair).
SWAN_BF16_DOT_TARGET inline __m512 FoldPair(__m512 a, __m512 b) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return _mm512_add_ps(_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b));
}

// S[r][j] = scale (q[r] . K[j]) for kRows rows of q [kRows][d] (bf16) and
// n <= 16 keys from k (rows `stride` apart); S rows kBlockKeys apart, all 16
// lanes written (past n: garbage). Each K line read requests the one
// `ahead` elements further (0: none).
template <int kRows>
SWAN_BF16_DOT_TARGET __attribute__((noinline)) void ScoreKeys(const uint16_t* k, int64_t stride, int64_t n, int64_t d,
                                                              const uint16_t* q, int64_t ahead, float scale,
                                                              float* folds, float* s) {
  const int64_t n_pairs = (n + 1) / 2;
  for (int64_t pair = 0; pair < n_pairs; ++pair) {
    const uint16_t* k0 = k + 2 * pair * stride;
    const uint16_t* k1 = 2 * pair + 1 < n ? k0 + stride : k0;  // an odd last key pairs with itself
    __m512 a0[kRows], a1[kRows];
    for (int r = 0; r < kRows; ++r) a0[r] = a1[r] = _mm512_setzero_ps();
    for (int64_t c = 0; c < d; c += 32) {
      if (ahead) {
        RequestKvLine(k0 + ahead + c);
        RequestKvLine(k1 + ahead + c);
      }
      const __m512bh x0 = AsBF16(_mm512_loadu_si512(k0 + c)), x1 = AsBF16(_mm512_loadu_si512(k1 + c));
      for (int r = 0; r < kRows; ++r) {
        const __m512bh qv = AsBF16(_mm512_loadu_si512(q + r * d + c));
        a0[r] = _mm512_dpbf16_ps(a0[r], x0, qv);
        a1[r] = _mm512_dpbf16_ps(a1[r], x1, qv);
      }
    }
    for (int r = 0; r < kRows; ++r) _mm512_storeu_ps(folds + (r * 8 + pair) * 16, FoldPair(a0[r], a1[r]));
  }
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int r = 0; r < kRows; ++r) {
    __m512 v[8];
    for (int64_t pair = 0; pair < 8; ++pair)
      v[pair] = pair < n_pairs ? _mm512_loadu_ps(folds + (r * 8 + pair) * 16) : _mm512_setzero_ps();
    for (int m = 8; m > 1; m /= 2)
      for (int i = 0; i < m / 2; ++i) v[i] = FoldPair(v[2 * i], v[2 * i + 1]);
    _mm512_storeu_ps(s + r * kBlockKeys, _mm512_mul_ps(v[0], vscale));
  }
}

// acc[r][c, c + 32 kChunks) = alpha[r] acc[r][...] + sum_j P[r][j] V[j][...]
// (unpack order) for kRows rows: P [kRows][kBlockKeys] bf16, zero from
// n_keys to the next even count; acc rows d apart.
template <int kRows, int kChunks>
SWAN_BF16_DOT_TARGET __attribute__((noinline)) void AccumulateColumns(const uint16_t* v, int64_t stride, int64_t n_keys,
                                                                      const uint16_t* p, const float* alpha, int64_t c,
                                                                      int64_t ahead, int64_t d, float* acc) {
  __m512 o[kRows][2 * kChunks];
  for (int r = 0; r < kRows; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
    for (int i = 0; i < 2 * kChunks; ++i) o[r][i] = _mm512_mul_ps(a, _mm512_loadu_ps(acc + r * d + c + 16 * i));
  }
  for (int64_t j = 0; j < n_keys; j += 2) {
    const uint16_t* v0 = v + j * stride + c;
    const uint16_t* v1 = j + 1 < n_keys ? v0 + stride : v0;  // its probability is 0
    for (int ch = 0; ch < kChunks; ++ch) {
      if (ahead) {
        RequestKvLine(v0 + ahead + 32 * ch);
        RequestKvLine(v1 + ahead + 32 * ch);
      }
      const __m512i a = _mm512_loadu_si512(v0 + 32 * ch), b = _mm512_loadu_si512(v1 + 32 * ch);
      const __m512bh lo = AsBF16(_mm512_unpacklo_epi16(a, b)), hi = AsBF16(_mm512_unpackhi_epi16(a, b));
      for (int r = 0; r < kRows; ++r) {
        int32_t two;  // P[r][j], P[r][j + 1]
        std::memcpy(&two, p + r * kBlockKeys + j, sizeof(two));
        const __m512bh pp = AsBF16(_mm512_set1_epi32(two));
        o[r][2 * ch] = _mm512_dpbf16_ps(o[r][2 * ch], lo, pp);
        o[r][2 * ch + 1] = _mm512_dpbf16_ps(o[r][2 * ch + 1], hi, pp);
      }
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int i = 0; i < 2 * kChunks; ++i) _mm512_storeu_ps(acc + r * d + c + 16 * i, o[r][i]);
}

// Within each 128-bit lane r, the sums of the four values of a, b, c and d
// there: lane r of the result is [sum a, sum b, sum c, sum d] of lane r.
// Unpacks within lanes, one cycle each, where pairwise folds across the
// whole vector (FoldPair) take two permutes.
SWAN_BF16_DOT_TARGET inline __m512 SumFours(__m512 a, __m512 b, __m512 c, __m512 d) {
  // a0+a2 b0+b2 a1+a3 b1+b3, and the same of c and d
  const __m512 ab = _mm512_add_ps(_mm512_maskz_unpacklo_ps(kAllLanes, a, b), _mm512_maskz_unpackhi_ps(kAllLanes, a, b));
  const __m512 cd = _mm512_add_ps(_mm512_maskz_unpacklo_ps(kAllLanes, c, d), _mm512_maskz_unpackhi_ps(kAllLanes, c, d));
  const __m512d ab2 = _mm512_castps_pd(ab), cd2 = _mm512_castps_pd(cd);
  return _mm512_add_ps(_mm512_castpd_ps(_mm512_maskz_unpacklo_pd(__mmask8(0xFF), ab2, cd2)),
                       _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(__mmask8(0xFF), ab2, cd2)));
}

// acc[i] += the products of key kFirst + i (at k + offset[kFirst + i])
// with the 4 rows of qi, for i in [0, 8): half of ScoreKeysFourRows's key
// group. Why halves: all 16 keys in one pass over d read a 32K-key view
// that was not in the caches at 0.7x the speed (docs/performance.md).
template <int kFirst>
SWAN_BF16_DOT_TARGET inline void DotEightKeys(const uint16_t* k, const int64_t* offset, int64_t d, const uint16_t* qi,
                                              int64_t ahead, __m512 (&acc)[8]) {
  for (int64_t c = 0; c < d; c += 8) {
    const __m512bh qv = AsBF16(_mm512_loadu_si512(qi + 4 * c));
    const uint16_t* kc = k + c;
    if (ahead && c % 32 == 0)
      for (int j = 0; j < 8; ++j) RequestKvLine(kc + offset[kFirst + j] + ahead);
    for (int j = 0; j < 8; ++j) {
      const __m512i x = _mm512_maskz_broadcast_i32x4(
          kAllLanes, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kc + offset[kFirst + j])));
      acc[j] = _mm512_dpbf16_ps(acc[j], AsBF16(x), qv);
    }
  }
}

// S[r][j] = scale (q[r] . K[j]) for 4 rows, as ScoreKeys<4> but without
// its 60 folds per 16 keys: each 128-bit lane of a product holds one row
// (qi [d / 8][4][8]: 8 values of each row in turn) against the same 8
// values of one key, broadcast to the four lanes, so a key's accumulator
// holds 4 partial sums per row, summed within lanes (SumFours) and the
// four rows' lanes gathered by 4 x 4 shuffles of 128-bit lanes. The
// products are as many; the folds (two permutes and an add each) were as
// many as the products. G = 4 is the most common group (Llama 3, Mistral,
// Gemma 3 1B); other remainders use ScoreKeys.
SWAN_BF16_DOT_TARGET __attribute__((noinline)) void ScoreKeysFourRows(const uint16_t* k, int64_t stride, int64_t n,
                                                                      int64_t d, const uint16_t* qi, int64_t ahead,
                                                                      float scale, float* s) {
  int64_t offset[kKeyGroup];  // element offset of key j; past n, the last key again (garbage lanes)
  for (int64_t j = 0; j < kKeyGroup; ++j) offset[j] = std::min(j, n - 1) * stride;
  __m512 low[8], high[8];  // keys 0-7, 8-15
  for (int j = 0; j < 8; ++j) low[j] = high[j] = _mm512_setzero_ps();
  DotEightKeys<0>(k, offset, d, qi, ahead, low);
  DotEightKeys<8>(k, offset, d, qi, ahead, high);
  // lane r of sums[i]: row r's scores of keys 4i .. 4i + 3
  const __m512 sums[4] = {SumFours(low[0], low[1], low[2], low[3]), SumFours(low[4], low[5], low[6], low[7]),
                          SumFours(high[0], high[1], high[2], high[3]), SumFours(high[4], high[5], high[6], high[7])};
  // The 4 x 4 transpose of 128-bit lanes: row r takes lane r of each.
  const __m512 rows01[2] = {_mm512_maskz_shuffle_f32x4(kAllLanes, sums[0], sums[1], 0x44),  // lanes 0, 1 of both
                            _mm512_maskz_shuffle_f32x4(kAllLanes, sums[2], sums[3], 0x44)};
  const __m512 rows23[2] = {_mm512_maskz_shuffle_f32x4(kAllLanes, sums[0], sums[1], 0xEE),  // lanes 2, 3 of both
                            _mm512_maskz_shuffle_f32x4(kAllLanes, sums[2], sums[3], 0xEE)};
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512 row[4] = {_mm512_maskz_shuffle_f32x4(kAllLanes, rows01[0], rows01[1], 0x88),
                         _mm512_maskz_shuffle_f32x4(kAllLanes, rows01[0], rows01[1], 0xDD),
                         _mm512_maskz_shuffle_f32x4(kAllLanes, rows23[0], rows23[1], 0x88),
                         _mm512_maskz_shuffle_f32x4(kAllLanes, rows23[0], rows23[1], 0xDD)};
  for (int r = 0; r < 4; ++r) _mm512_storeu_ps(s + r * kBlockKeys, _mm512_mul_ps(row[r], vscale));
}

// Calls f.template operator()<kRows>(r0) over chunks of at most kMaxRows
// of `rows` rows.
template <class F>
SWAN_BF16_DOT_TARGET inline void ForRowChunks(int64_t rows, const F& f) {
  int64_t r0 = 0;
  for (; r0 + kMaxRows <= rows; r0 += kMaxRows) f.template operator()<kMaxRows>(r0);
  switch (rows - r0) {
    case 1: return f.template operator()<1>(r0);
    case 2: return f.template operator()<2>(r0);
    case 3: return f.template operator()<3>(r0);
    case 4: return f.template operator()<4>(r0);
    case 5: return f.template operator()<5>(r0);
    case 6: return f.template operator()<6>(r0);
    case 7: return f.template operator()<7>(r0);
    default: return;
  }
}

// Scores of the block's n_keys keys for every row into S [rows][kBlockKeys]:
// rows in fours from q4 [rows / 4][d / 8][4][8], the rest from q [rows][d].
SWAN_BF16_DOT_TARGET void ScoreBlock(const uint16_t* k, int64_t stride, int64_t n_keys, int64_t d, const uint16_t* q,
                                     const uint16_t* q4, int64_t rows, int64_t ahead, float scale, float* folds,
                                     float* s) {
  const int64_t fours = rows / 4;
  for (int64_t g = 0; g < n_keys; g += kKeyGroup) {
    const int64_t n = std::min(kKeyGroup, n_keys - g);
    for (int64_t f = 0; f < fours; ++f)
      ScoreKeysFourRows(k + g * stride, stride, n, d, q4 + f * 4 * d, f == 0 ? ahead : 0, scale,
                        s + 4 * f * kBlockKeys + g);
    const int64_t r0 = 4 * fours;
    ForRowChunks(rows - r0, [&]<int kRows>(int64_t) {  // fewer than 4 rows: one chunk
      ScoreKeys<kRows>(k + g * stride, stride, n, d, q + r0 * d, r0 == 0 ? ahead : 0, scale, folds,
                       s + r0 * kBlockKeys + g);
    });
  }
}

// acc = alpha acc + P.V over the block's n_keys rows of V, every row.
SWAN_BF16_DOT_TARGET void AccumulateBlock(const uint16_t* v, int64_t stride, int64_t n_keys, int64_t d,
                                          const uint16_t* p, const float* alpha, int64_t rows, int64_t ahead,
                                          float* acc) {
  ForRowChunks(rows, [&]<int kRows>(int64_t r0) {
    // kRows x 2 kChunks accumulators in registers: 16 at most.
    constexpr int kChunks = kRows <= kMaxRows / 2 ? 2 : 1;
    const int64_t request = r0 == 0 ? ahead : 0;
    const uint16_t* pr = p + r0 * kBlockKeys;
    float* out = acc + r0 * d;
    int64_t c = 0;
    for (; c + 32 * kChunks <= d; c += 32 * kChunks)
      AccumulateColumns<kRows, kChunks>(v, stride, n_keys, pr, alpha + r0, c, request, d, out);
    for (; c < d; c += 32) AccumulateColumns<kRows, 1>(v, stride, n_keys, pr, alpha + r0, c, request, d, out);
  });
}

// P [rows][kBlockKeys] = S rounded to bf16 over keys [0, n_keys) rounded up
// to 16 (the softmax left 0 there).
SWAN_BF16_DOT_TARGET void RoundProbabilities(const float* s, int64_t n_keys, int64_t rows, uint16_t* p) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n_keys; j += 16) {
      const __m256bh rounded = _mm512_cvtneps_pbh(_mm512_loadu_ps(s + r * kBlockKeys + j));
      std::memcpy(p + r * kBlockKeys + j, &rounded, sizeof(rounded));
    }
}

// acc [d] in unpack order -> row [d] in order.
void FromUnpackOrder(const float* acc, int64_t d, float* row) {
  for (int64_t c = 0; c < d; c += 32)
    for (int64_t i = 0; i < 16; ++i) {
      row[c + 8 * (i / 4) + i % 4] = acc[c + i];
      row[c + 8 * (i / 4) + 4 + i % 4] = acc[c + 16 + i];
    }
}

SWAN_BF16_DOT_TARGET void RunTask(const FlashPlan& plan, const FlashTask& t) {
  const AttentionArgs& args = *plan.args;
  const AttentionShape& shape = args.shape;
  const DecodeTaskRows task(args, t);
  const int64_t d = task.d, rows = task.rows, heads = task.heads;
  const int32_t group = task.group;

  static thread_local Bf16Scratch s;
  Grow(s.q, heads * rows * d);
  Grow(s.q4, heads * rows * d);
  Grow(s.acc, heads * rows * d);
  Grow(s.m, heads * rows);
  Grow(s.l, heads * rows);
  Grow(s.s, rows * kBlockKeys);
  Grow(s.p, rows * kBlockKeys);
  Grow(s.folds, kMaxRows * 8 * 16);
  Grow(s.alpha, rows);
  Grow(s.row, d);
  task.ResetStates(s.acc.data(), d, s.m.data(), s.l.data());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t r = 0; r < rows; ++r) {
      const float* q = task.Query(args, t.kv_head + h, r);
      uint16_t* dst = s.q.data() + (h * rows + r) * d;
      for (int64_t c = 0; c < d; ++c) dst[c] = F32ToBF16(q[c]);
    }
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t r = 0; r < rows / 4 * 4; ++r)
      for (int64_t c = 0; c < d; ++c)
        s.q4[size_t((h * rows + r / 4 * 4) * d + c / 8 * 32 + r % 4 * 8 + c % 8)] = s.q[size_t((h * rows + r) * d + c)];

  const KvView& kv = args.kv;
  const int64_t stride = KvRowStride(kv, shape);
  const uint16_t* k = static_cast<const uint16_t*>(kv.k) + int64_t(t.kv_head) * d;  // this task's first head
  const uint16_t* v = static_cast<const uint16_t*>(kv.v) + int64_t(t.kv_head) * d;
  const std::vector<BlockVisit> visits = plan.VisitsFor(t);
  auto request_block = [&](size_t vi) {  // every line of visit vi's block
    const int64_t first = visits[vi].block * kBlockKeys, last = std::min(kv.n_rows, first + kBlockKeys);
    for (int64_t j = first; j < last; ++j)
      for (int64_t e = j * stride; e < j * stride + heads * d; e += 32) {
        RequestKvLine(k + e);
        RequestKvLine(v + e);
      }
  };
  if (!visits.empty()) request_block(0);
  for (size_t vi = 0; vi < visits.size(); ++vi) {
    const DecodeBlock b = DecodeBlockAt(visits, vi, kv.n_rows, stride);
    if (b.request_next) request_block(vi + 1);
    const int64_t j0 = b.first, n_keys = b.n_keys, ahead = b.ahead;
    for (int64_t h = 0; h < heads; ++h) {
      ScoreBlock(k + j0 * stride + h * d, stride, n_keys, d, s.q.data() + h * rows * d, s.q4.data() + h * rows * d,
                 rows, ahead, plan.scale, s.folds.data(), s.s.data());
      if (visits[vi].span == Visibility::kPartial)
        MaskUnseen(s.s.data(), rows, n_keys, args.span, task.row_pos.data(), kv.pos + j0);
      DecodeSoftmaxBlock(s.s.data(), n_keys, rows, s.m.data() + h * rows, s.l.data() + h * rows, s.alpha.data());
      RoundProbabilities(s.s.data(), n_keys, rows, s.p.data());
      AccumulateBlock(v + j0 * stride + h * d, stride, n_keys, d, s.p.data(), s.alpha.data(), rows, ahead,
                      s.acc.data() + h * rows * d);
    }
  }

  for (int64_t h = 0; h < heads; ++h)
    for (int64_t r = 0; r < rows; ++r) {
      FromUnpackOrder(s.acc.data() + (h * rows + r) * d, d, s.row.data());
      const DecodeRow at = DecodeRowOf(t.kv_head + h, r, group);
      plan.StoreRow(t, 0, at.query, at.head, s.m[size_t(h * rows + r)], s.l[size_t(h * rows + r)], s.row.data());
    }
}

}  // namespace
#endif  // __x86_64__

void RunDecodeTaskBf16Dot(const FlashPlan& plan, const FlashTask& t) {
  if (!DecodeRunsBf16Dot(*plan.args)) throw std::logic_error("RunDecodeTaskBf16Dot: not for this view or CPU");
#if defined(__x86_64__)
  RunTask(plan, t);
#endif
}

}  // namespace swan
