#include "ops/block_product.h"

#include <hwy/targets.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "ops/block_kernels.h"
#include "ops/linear.h"
#include "util/f16.h"
#include "util/parallel_ranges.h"
#include "util/simd_target.h"

namespace swan {

const char* BlockKernelName(BlockKernel kernel) {
  switch (kernel) {
    case BlockKernel::kScalar: return "C++";
    case BlockKernel::kAvx2: return "AVX2";
    case BlockKernel::kAvx512Vnni: return "AVX-512 VNNI";
  }
  return "?";
}

namespace {

// What the CPU has, asked once.
struct CpuKernels {
  bool avx2 = false, avx512_vnni = false;
  CpuKernels() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    avx512_vnni = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#endif
  }
};
const CpuKernels& Cpu() {
  static const CpuKernels cpu;
  return cpu;
}

}  // namespace

std::vector<BlockKernel> BlockKernelsHere() {
  std::vector<BlockKernel> kernels = {BlockKernel::kScalar};
  if (Cpu().avx2) kernels.push_back(BlockKernel::kAvx2);
  if (Cpu().avx512_vnni) kernels.push_back(BlockKernel::kAvx512Vnni);
  return kernels;
}

BlockKernel BestBlockKernel() {
  // Highway's dispatch carries SWAN_SIMD_TARGET's cap (util/simd_target.h):
  // below AVX3 no AVX-512, below AVX2 plain C++.
  const int64_t target = DispatchedSimdTargetBit();
  if (Cpu().avx512_vnni && (target == HWY_AVX3 || target == HWY_AVX3_DL)) return BlockKernel::kAvx512Vnni;
  if (Cpu().avx2 && (target == HWY_AVX2 || target == HWY_AVX3 || target == HWY_AVX3_DL)) return BlockKernel::kAvx2;
  return BlockKernel::kScalar;
}

namespace {

void QuantizeRowsScalar(int8_t* q, float* d, int32_t* sum, const float* x, int64_t m, int64_t k) {
  for (int64_t b = 0; b < m * k / kQuantBlockValues; ++b, x += kQuantBlockValues, q += kQuantBlockValues) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    d[b] = amax / 127.0f;
    const float id = amax != 0 ? 127.0f / amax : 0.0f;
    int32_t s = 0;
    for (int i = 0; i < 32; ++i) {
      q[i] = int8_t(std::nearbyint(x[i] * id));
      s += q[i];
    }
    sum[b] = s;
  }
}

void RequireSizes(const float* y, const PackedBlocks& w, int64_t m) {
  if (!y || !w.payload) throw std::invalid_argument("block product: null buffer");
  if (m < 1 || w.n < 1 || w.k < 1 || !IsBlockQuantized(w.type) || !RowFits(w.type, w.k))
    throw std::invalid_argument("block product: " + std::string(WeightTypeName(w.type)) + " [" + std::to_string(w.n) +
                                ", " + std::to_string(w.k) + "] with " + std::to_string(m) + " input rows");
}

}  // namespace

void QuantizeInput(int8_t* q, float* d, int32_t* sum, const float* x, int64_t m, int64_t k) {
  if (k % kQuantBlockValues != 0)
    throw std::invalid_argument("QuantizeInput: rows of " + std::to_string(k) + " values (a multiple of 32)");
#if defined(__x86_64__)
  if (BestBlockKernel() != BlockKernel::kScalar) {
    ParallelRanges(m, 64, [&](int64_t begin, int64_t end) {
      const int64_t b0 = begin * k / kQuantBlockValues;
      block_kernels::QuantizeRowsAvx2(q + begin * k, d + b0, sum + b0, x + begin * k, end - begin, k);
    });
    return;
  }
#endif
  QuantizeRowsScalar(q, d, sum, x, m, k);
}

void SumLowHalves(int32_t* sum_low, const int8_t* q, int64_t m, int64_t k) {
  for (int64_t b = 0; b < m * k / kQuantBlockValues; ++b, q += kQuantBlockValues) {
    int32_t s = 0;
    for (int i = 0; i < 16; ++i) s += q[i];
    sum_low[b] = s;
  }
}

namespace block_kernels {

void GroupsScalar(const BlockJob& job, int64_t g_begin, int64_t g_end) {
  const PackedBlocks& w = job.w;
  const int64_t blocks = w.blocks(), k = w.k;
  const size_t payload_bytes = PackedPayloadBytes(w.type);
  float tile[kPackedRows];  // [16] one input row's results for the group
  for (int64_t g = g_begin; g < g_end; ++g)
    for (int64_t r = 0; r < job.m; ++r) {
      for (int64_t j = 0; j < kPackedRows; ++j) {
        float acc = 0;
        for (int64_t b = 0; b < blocks; ++b) {
          const uint8_t* in = w.payload + size_t(g * blocks + b) * payload_bytes + size_t(j) * 4;
          const int8_t* xq = job.x.q + r * k + b * kQuantBlockValues;  // [32]
          const float xd = job.x.d[r * blocks + b];
          if (w.type == WeightType::kQ6_K) {
            int32_t dot = 0;
            for (int h = 0; h < 2; ++h) {
              int32_t half = 0;  // values 16h .. 16h + 15
              for (int c = 0; c < 4; ++c)
                for (int i = 0; i < 4; ++i) {
                  const int q = (in[c * 64 + i] >> (4 * h) & 15) | (in[256 + h * 64 + i] >> (2 * c) & 3) << 4;
                  half += (q - 32) * xq[16 * h + 4 * c + i];
                }
              dot += half * w.sub_scales[((g * blocks + b) * 2 + h) * kPackedRows + j];
            }
            acc += float(dot) * (F16ToF32(w.scales[(g * (blocks / 8) + b / 8) * kPackedRows + j]) * xd);
            continue;
          }
          // Q4_0's nibbles are value + 8, Q5_0's value + 16; Q4_1's, Q5_1's and the K-quants' are the values
          const int offset = w.type == WeightType::kQ4_0 ? 8 : w.type == WeightType::kQ5_0 ? 16 : 0;
          const bool five = w.type == WeightType::kQ5_K || w.type == WeightType::kQ5_0 || w.type == WeightType::kQ5_1;
          int32_t dot = 0;
          for (int c = 0; c < (w.type == WeightType::kQ8_0 ? 8 : 4); ++c)
            for (int i = 0; i < 4; ++i) {
              const uint8_t byte = in[c * 64 + i];
              if (w.type == WeightType::kQ8_0) {
                dot += int8_t(byte) * xq[4 * c + i];
              } else {
                const int top = five ? in[256 + i] : 0;  // Q5_x's fifth bits
                dot += (int((byte & 0xf) | (top >> c & 1) << 4) - offset) * xq[4 * c + i];
                dot += (int((byte >> 4) | (top >> (4 + c) & 1) << 4) - offset) * xq[16 + 4 * c + i];
              }
            }
          const int64_t at = (g * blocks + b) * kPackedRows + j;
          float scale = 0, min = 0;
          if (w.type == WeightType::kQ4_K || w.type == WeightType::kQ5_K) {  // d sc and -(dmin m)
            const int64_t super = (g * (blocks / 8) + b / 8) * kPackedRows + j;
            const uint8_t* sub =
                reinterpret_cast<const uint8_t*>(w.sub_scales) + (g * blocks + b) * 2 * kPackedRows + j;
            scale = F16ToF32(w.scales[super]) * float(sub[0]);
            min = -(F16ToF32(w.mins[super]) * float(sub[kPackedRows]));
          } else {
            scale = F16ToF32(w.scales[at]);
            min = w.mins ? F16ToF32(w.mins[at]) : 0.0f;
          }
          acc += float(dot) * (scale * xd);
          // Q4_1, Q5_1, Q4_K, Q5_K: + m Σ x, the block's input sum times its scale
          if (w.mins) acc += min * (xd * float(job.x.sum[r * blocks + b]));
        }
        tile[j] = acc;
      }
      StoreGroup(job, g, r, 1, tile);
    }
}

}  // namespace block_kernels

namespace {

// Every output's groups as one range [0, total) shared among the threads,
// so that small matrices (k and v of a GQA layer) do not each pay for a
// parallel region, and the input is quantized once.
void RunProducts(BlockKernel kernel, const QuantizedInput& x, int64_t m, const BlockOutput* outs, int64_t count,
                 bool accumulate) {
  std::vector<int64_t> first(size_t(count) + 1, 0);  // [count + 1] each output's first group in the range
  int64_t work = 0;
  for (int64_t i = 0; i < count; ++i) {
    RequireSizes(outs[i].y, outs[i].w, m);
    if (outs[i].w.k != outs[0].w.k) throw std::invalid_argument("block products: inputs of different lengths");
    first[size_t(i) + 1] = first[size_t(i)] + PackedGroups(outs[i].w.n);
    work += outs[i].w.n * outs[i].w.k * m;
  }
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t g_begin = std::max(begin, first[size_t(i)]) - first[size_t(i)];
      const int64_t g_end = std::min(end, first[size_t(i) + 1]) - first[size_t(i)];
      if (g_begin >= g_end) continue;
      const block_kernels::BlockJob job{outs[i].w, x, m, outs[i].y, accumulate};
      switch (kernel) {
#if defined(__x86_64__)
        case BlockKernel::kAvx512Vnni: block_kernels::GroupsAvx512Vnni(job, g_begin, g_end); break;
        case BlockKernel::kAvx2: block_kernels::GroupsAvx2(job, g_begin, g_end); break;
#endif
        default: block_kernels::GroupsScalar(job, g_begin, g_end); break;
      }
    }
  };
  // Pieces of about 8 per thread. Each thread owns 8 in a row, one run of
  // memory, and then helps with the others': on a machine shared with other
  // programs a thread can lose its core for a while, and the others then
  // take its pieces instead of waiting for it. Handing every piece out as
  // threads come free (schedule(dynamic, 1)) did that too, but decoded the
  // side by side's Llama Q8_0 and Q4_0 at 0.92x this speed (6 alternated
  // runs each, Zen 4, 2 threads).
  const int64_t total = first.back();
  const int64_t threads = work >= 65536 ? omp_get_max_threads() : 1;
  if (threads == 1) return run(0, total);
  const int64_t piece = std::max<int64_t>(1, total / (8 * threads));
  const int64_t pieces = (total + piece - 1) / piece;
  std::vector<int64_t> bounds(size_t(threads) + 1);  // [threads + 1] each thread's first piece
  for (int64_t t = 0; t <= threads; ++t) bounds[size_t(t)] = pieces * t / threads;
  const RegionThreads on = m <= kGemvMaxRows ? RegionThreads::kSpinTeam : RegionThreads::kOpenMp;  // decode or prefill
  ForEachOwnedFirst(bounds.data(), int(threads), on,
                    [&](int64_t p) { run(p * piece, std::min(total, (p + 1) * piece)); });
}

}  // namespace

void BlockProductWith(BlockKernel kernel, float* y, const QuantizedInput& x, const PackedBlocks& w, int64_t m,
                      bool accumulate) {
  const BlockOutput out{y, w};
  RunProducts(kernel, x, m, &out, 1, accumulate);
}

void BlockProducts(const float* x, int64_t m, const BlockOutput* outs, int64_t count, bool accumulate) {
  if (count < 1) return;
  RequireSizes(outs[0].y, outs[0].w, m);
  if (!x) throw std::invalid_argument("block product: null input");
  const int64_t k = outs[0].w.k;
  thread_local std::vector<int8_t> q;         // [m, k]
  thread_local std::vector<float> d;          // [m, k / 32]
  thread_local std::vector<int32_t> sum;      // [m, k / 32]
  thread_local std::vector<int32_t> sum_low;  // [m, k / 32]
  const size_t values = size_t(m * k), blocks = values / kQuantBlockValues;
  if (q.size() < values) q.resize(values);
  if (d.size() < blocks) d.resize(blocks), sum.resize(blocks), sum_low.resize(blocks);
  QuantizeInput(q.data(), d.data(), sum.data(), x, m, k);
  bool six = false;
  for (int64_t i = 0; i < count; ++i) six = six || outs[i].w.type == WeightType::kQ6_K;
  if (six) SumLowHalves(sum_low.data(), q.data(), m, k);
  RunProducts(BestBlockKernel(), QuantizedInput{q.data(), d.data(), sum.data(), sum_low.data()}, m, outs, count,
              accumulate);
}

void BlockProduct(float* y, const float* x, const PackedBlocks& w, int64_t m, bool accumulate) {
  const BlockOutput out{y, w};
  BlockProducts(x, m, &out, 1, accumulate);
}

}  // namespace swan
