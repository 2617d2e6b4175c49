#include "ops/bf16_gemm.h"

#include <hwy/aligned_allocator.h>
#include <omp.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "util/bf16.h"
#include "util/scratch.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/bf16_gemm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

// Blocking (Goto/BLIS): a register tile is kMR rows by NR = 2 vectors of
// columns; 6 x 2 accumulators are the most that 16 AVX2 registers hold
// beside two B vectors and a broadcast A value.
constexpr int64_t kMR = 6;
constexpr int64_t kKC = 256;   // depth of a block: an A panel (6 x 256 f32, 6 KB)
                               // and a B panel (256 x NR) stay in L1
constexpr int64_t kMC = 96;    // rows of A per packed block (96 x 256 f32 = 96 KB, L2)
constexpr int64_t kNC = 4096;  // columns of B per packed block (256 x 4096 f32 = 4 MB,
                               // shared by the threads; a multiple of every NR)

// T: uint16_t (bf16 bits) or float.
template <class T>
struct Problem {
  float* c;    // [m, ldc]
  const T* a;  // [m, k], or [k, m] when trans_a
  const T* b;  // [k, n], or [n, k] when trans_b
  GemmShape shape;
  bool accumulate;
};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// L contiguous values as float32 (bf16 promoted).
HWY_INLINE hn::Vec<DF> LoadF32(const uint16_t* p) {
  const DF df;
  const hn::RebindToUnsigned<DF> du32;
  const hn::Rebind<uint16_t, DF> du16;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p))));
}
HWY_INLINE hn::Vec<DF> LoadF32(const float* p) { return hn::LoadU(DF(), p); }

HWY_INLINE float ToF32(uint16_t bits) { return BF16ToF32(bits); }
HWY_INLINE float ToF32(float x) { return x; }

// op(B)[pc + kk][j0 + j] into panel[kk * nr + j] (kk < kc, j < nr),
// zero for columns past n.   panel [kc][nr] f32
template <class T>
void PackPanelB(const Problem<T>& p, int64_t pc, int64_t kc, int64_t j0, int64_t nr, float* panel) {
  const int64_t n = p.shape.n, k = p.shape.k;
  const int64_t cols = std::min(nr, n - j0);
  if (p.shape.trans_b) {  // stored [n, k]: column j of op(B) is storage row j
    for (int64_t j = 0; j < cols; ++j) {
      const T* row = p.b + (j0 + j) * k + pc;  // [kc]
      for (int64_t kk = 0; kk < kc; ++kk) panel[kk * nr + j] = ToF32(row[kk]);
    }
  } else {  // stored [k, n]: each panel row is contiguous
    const DF df;
    const int64_t L = int64_t(hn::Lanes(df));
    for (int64_t kk = 0; kk < kc; ++kk) {
      const T* row = p.b + (pc + kk) * n + j0;  // [cols]
      float* dst = panel + kk * nr;
      if (cols == nr) {
        for (int64_t j = 0; j < nr; j += L) hn::Store(LoadF32(row + j), df, dst + j);
      } else {
        for (int64_t j = 0; j < cols; ++j) dst[j] = ToF32(row[j]);
      }
    }
  }
  for (int64_t kk = 0; cols < nr && kk < kc; ++kk) std::fill(panel + kk * nr + cols, panel + (kk + 1) * nr, 0.0f);
}

// op(A)[i0 + r][pc + kk] into panel[kk * kMR + r], zero for rows past m.
//   panel [kc][kMR] f32
template <class T>
void PackPanelA(const Problem<T>& p, int64_t pc, int64_t kc, int64_t i0, float* panel) {
  const int64_t m = p.shape.m, k = p.shape.k;
  const int64_t rows = std::min(kMR, m - i0);
  if (!p.shape.trans_a) {  // stored [m, k]
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = p.a + (i0 + r) * k + pc;  // [kc]
      for (int64_t kk = 0; kk < kc; ++kk) panel[kk * kMR + r] = ToF32(row[kk]);
    }
  } else {  // stored [k, m]: the panel's rows are contiguous
    for (int64_t kk = 0; kk < kc; ++kk) {
      const T* src = p.a + (pc + kk) * m + i0;  // [rows]
      for (int64_t r = 0; r < rows; ++r) panel[kk * kMR + r] = ToF32(src[r]);
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

template <class T>
void BlockedGemm(float* c, const T* a, const T* b, const GemmShape& shape, bool accumulate) {
  const Problem<T> p{c, a, b, shape, accumulate};
  const DF df;
  const int64_t nr = 2 * int64_t(hn::Lanes(df));
  const int64_t m = p.shape.m, n = p.shape.n, k = p.shape.k;
  const int64_t ldc = p.shape.ldc != 0 ? p.shape.ldc : n;
  const int64_t nc_max = std::min(kNC, CeilDiv(n, nr) * nr);
  // [nc_max / nr panels][kc][nr], packed once per (jc, pc) block by all threads
  thread_local ScratchFloats b_scratch;
  float* const b_block = b_scratch.Get(size_t(kKC * nc_max));
  // Small products are not worth waking the threads for.
  const bool parallel = 2.0 * double(m) * double(n) * double(k) >= 4e6;
#pragma omp parallel if (parallel)
  {
    thread_local ScratchFloats a_scratch;
    float* const a_block = a_scratch.Get(size_t(kMC * kKC));  // [kMC/kMR][kc][kMR]
    const int64_t threads = omp_get_num_threads();
    // Row blocks of whole register tiles, as equal as they can be and a
    // multiple of the threads in number, so that no thread waits on another.
    const int64_t row_tiles = CeilDiv(m, kMR);
    const int64_t m_blocks = std::min(row_tiles, CeilDiv(CeilDiv(row_tiles, kMC / kMR), threads) * threads);
    for (int64_t jc = 0; jc < n; jc += nc_max) {
      const int64_t nc = std::min(nc_max, n - jc), panels = CeilDiv(nc, nr);
      // Work items are (row block, run of B panels): when there are fewer
      // row blocks than threads, the columns are split too.
      const int64_t chunks = std::min(panels, CeilDiv(threads, m_blocks));
      const int64_t panels_per_chunk = CeilDiv(panels, chunks);
      const int64_t items = m_blocks * chunks;
      for (int64_t pc = 0; pc < k; pc += kKC) {
        const int64_t kc = std::min(kKC, k - pc);
        const bool add = p.accumulate || pc > 0;
#pragma omp for schedule(static)
        for (int64_t q = 0; q < panels; ++q) PackPanelB(p, pc, kc, jc + q * nr, nr, b_block + q * kc * nr);
        // (the loop's barrier: B's block is packed before anyone reads it)
        int64_t packed_ic = -1;  // the row block in a_block
#pragma omp for schedule(static)
        for (int64_t item = 0; item < items; ++item) {
          const int64_t block = item / chunks;
          const int64_t ic = row_tiles * block / m_blocks * kMR;
          const int64_t mc = std::min(m, row_tiles * (block + 1) / m_blocks * kMR) - ic;
          if (ic != packed_ic) {
            for (int64_t ir = 0; ir < mc; ir += kMR) PackPanelA(p, pc, kc, ic + ir, a_block + ir * kc);
            packed_ic = ic;
          }
          const int64_t q_begin = item % chunks * panels_per_chunk;
          const int64_t q_end = std::min(panels, q_begin + panels_per_chunk);
          for (int64_t q = q_begin; q < q_end; ++q) {  // a B panel stays in L1 ...
            const int64_t j = jc + q * nr;
            for (int64_t ir = 0; ir < mc; ir += kMR)  // ... while A's panels stream from L2
              TileKernel(a_block + ir * kc, b_block + q * kc * nr, kc, p.c + (ic + ir) * ldc + j, ldc,
                         std::min(kMR, mc - ir), std::min(nr, n - j), add);
          }
        }
        // (the loop's barrier: nobody still reads B's block when it is repacked)
      }
    }
  }
}

void BlockedGemmBF16(float* c, const uint16_t* a, const uint16_t* b, const GemmShape& shape, bool accumulate) {
  BlockedGemm(c, a, b, shape, accumulate);
}
void BlockedGemmF32(float* c, const float* a, const float* b, const GemmShape& shape, bool accumulate) {
  BlockedGemm(c, a, b, shape, accumulate);
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {

HWY_EXPORT(BlockedGemmBF16);
HWY_EXPORT(BlockedGemmF32);

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

}  // namespace swan
#endif  // HWY_ONCE
