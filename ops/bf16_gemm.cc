#include "ops/bf16_gemm.h"

#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>
#include <omp.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "util/bf16.h"
#include "util/f16.h"
#include "util/scratch.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/bf16_gemm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/f16_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

// Blocking: a register tile is kMR rows by NR = 2 vectors of columns; 6 x 2
// accumulators are the most that 16 AVX2 registers hold beside two B
// vectors and a broadcast A value.
constexpr int64_t kMR = 6;
constexpr int64_t kKC = 256;               // depth of a block: an A panel (6 x 256 f32, 6 KB)
                                           // and a B panel (256 x NR) stay in L1
constexpr int64_t kRowTilesPerBlock = 64;  // 384 rows of A's block (384 KB) stay in L2

// How an operand's values are stored, and how they become float32.
struct F32Values {
  using Stored = float;
  static float One(float x) { return x; }
  template <class D>
  static hn::Vec<D> Load(D d, const float* p) {
    return hn::LoadU(d, p);
  }
};
struct BF16Values {  // bf16 is float32's top half
  using Stored = uint16_t;
  static float One(uint16_t bits) { return BF16ToF32(bits); }
  template <class D>
  static hn::Vec<D> Load(D d, const uint16_t* p) {
    const hn::RebindToUnsigned<D> du32;
    const hn::Rebind<uint16_t, D> du16;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p))));
  }
};
struct F16Values {
  using Stored = uint16_t;
  static float One(uint16_t bits) { return F16ToF32(bits); }
  template <class D>
  static hn::Vec<D> Load(D d, const uint16_t* p) {
    return LoadF16(d, p);
  }
};

// VA, VB: how A and B are stored (F32Values, BF16Values or F16Values).
template <class VA, class VB>
struct Problem {
  float* c;                      // [m, ldc]
  const typename VA::Stored* a;  // [m, k], or [k, m] when trans_a
  const typename VB::Stored* b;  // [k, n], or [n, k] when trans_b
  GemmShape shape;
  bool accumulate;
};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

#if HWY_TARGET != HWY_SCALAR
// G rows' values [k, k + G) into G panel rows, transposed (G = 4 or 8):
// out[i * stride + r] = rows[r][i].   rows: G pointers to [G] values
template <int G, class V>
HWY_INLINE void Transpose(const typename V::Stored* const rows[G], float* out, int64_t stride) {
  // Within each 128-bit block: pairs of rows by 32-bit interleaves, then
  // fours by 64-bit ones; with 8 rows, the blocks' halves then meet.
  const hn::FixedTag<float, G> d;
  const hn::Repartition<double, decltype(d)> d64;
  using V64 = hn::Vec<decltype(d64)>;
  V64 lo[G / 2], hi[G / 2];  // [pair] rows 2p and 2p + 1 interleaved
  for (int i = 0; i < G / 2; ++i) {
    const hn::Vec<decltype(d)> even = V::Load(d, rows[2 * i]), odd = V::Load(d, rows[2 * i + 1]);
    lo[i] = hn::BitCast(d64, hn::InterleaveLower(d, even, odd));  // r0[0] r1[0] r0[1] r1[1] (per block)
    hi[i] = hn::BitCast(d64, hn::InterleaveUpper(d, even, odd));  // r0[2] r1[2] r0[3] r1[3]
  }
  // fours[f][q]: rows 4f..4f+3 at values q, q + 4 (one per block)
  hn::Vec<decltype(d)> fours[G / 4][4];
  for (int f = 0; f < G / 4; ++f) {
    fours[f][0] = hn::BitCast(d, hn::InterleaveLower(d64, lo[2 * f], lo[2 * f + 1]));
    fours[f][1] = hn::BitCast(d, hn::InterleaveUpper(d64, lo[2 * f], lo[2 * f + 1]));
    fours[f][2] = hn::BitCast(d, hn::InterleaveLower(d64, hi[2 * f], hi[2 * f + 1]));
    fours[f][3] = hn::BitCast(d, hn::InterleaveUpper(d64, hi[2 * f], hi[2 * f + 1]));
  }
  for (int q = 0; q < 4; ++q) {
    if constexpr (G == 4) {
      hn::StoreU(fours[0][q], d, out + q * stride);
    } else {
      hn::StoreU(hn::ConcatLowerLower(d, fours[1][q], fours[0][q]), d, out + q * stride);
      hn::StoreU(hn::ConcatUpperUpper(d, fours[1][q], fours[0][q]), d, out + (q + 4) * stride);
    }
  }
}

// Columns [j, j + G) of a panel from G stored rows of B, G x G at a time.
//   rows: [G] pointers to [kc] values, panel [kc][nr]
template <int G, class V>
HWY_INLINE void PackColumns(const typename V::Stored* const rows[G], int64_t kc, float* panel, int64_t j, int64_t nr) {
  const int64_t kc_whole = kc / G * G;
  for (int64_t kk = 0; kk < kc_whole; kk += G) {
    const typename V::Stored* at[G];  // [G] pointers to [G] values
    for (int r = 0; r < G; ++r) at[r] = rows[r] + kk;
    Transpose<G, V>(at, panel + kk * nr + j, nr);
  }
  for (int64_t kk = kc_whole; kk < kc; ++kk)
    for (int r = 0; r < G; ++r) panel[kk * nr + j + r] = V::One(rows[r][kk]);
}
#endif  // HWY_TARGET != HWY_SCALAR

// op(B)[pc + kk][j0 + j] into panel[kk * nr + j] (kk < kc, j < nr),
// zero for columns past n.   panel [kc][nr] f32
template <class VA, class VB>
void PackPanelB(const Problem<VA, VB>& p, int64_t pc, int64_t kc, int64_t j0, int64_t nr, float* panel) {
  using T = typename VB::Stored;
  const int64_t n = p.shape.n, k = p.shape.k;
  const int64_t cols = std::min(nr, n - j0);
  if (p.shape.trans_b) {  // stored [n, k]: column j of op(B) is storage row j,
                          // transposed 8 x 8 (or 4 x 4) at a time: packed one
                          // value at a time, a quarter of an f16 prefill's
                          // time went to it
    int64_t j = 0;
#if HWY_TARGET != HWY_SCALAR
    const auto group = [&](auto size) {  // PackColumns on `size` rows from column j
      constexpr int G = decltype(size)::value;
      const T* rows[G];  // [G] pointers to [kc] values
      for (int r = 0; r < G; ++r) rows[r] = p.b + (j0 + j + r) * k + pc;
      PackColumns<G, VB>(rows, kc, panel, j, nr);
    };
#if HWY_MAX_BYTES >= 32
    for (; j + 8 <= cols; j += 8) group(std::integral_constant<int, 8>());
#endif
    for (; j + 4 <= cols; j += 4) group(std::integral_constant<int, 4>());
#endif
    for (; j < cols; ++j) {
      const T* row = p.b + (j0 + j) * k + pc;  // [kc]
      for (int64_t kk = 0; kk < kc; ++kk) panel[kk * nr + j] = VB::One(row[kk]);
    }
  } else {  // stored [k, n]: each panel row is contiguous
    const DF df;
    const int64_t L = int64_t(hn::Lanes(df));
    for (int64_t kk = 0; kk < kc; ++kk) {
      const T* row = p.b + (pc + kk) * n + j0;  // [cols]
      float* dst = panel + kk * nr;
      if (cols == nr) {
        for (int64_t j = 0; j < nr; j += L) hn::Store(VB::Load(df, row + j), df, dst + j);
      } else {
        for (int64_t j = 0; j < cols; ++j) dst[j] = VB::One(row[j]);
      }
    }
  }
  for (int64_t kk = 0; cols < nr && kk < kc; ++kk) std::fill(panel + kk * nr + cols, panel + (kk + 1) * nr, 0.0f);
}

// Asks for part `part` of `parts` of the stored values that PackPanelB(p,
// pc, kc, j0, nr) will read: a thread prefetches its next panel's a little
// beside each tile it runs on this one. (Without, the transposing pack
// waited on memory: B's rows are read 512 bytes at a time, k values apart;
// all at once, the prefetches queued behind each other.)
template <class VA, class VB>
void PrefetchPanelB(const Problem<VA, VB>& p, int64_t pc, int64_t kc, int64_t j0, int64_t nr, int64_t part,
                    int64_t parts) {
  using T = typename VB::Stored;
  constexpr int64_t kLine = 64 / sizeof(T);  // values per cache line
  const int64_t n = p.shape.n, k = p.shape.k;
  const int64_t cols = std::min(nr, n - j0);
  // Lines in order: (column, line along k) when trans_b, else rows along k.
  const int64_t per_col = CeilDiv(kc, kLine), lines = p.shape.trans_b ? cols * per_col : kc;
  for (int64_t line = lines * part / parts; line < lines * (part + 1) / parts; ++line) {
    if (p.shape.trans_b)
      hwy::Prefetch(p.b + (j0 + line / per_col) * k + pc + line % per_col * kLine);
    else
      hwy::Prefetch(p.b + (pc + line) * n + j0);
  }
}

#if HWY_TARGET != HWY_SCALAR
// A whole tile's kMR (6) stored rows into panel [kc][kMR]: rows 0-3 by 4 x 4
// transposes, rows 4 and 5 by interleaves, 4 values of depth at a time.
// (One value at a time, packing A took as long as packing B in a 512 x 512
// x 512 product.)   rows: kMR pointers to [kc] values
template <class V>
HWY_INLINE void PackSixRows(const typename V::Stored* const rows[kMR], int64_t kc, float* panel) {
  static_assert(kMR == 6, "four rows by a transpose, two by interleaves");
  const hn::FixedTag<float, 4> d4;
  const hn::FixedTag<float, 2> d2;
  const int64_t kc4 = kc / 4 * 4;
  for (int64_t kk = 0; kk < kc4; kk += 4) {
    const typename V::Stored* at[4] = {rows[0] + kk, rows[1] + kk, rows[2] + kk, rows[3] + kk};
    Transpose<4, V>(at, panel + kk * kMR, kMR);
    const hn::Vec<decltype(d4)> r4 = V::Load(d4, rows[4] + kk), r5 = V::Load(d4, rows[5] + kk);
    const hn::Vec<decltype(d4)> lo = hn::InterleaveLower(d4, r4, r5);  // r4[0] r5[0] r4[1] r5[1]
    const hn::Vec<decltype(d4)> hi = hn::InterleaveUpper(d4, r4, r5);  // r4[2] r5[2] r4[3] r5[3]
    float* out = panel + kk * kMR + 4;
    hn::StoreU(hn::LowerHalf(d2, lo), d2, out);
    hn::StoreU(hn::UpperHalf(d2, lo), d2, out + kMR);
    hn::StoreU(hn::LowerHalf(d2, hi), d2, out + 2 * kMR);
    hn::StoreU(hn::UpperHalf(d2, hi), d2, out + 3 * kMR);
  }
  for (int64_t kk = kc4; kk < kc; ++kk)
    for (int64_t r = 0; r < kMR; ++r) panel[kk * kMR + r] = V::One(rows[r][kk]);
}
#endif  // HWY_TARGET != HWY_SCALAR

// op(A)[i0 + r][pc + kk] into panel[kk * kMR + r], zero for rows past m.
//   panel [kc][kMR] f32
template <class VA, class VB>
void PackPanelA(const Problem<VA, VB>& p, int64_t pc, int64_t kc, int64_t i0, float* panel) {
  using T = typename VA::Stored;
  const int64_t m = p.shape.m, k = p.shape.k;
  const int64_t rows = std::min(kMR, m - i0);
#if HWY_TARGET != HWY_SCALAR
  if (!p.shape.trans_a && rows == kMR) {
    const T* starts[kMR];  // [kMR] pointers to [kc] values
    for (int64_t r = 0; r < kMR; ++r) starts[r] = p.a + (i0 + r) * k + pc;
    return PackSixRows<VA>(starts, kc, panel);
  }
#endif
  if (!p.shape.trans_a) {  // stored [m, k]
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = p.a + (i0 + r) * k + pc;  // [kc]
      for (int64_t kk = 0; kk < kc; ++kk) panel[kk * kMR + r] = VA::One(row[kk]);
    }
  } else {  // stored [k, m]: the panel's rows are contiguous
    for (int64_t kk = 0; kk < kc; ++kk) {
      const T* src = p.a + (pc + kk) * m + i0;  // [rows]
      for (int64_t r = 0; r < rows; ++r) panel[kk * kMR + r] = VA::One(src[r]);
    }
  }
  for (int64_t kk = 0; rows < kMR && kk < kc; ++kk) std::fill(panel + kk * kMR + rows, panel + (kk + 1) * kMR, 0.0f);
}

// C tile [rows, cols] (row stride ldc) = or += A panel · B panel.
//   a_panel [kc][kMR], b_panel [kc][2L], c [rows][ldc]
HWY_INLINE void TileKernel(const float* HWY_RESTRICT a_panel, const float* HWY_RESTRICT b_panel, int64_t kc, float* c,
                           int64_t ldc, int64_t rows, int64_t cols, bool add) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  // C's rows come in while the products run: they are read once per block
  // of depth, from beyond the L2 (a sixth of the kernel's samples had
  // waited on them).
  for (int64_t r = 0; r < rows; ++r) {
    hwy::Prefetch(c + r * ldc);
    hwy::Prefetch(c + r * ldc + 2 * L - 1);
  }
  hn::Vec<DF> acc0[kMR], acc1[kMR];
  for (int64_t r = 0; r < kMR; ++r) acc0[r] = acc1[r] = hn::Zero(df);
  for (int64_t kk = 0; kk < kc; ++kk) {
    const hn::Vec<DF> b0 = hn::Load(df, b_panel + kk * 2 * L);
    const hn::Vec<DF> b1 = hn::Load(df, b_panel + kk * 2 * L + L);
    for (int64_t r = 0; r < kMR; ++r) {
      const hn::Vec<DF> a = hn::Set(df, a_panel[kk * kMR + r]);
      acc0[r] = hn::MulAdd(a, b0, acc0[r]);
      acc1[r] = hn::MulAdd(a, b1, acc1[r]);
    }
  }
  if (rows == kMR && cols == 2 * L) {
    for (int64_t r = 0; r < kMR; ++r) {
      float* row = c + r * ldc;
      if (add) {
        acc0[r] = hn::Add(acc0[r], hn::LoadU(df, row));
        acc1[r] = hn::Add(acc1[r], hn::LoadU(df, row + L));
      }
      hn::StoreU(acc0[r], df, row);
      hn::StoreU(acc1[r], df, row + L);
    }
    return;
  }
  float tile[kMR * 2 * (HWY_MAX_BYTES / sizeof(float))];  // [kMR][2L], edge tiles only
  for (int64_t r = 0; r < kMR; ++r) {
    hn::StoreU(acc0[r], df, tile + r * 2 * L);
    hn::StoreU(acc1[r], df, tile + r * 2 * L + L);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      c[r * ldc + j] = add ? c[r * ldc + j] + tile[r * 2 * L + j] : tile[r * 2 * L + j];
}

template <class VA, class VB>
void BlockedGemm(float* c, const typename VA::Stored* a, const typename VB::Stored* b, const GemmShape& shape,
                 bool accumulate) {
  const Problem<VA, VB> p{c, a, b, shape, accumulate};
  const DF df;
  const int64_t nr = 2 * int64_t(hn::Lanes(df));
  const int64_t m = p.shape.m, n = p.shape.n, k = p.shape.k;
  const int64_t ldc = p.shape.ldc != 0 ? p.shape.ldc : n;
  const int64_t row_tiles = CeilDiv(m, kMR), panels = CeilDiv(n, nr);
  // A's block of depth, packed once by all threads and read by all.
  thread_local ScratchFloats a_scratch;
  float* const a_block = a_scratch.Get(size_t(row_tiles * kMR * kKC));  // [row_tiles][kc][kMR]
  // Small products are not worth waking the threads for.
  const bool parallel = 2.0 * double(m) * double(n) * double(k) >= 4e6;
#pragma omp parallel if (parallel)
  {
    thread_local ScratchFloats b_scratch;
    float* const b_panel = b_scratch.Get(size_t(kKC * nr));  // [kc][nr]
    const int64_t threads = omp_get_num_threads();
    // Work items are (row block, B panel), row blocks outermost: a thread
    // runs the panels of one row block, whose A stays in L2, each B panel
    // packed by the thread that uses it, into L1. Rows split further when
    // there are fewer panels than threads.
    const int64_t row_blocks =
        std::min(row_tiles, std::max(CeilDiv(row_tiles, kRowTilesPerBlock), CeilDiv(threads, panels)));
    const int64_t items = row_blocks * panels;
    for (int64_t pc = 0; pc < k; pc += kKC) {
      const int64_t kc = std::min(kKC, k - pc);
      const bool add = p.accumulate || pc > 0;
#pragma omp for schedule(static)
      for (int64_t t = 0; t < row_tiles; ++t) PackPanelA(p, pc, kc, t * kMR, a_block + t * kMR * kc);
        // (the loop's barrier: A's block is packed before anyone reads it)
#pragma omp for schedule(static)
      for (int64_t item = 0; item < items; ++item) {
        const int64_t block = item / panels, j = item % panels * nr;
        PackPanelB(p, pc, kc, j, nr, b_panel);
        const int64_t t_begin = row_tiles * block / row_blocks, t_end = row_tiles * (block + 1) / row_blocks;
        for (int64_t t = t_begin; t < t_end; ++t) {
          if (item + 1 < items) PrefetchPanelB(p, pc, kc, (item + 1) % panels * nr, nr, t - t_begin, t_end - t_begin);
          TileKernel(a_block + t * kMR * kc, b_panel, kc, p.c + t * kMR * ldc + j, ldc, std::min(kMR, m - t * kMR),
                     std::min(nr, n - j), add);
        }
      }
      // (the loop's barrier: nobody still reads A's block when it is repacked)
    }
  }
}

void BlockedGemmBF16(float* c, const uint16_t* a, const uint16_t* b, const GemmShape& shape, bool accumulate) {
  BlockedGemm<BF16Values, BF16Values>(c, a, b, shape, accumulate);
}
void BlockedGemmF32(float* c, const float* a, const float* b, const GemmShape& shape, bool accumulate) {
  BlockedGemm<F32Values, F32Values>(c, a, b, shape, accumulate);
}
void BlockedGemmF32ByBF16(float* c, const float* a, const uint16_t* b, const GemmShape& shape, bool accumulate) {
  BlockedGemm<F32Values, BF16Values>(c, a, b, shape, accumulate);
}
void BlockedGemmF32ByF16(float* c, const float* a, const uint16_t* b, const GemmShape& shape, bool accumulate) {
  BlockedGemm<F32Values, F16Values>(c, a, b, shape, accumulate);
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {

HWY_EXPORT(BlockedGemmBF16);
HWY_EXPORT(BlockedGemmF32);
HWY_EXPORT(BlockedGemmF32ByBF16);
HWY_EXPORT(BlockedGemmF32ByF16);

namespace {

void CheckOwnGemm(const char* what, const void* c, const void* a, const void* b, const GemmShape& s) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0)
    throw std::invalid_argument(std::string(what) + " matrix product sizes must be positive, got m=" +
                                std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k));
  if (!c || !a || !b) throw std::invalid_argument(std::string(what) + " matrix product: null buffer");
  if (s.ldc != 0 && s.ldc < s.n)
    throw std::invalid_argument(std::string(what) + " matrix product: C's row stride " + std::to_string(s.ldc) +
                                " is below its " + std::to_string(s.n) + " columns");
}

}  // namespace

void GemmBF16Swan(float* c, const uint16_t* a, const uint16_t* b, const GemmShape& s, bool accumulate) {
  CheckOwnGemm("bf16", c, a, b, s);
  HWY_DYNAMIC_DISPATCH(BlockedGemmBF16)(c, a, b, s, accumulate);
}

void GemmF32Swan(float* c, const float* a, const float* b, const GemmShape& s, bool accumulate) {
  CheckOwnGemm("float32", c, a, b, s);
  HWY_DYNAMIC_DISPATCH(BlockedGemmF32)(c, a, b, s, accumulate);
}

void GemmF32ByHalfSwan(float* c, const float* a, const uint16_t* b, HalfFormat b_format, const GemmShape& s,
                       bool accumulate) {
  CheckOwnGemm(b_format == HalfFormat::kF16 ? "float32 x f16" : "float32 x bf16", c, a, b, s);
  if (b_format == HalfFormat::kF16)
    HWY_DYNAMIC_DISPATCH(BlockedGemmF32ByF16)(c, a, b, s, accumulate);
  else
    HWY_DYNAMIC_DISPATCH(BlockedGemmF32ByBF16)(c, a, b, s, accumulate);
}

}  // namespace swan
#endif  // HWY_ONCE
