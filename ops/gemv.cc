#include "ops/gemv.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/quant_blocks.h"
#include "util/bf16.h"
#include "util/f16.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gemv.cc"
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

// DotTile for the block formats (k a multiple of 32), by integer dot
// products: the input rows come quantized per 32 values (int16 in
// [-127, 127] and a float scale, GemvInput), the weights' int8 (Q8_0) or
// nibbles minus 8 (Q4_0: L bytes give values [j, j + L) and
// [j + 16, j + 16 + L)) are widened to int16, and pairs of products are
// summed into int32 lanes; each block's sum is exact and is scaled once by
// both scales. Lanes(d16) divides 16 on every target.
template <size_t kRowsW, size_t kRowsX, int kType>
HWY_INLINE void DotTileBlocks(const void* w_data, int64_t k, const int64_t* rows /*[kRowsW]*/,
                              const GemvInput& x, int64_t x0, float* out /*[kRowsX][kRowsW]*/) {
  constexpr WeightType kW = WeightType(kType);
  const hn::CappedTag<int16_t, 16> d16;
  const hn::Repartition<int32_t, decltype(d16)> d32;
  const hn::Repartition<float, decltype(d16)> df;
  const int64_t L = int64_t(hn::Lanes(d16));
  const int64_t blocks = k / kQuantBlockValues;
  const size_t row_bytes = WeightRowBytes(kW, k);
  const uint8_t* base = static_cast<const uint8_t*>(w_data);  // [n, row_bytes]
  hn::Vec<decltype(df)> acc[kRowsW][kRowsX];
  for (size_t a = 0; a < kRowsW; ++a)
    for (size_t b = 0; b < kRowsX; ++b) acc[a][b] = hn::Zero(df);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int16_t* xq = x.q + x0 * k + blk * kQuantBlockValues;  // row x0's block; row b at + b * k
    const float* xd = x.d + x0 * blocks + blk;                   // its scale; row b at + b * blocks
    for (size_t a = 0; a < kRowsW; ++a) {
      const uint8_t* block = base + size_t(rows[a]) * row_bytes + size_t(blk) * QuantBlockBytes(kW);
      const float scale = LoadOneF16(block);
      const uint8_t* q = block + sizeof(uint16_t);  // the block's quantized values
      hn::Vec<decltype(d32)> sum0[kRowsX], sum1[kRowsX];
      for (size_t b = 0; b < kRowsX; ++b) sum0[b] = sum1[b] = hn::Zero(d32);
      if constexpr (kW == WeightType::kQ8_0) {
        const hn::Rebind<int8_t, decltype(d16)> d8;
        for (int64_t j = 0; j < kQuantBlockValues; j += L) {
          const auto wv = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const int8_t*>(q) + j));
          for (size_t b = 0; b < kRowsX; ++b)
            sum0[b] = hn::ReorderWidenMulAccumulate(d32, wv, hn::LoadU(d16, xq + int64_t(b) * k + j), sum0[b], sum1[b]);
        }
      } else {
        const hn::Rebind<uint8_t, decltype(d16)> du8;
        const auto low = hn::Set(d16, 0xf), eight = hn::Set(d16, 8);
        for (int64_t j = 0; j < kQuantBlockValues / 2; j += L) {
          const auto bytes = hn::PromoteTo(d16, hn::LoadU(du8, q + j));
          const auto w_lo = hn::Sub(hn::And(bytes, low), eight);
          const auto w_hi = hn::Sub(hn::ShiftRight<4>(bytes), eight);
          for (size_t b = 0; b < kRowsX; ++b) {
            const int16_t* xr = xq + int64_t(b) * k;
            sum0[b] = hn::ReorderWidenMulAccumulate(d32, w_lo, hn::LoadU(d16, xr + j), sum0[b], sum1[b]);
            sum0[b] = hn::ReorderWidenMulAccumulate(d32, w_hi, hn::LoadU(d16, xr + j + kQuantBlockValues / 2), sum0[b],
                                                    sum1[b]);
          }
        }
      }
      for (size_t b = 0; b < kRowsX; ++b)
        acc[a][b] = hn::MulAdd(hn::ConvertTo(df, hn::RearrangeToOddPlusEven(sum0[b], sum1[b])),
                               hn::Set(df, scale * xd[int64_t(b) * blocks]), acc[a][b]);
    }
  }
  for (size_t a = 0; a < kRowsW; ++a)
    for (size_t b = 0; b < kRowsX; ++b) out[b * kRowsW + a] = hn::GetLane(hn::SumOfLanes(df, acc[a][b]));
}

// Weight rows rows[0, kRowsW) against kRowsX input rows: acc[w][x] vectors
// summed over k, reduced at the end. The weights are read once per call.
template <size_t kRowsW, size_t kRowsX, int kType>
HWY_INLINE void DotTile(const void* w_data, int64_t k, const int64_t* rows /*[kRowsW]*/,
                        const GemvInput& input, int64_t x0, float* out /*[kRowsX][kRowsW]*/) {
  if constexpr (IsBlockQuantized(WeightType(kType))) {
    DotTileBlocks<kRowsW, kRowsX, kType>(w_data, k, rows, input, x0, out);
    return;
  }
  const float* x = input.x;
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  hn::Vec<DF> acc[kRowsW][kRowsX];
  for (size_t a = 0; a < kRowsW; ++a)
    for (size_t b = 0; b < kRowsX; ++b) acc[a][b] = hn::Zero(df);
  int64_t c = 0;
  for (; c + L <= k; c += L) {
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

template <size_t kRowsX, int kType>
void RowsRange(float* y, const GemvInput& x, const WeightView& w, int64_t x0, int64_t n_begin,
               int64_t n_end, bool accumulate) {
  float tile[4 * 4];
  int64_t n = n_begin;
  auto store = [&](int64_t rows_w, int64_t base) {
    for (size_t b = 0; b < kRowsX; ++b)
      for (int64_t a = 0; a < rows_w; ++a) {
        float& dst = y[(x0 + int64_t(b)) * w.n + base + a];
        dst = accumulate ? dst + tile[int64_t(b) * rows_w + a] : tile[int64_t(b) * rows_w + a];
      }
  };
  for (; n + 4 <= n_end; n += 4) {
    const int64_t rows[4] = {n, n + 1, n + 2, n + 3};
    DotTile<4, kRowsX, kType>(w.data, w.k, rows, x, x0, tile);
    store(4, n);
  }
  for (; n < n_end; ++n) {
    DotTile<1, kRowsX, kType>(w.data, w.k, &n, x, x0, tile);
    store(1, n);
  }
}

// One input row against output rows [n_begin, n_end), read as kStreams
// equal parts side by side, kRowsPerStream rows of each per tile: a core
// keeps several distant runs of memory in flight, which reads faster than
// one run (util/bandwidth.cc measures both). Rows left over go through
// RowsRange.
template <size_t kStreams, size_t kRowsPerStream, int kType>
void RowsStreams(float* y, const GemvInput& x, const WeightView& w, int64_t n_begin, int64_t n_end,
                 bool accumulate) {
  constexpr size_t kTile = kStreams * kRowsPerStream;
  const int64_t part = (n_end - n_begin) / int64_t(kTile) * int64_t(kRowsPerStream);
  float tile[kTile];
  int64_t rows[kTile];
  for (int64_t i = 0; i < part; i += int64_t(kRowsPerStream)) {
    for (size_t s = 0; s < kStreams; ++s)
      for (size_t a = 0; a < kRowsPerStream; ++a)
        rows[s * kRowsPerStream + a] = n_begin + int64_t(s) * part + i + int64_t(a);
    DotTile<kTile, 1, kType>(w.data, w.k, rows, x, 0, tile);
    for (size_t r = 0; r < kTile; ++r) y[rows[r]] = accumulate ? y[rows[r]] + tile[r] : tile[r];
  }
  RowsRange<1, kType>(y, x, w, 0, n_begin + int64_t(kStreams) * part, n_end, accumulate);
}

// Output rows [n_begin, n_end) for every input row, weights of kType.
template <int kType>
void GemvRowsOf(float* y, const GemvInput& x, const WeightView& w, int64_t m, int64_t n_begin, int64_t n_end,
                bool accumulate) {
  int64_t x0 = 0;
  for (; x0 + 4 <= m; x0 += 4) RowsRange<4, kType>(y, x, w, x0, n_begin, n_end, accumulate);
  for (; x0 + 2 <= m; x0 += 2) RowsRange<2, kType>(y, x, w, x0, n_begin, n_end, accumulate);
  if (m == 1) {  // decode of one sequence: 8 streams of single rows read fastest (bench/gemv_bench)
    RowsStreams<8, 1, kType>(y, x, w, n_begin, n_end, accumulate);
    return;
  }
  for (; x0 < m; ++x0) RowsRange<1, kType>(y, x, w, x0, n_begin, n_end, accumulate);
}

void GemvRows(float* y, const GemvInput& x, const WeightView& w, int64_t m, int64_t n_begin,
              int64_t n_end, bool accumulate) {
  switch (w.type) {
    case WeightType::kF32: return GemvRowsOf<int(WeightType::kF32)>(y, x, w, m, n_begin, n_end, accumulate);
    case WeightType::kBF16: return GemvRowsOf<int(WeightType::kBF16)>(y, x, w, m, n_begin, n_end, accumulate);
    case WeightType::kF16: return GemvRowsOf<int(WeightType::kF16)>(y, x, w, m, n_begin, n_end, accumulate);
    case WeightType::kQ8_0: return GemvRowsOf<int(WeightType::kQ8_0)>(y, x, w, m, n_begin, n_end, accumulate);
    case WeightType::kQ4_0: return GemvRowsOf<int(WeightType::kQ4_0)>(y, x, w, m, n_begin, n_end, accumulate);
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
    throw std::invalid_argument("gemv: sizes must be positive (m " + std::to_string(m) + ", n " +
                                std::to_string(w.n) + ", k " + std::to_string(w.k) + ")");
  if (!RowFits(w.type, w.k))
    throw std::invalid_argument(std::string("gemv: ") + WeightTypeName(w.type) + " rows need a multiple of 32 values, not " +
                                std::to_string(w.k));
}

namespace {

// x quantized for the block formats, in buffers the thread keeps.
GemvInput InputFor(const float* x, const WeightView& w, int64_t m) {
  GemvInput input;
  input.x = x;
  if (!IsBlockQuantized(w.type)) return input;
  thread_local std::vector<int16_t> q;  // [m, k]
  thread_local std::vector<float> d;    // [m, k / 32]
  if (q.size() < size_t(m * w.k)) q.resize(size_t(m * w.k));
  if (d.size() < size_t(m * w.k / kQuantBlockValues)) d.resize(size_t(m * w.k / kQuantBlockValues));
  QuantizeActivations(q.data(), d.data(), x, m * w.k);
  input.q = q.data();
  input.d = d.data();
  return input;
}

}  // namespace

void Gemv(float* y, const float* x, const WeightView& w, int64_t m, bool accumulate) {
  ValidateGemv(y, x, w, m);
  const GemvInput input = InputFor(x, w, m);
  // Chunks of 64 output rows: small enough to balance threads, large enough
  // that each thread streams long runs of the weight matrix.
  constexpr int64_t kChunk = 64;
  const int64_t n_chunks = (w.n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (w.n * w.k >= 65536)
  for (int64_t chunk = 0; chunk < n_chunks; ++chunk) {
    const int64_t begin = chunk * kChunk, end = begin + kChunk < w.n ? begin + kChunk : w.n;
    HWY_DYNAMIC_DISPATCH(GemvRows)(y, input, w, m, begin, end, accumulate);
  }
}

void GemvReference(float* y, const float* x, const WeightView& w, int64_t m, bool accumulate) {
  ValidateGemv(y, x, w, m);
  std::vector<float> xs(x, x + m * w.k);  // [m, k] x as the kernel multiplies it
  if (IsBlockQuantized(w.type)) {
    const GemvInput input = InputFor(x, w, m);
    for (int64_t i = 0; i < m * w.k; ++i) xs[size_t(i)] = float(input.q[i]) * input.d[i / kQuantBlockValues];
  }
  std::vector<float> row(size_t(w.k));  // [k] one weight row as float32
  const size_t row_bytes = WeightRowBytes(w.type, w.k);
  for (int64_t n = 0; n < w.n; ++n) {
    DequantizeRows(w.type, row.data(), static_cast<const uint8_t*>(w.data) + size_t(n) * row_bytes, 1, w.k);
    for (int64_t r = 0; r < m; ++r) {
      double sum = 0;
      for (int64_t c = 0; c < w.k; ++c) sum += double(row[size_t(c)]) * xs[size_t(r * w.k + c)];
      y[r * w.n + n] = float(accumulate ? y[r * w.n + n] + sum : sum);
    }
  }
}

}  // namespace swan
#endif  // HWY_ONCE
