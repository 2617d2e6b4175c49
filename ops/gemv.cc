#include "ops/gemv.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/block_product.h"
#include "util/bf16.h"
#include "util/f16.h"
#include "util/parallel_ranges.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gemv.cc"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/f16_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

// A weight element as float32: kType is WeightType's value (f32, bf16, f16).
template <int kType>
HWY_INLINE float WeightAt(const void* w_data, int64_t i) {
  if constexpr (kType == int(WeightType::kBF16)) return BF16ToF32(static_cast<const uint16_t*>(w_data)[i]);
  if constexpr (kType == int(WeightType::kF16)) return F16ToF32(static_cast<const uint16_t*>(w_data)[i]);
  return static_cast<const float*>(w_data)[i];
}

// Weight rows rows[0, kRowsW) against kRowsX input rows: acc[w][x] vectors
// summed over k, reduced at the end. The weights are read once per call.
template <size_t kRowsW, size_t kRowsX, int kType>
HWY_INLINE void DotTile(const void* w_data, int64_t k, const int64_t* rows /*[kRowsW]*/, const float* x, int64_t x0,
                        float* out /*[kRowsX][kRowsW]*/) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  hn::Vec<DF> acc[kRowsW][kRowsX];
  for (size_t a = 0; a < kRowsW; ++a)
    for (size_t b = 0; b < kRowsX; ++b) acc[a][b] = hn::Zero(df);
  // Each row's cache line 2 KiB ahead, asked for once a line, the rows in
  // turn, by the first tile of inputs (the others read the rows from L1):
  // 1.13-1.14x faster f16 decode products than the hardware prefetcher
  // alone, 8 KiB ahead 1.02x (docs/performance.md). Past the end of the
  // weights a prefetch is ignored, so the address is an integer.
  constexpr int64_t kElementBytes = kType == int(WeightType::kF32) ? 4 : 2, kLine = 64 / kElementBytes;
  constexpr uintptr_t kAheadBytes = 2048;
  int64_t c = 0;
  for (; c + L <= k; c += L) {
    if (x0 == 0 && c % kLine == 0)
      for (size_t a = 0; a < kRowsW; ++a)
        hwy::Prefetch(reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(w_data) +
                                                       uintptr_t(rows[a] * k + c) * kElementBytes + kAheadBytes));
    hn::Vec<DF> xv[kRowsX];
    for (size_t b = 0; b < kRowsX; ++b) xv[b] = hn::LoadU(df, x + (x0 + int64_t(b)) * k + c);
    for (size_t a = 0; a < kRowsW; ++a) {
      hn::Vec<DF> wv;
      if constexpr (kType == int(WeightType::kBF16)) {
        const hn::RebindToUnsigned<DF> du32;
        const hn::Rebind<uint16_t, DF> du16;
        const uint16_t* row = static_cast<const uint16_t*>(w_data) + rows[a] * k;
        wv = hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, row + c))));
      } else if constexpr (kType == int(WeightType::kF16)) {
        wv = LoadF16(df, static_cast<const uint16_t*>(w_data) + rows[a] * k + c);
      } else {
        wv = hn::LoadU(df, static_cast<const float*>(w_data) + rows[a] * k + c);
      }
      for (size_t b = 0; b < kRowsX; ++b) acc[a][b] = hn::MulAdd(wv, xv[b], acc[a][b]);
    }
  }
  for (size_t a = 0; a < kRowsW; ++a)
    for (size_t b = 0; b < kRowsX; ++b) {
      float sum = hn::GetLane(hn::SumOfLanes(df, acc[a][b]));
      for (int64_t t = c; t < k; ++t) {  // tail of k not filling a vector
        const int64_t wi = rows[a] * k + t;
        const float wt = WeightAt<kType>(w_data, wi);
        sum += wt * x[(x0 + int64_t(b)) * k + t];
      }
      out[b * kRowsW + a] = sum;
    }
}

// kRowsW weight rows against input rows [x0, x0 + kRowsX): y's entries.
template <size_t kRowsW, size_t kRowsX, int kType>
HWY_INLINE void TileInto(float* y, const float* x, const WeightView& w, const int64_t* rows /*[kRowsW]*/, int64_t x0,
                         bool accumulate) {
  float tile[kRowsX * kRowsW];
  DotTile<kRowsW, kRowsX, kType>(w.data, w.k, rows, x, x0, tile);
  for (size_t b = 0; b < kRowsX; ++b)
    for (size_t a = 0; a < kRowsW; ++a) {
      float& dst = y[(x0 + int64_t(b)) * w.n + rows[a]];
      dst = accumulate ? dst + tile[b * kRowsW + a] : tile[b * kRowsW + a];
    }
}

// Weight rows rows[0, kRowsW) against every input row, 4 at a time: the
// weights come from memory for the first 4 and from L1 for the others.
template <size_t kRowsW, int kType>
HWY_INLINE void RowsAgainstInputs(float* y, const float* x, const WeightView& w, const int64_t* rows, int64_t m,
                                  bool accumulate) {
  int64_t x0 = 0;
  for (; x0 + 4 <= m; x0 += 4) TileInto<kRowsW, 4, kType>(y, x, w, rows, x0, accumulate);
  if (m - x0 >= 2) TileInto<kRowsW, 2, kType>(y, x, w, rows, x0, accumulate), x0 += 2;
  if (m - x0 == 1) TileInto<kRowsW, 1, kType>(y, x, w, rows, x0, accumulate);
}

// Output rows [n_begin, n_end) for every input row, weights of kType, read
// as 4 equal parts side by side, one row of each per tile: a core keeps a
// few distant runs of memory in flight, each in pages of its own, which its
// prefetchers follow. With pieces of up to 256 rows (Gemvs), decoding one
// sequence, 4 rows side by side in one tile read 1.3-1.8x slower, and 8 or
// 16 streams 1.0-1.2x (the side by side's Llama f16, the ways alternated
// in one process). The rows left over (up to 3) go one at a time.
template <int kType>
void GemvRowsOf(float* y, const float* x, const WeightView& w, int64_t m, int64_t n_begin, int64_t n_end,
                bool accumulate) {
  constexpr int64_t kStreams = 4;
  const int64_t part = (n_end - n_begin) / kStreams;
  for (int64_t i = 0; i < part; ++i) {
    const int64_t rows[kStreams] = {n_begin + i, n_begin + part + i, n_begin + 2 * part + i, n_begin + 3 * part + i};
    RowsAgainstInputs<kStreams, kType>(y, x, w, rows, m, accumulate);
  }
  for (int64_t n = n_begin + kStreams * part; n < n_end; ++n) RowsAgainstInputs<1, kType>(y, x, w, &n, m, accumulate);
}

void GemvRows(float* y, const float* x, const WeightView& w, int64_t m, int64_t n_begin, int64_t n_end,
              bool accumulate) {
  switch (w.type) {
    case WeightType::kF32: return GemvRowsOf<int(WeightType::kF32)>(y, x, w, m, n_begin, n_end, accumulate);
    case WeightType::kBF16: return GemvRowsOf<int(WeightType::kBF16)>(y, x, w, m, n_begin, n_end, accumulate);
    case WeightType::kF16: return GemvRowsOf<int(WeightType::kF16)>(y, x, w, m, n_begin, n_end, accumulate);
    case WeightType::kQ8_0:
    case WeightType::kQ4_0:
    case WeightType::kQ4_1:
    case WeightType::kQ5_0:
    case WeightType::kQ5_1:
    case WeightType::kQ4_K:
    case WeightType::kQ5_K:
    case WeightType::kQ6_K: return;  // Gemv sends them to BlockProduct
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {

HWY_EXPORT(GemvRows);

static void ValidateGemv(const float* y, const float* x, const WeightView& w, int64_t m) {
  if (!y || !x || !w.data) throw std::invalid_argument("gemv: null buffer");
  if (m < 1 || w.n < 1 || w.k < 1)
    throw std::invalid_argument("gemv: sizes must be positive (m " + std::to_string(m) + ", n " + std::to_string(w.n) +
                                ", k " + std::to_string(w.k) + ")");
  if (!RowFits(w.type, w.k))
    throw std::invalid_argument(std::string("gemv: ") + WeightTypeName(w.type) + " rows need a multiple of " +
                                std::to_string(RowMultiple(w.type)) + " values, not " + std::to_string(w.k));
}

void Gemvs(const float* x, int64_t m, const GemvOutput* outs, int64_t count, bool accumulate) {
  if (count < 1) return;
  int64_t rows = 0, work = 0;  // every output's rows; multiply-adds
  for (int64_t i = 0; i < count; ++i) {
    ValidateGemv(outs[i].y, x, outs[i].w, m);
    if (IsBlockQuantized(outs[i].w.type)) throw std::invalid_argument("gemvs: block formats go to BlockProducts");
    if (outs[i].w.k != outs[0].w.k) throw std::invalid_argument("gemvs: inputs of different lengths");
    rows += outs[i].w.n;
    work += outs[i].w.n * outs[i].w.k;
  }
  // The outputs' rows in order, as one range (the small matrices, k and v
  // of a GQA layer, share the region of the others instead of paying for
  // one), cut into pieces of up to 256 rows of one output. Each thread owns
  // the pieces of an equal share of the rows, a long run of memory, and
  // then helps with the others' (util/parallel_ranges.h), on the spin team
  // (util/spin_team.h: no system calls to start and join). Measured on the
  // side by side's Llama f16 decode (Zen 4, 2 threads, two ways alternated
  // every 64 products in one process): the products took 0.87x the time of
  // pieces of 64 rows handed out two at a time (schedule(dynamic, 2)) and
  // read as 8 streams; the same pieces of 256 rows took 0.99x handed out
  // so, 0.91x with schedule(static).
  constexpr int64_t kPieceRows = 256;
  const int threads = work >= 65536 ? std::max(1, omp_get_max_threads()) : 1;
  struct Piece {
    int64_t out, begin, end;  // rows [begin, end) of outs[out]
  };
  std::vector<Piece> pieces;                                     // [pieces] in row order
  std::vector<int64_t> bounds(size_t(threads) + 1);              // [threads + 1] each thread's first piece
  auto share_start = [&](int t) { return rows * t / threads; };  // thread t's first row
  int64_t row = 0;                                               // of the next piece, counted over all outputs
  int next_thread = 1;
  for (int64_t i = 0; i < count; ++i)
    for (int64_t begin = 0; begin < outs[i].w.n;) {
      while (next_thread < threads && row >= share_start(next_thread))
        bounds[size_t(next_thread++)] = int64_t(pieces.size());
      int64_t end = std::min(outs[i].w.n, begin + kPieceRows);
      if (next_thread < threads) end = std::min(end, begin + share_start(next_thread) - row);
      pieces.push_back(Piece{i, begin, end});
      row += end - begin;
      begin = end;
    }
  while (next_thread <= threads) bounds[size_t(next_thread++)] = int64_t(pieces.size());
  ForEachOwnedFirst(bounds.data(), threads, RegionThreads::kSpinTeam, [&](int64_t p) {
    const Piece& piece = pieces[size_t(p)];
    const GemvOutput& out = outs[piece.out];
    HWY_DYNAMIC_DISPATCH(GemvRows)(out.y, x, out.w, m, piece.begin, piece.end, accumulate);
  });
}

void Gemv(float* y, const float* x, const WeightView& w, int64_t m, bool accumulate) {
  ValidateGemv(y, x, w, m);
  if (IsBlockQuantized(w.type)) return BlockProduct(y, x, w.packed(), m, accumulate);
  const GemvOutput out{y, w};
  Gemvs(x, m, &out, 1, accumulate);
}

void GemvReference(float* y, const float* x, const WeightView& w, int64_t m, bool accumulate) {
  ValidateGemv(y, x, w, m);
  std::vector<float> xs(x, x + m * w.k);  // [m, k] x as the kernel multiplies it
  if (IsBlockQuantized(w.type)) {
    std::vector<int8_t> q(size_t(m * w.k));                     // [m, k]
    std::vector<float> d(size_t(m * w.k / kQuantBlockValues));  // [m, k / 32]
    std::vector<int32_t> sum(d.size());                         // [m, k / 32]
    QuantizeInput(q.data(), d.data(), sum.data(), x, m, w.k);
    for (int64_t i = 0; i < m * w.k; ++i) xs[size_t(i)] = float(q[size_t(i)]) * d[size_t(i / kQuantBlockValues)];
  }
  std::vector<float> row(size_t(w.k));  // [k] one weight row as float32
  for (int64_t n = 0; n < w.n; ++n) {
    WeightRowsF32(w, row.data(), n, 1);
    for (int64_t r = 0; r < m; ++r) {
      double sum = 0;
      for (int64_t c = 0; c < w.k; ++c) sum += double(row[size_t(c)]) * xs[size_t(r * w.k + c)];
      y[r * w.n + n] = float(accumulate ? y[r * w.n + n] + sum : sum);
    }
  }
}

}  // namespace swan
#endif  // HWY_ONCE
