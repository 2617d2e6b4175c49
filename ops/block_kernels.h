// The kernels behind BlockProduct (ops/block_product.h), one per ISA, each
// in a file of its own compiled for that ISA by function attributes. Not
// for use elsewhere: BlockProduct checks sizes and picks the kernel.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ops/block_product.h"

namespace swan::block_kernels {

// One product: y [m, w.n] (+)= x · wᵀ.
struct BlockJob {
  PackedBlocks w;
  QuantizedInput x;
  int64_t m = 0;
  float* y = nullptr;  // [m, w.n]
  bool accumulate = false;
};

// Output columns of groups [g_begin, g_end) for every input row.
void GroupsScalar(const BlockJob& job, int64_t g_begin, int64_t g_end);
#if defined(__x86_64__)
void GroupsAvx2(const BlockJob& job, int64_t g_begin, int64_t g_end);
void GroupsAvx512Vnni(const BlockJob& job, int64_t g_begin, int64_t g_end);
// QuantizeInput's rows with AVX2 (the same values as the scalar loop).
void QuantizeRowsAvx2(int8_t* q, float* d, int32_t* sum, const float* x, int64_t m, int64_t k);
#endif

// What a tile of input rows from `row` multiplies in group g.
struct GroupTileData {
  int64_t blocks = 0, k = 0;
  const uint8_t* payload = nullptr;  // [B, PackedPayloadBytes] the group's values
  const uint16_t* scales = nullptr;  // [B, 16] its scales (K-quants: [B / 8, 16], d)
  const uint16_t* mins = nullptr;  // [B, 16] its mins (Q4_1, Q5_1; Q4_K, Q5_K: [B / 8, 16], dmin; null for the others)
  const int8_t* sub_scales = nullptr;  // [B, 2, 16] (K-quants; null for the others)
  const int8_t* xq = nullptr;          // [rows, k] the input rows, quantized
  const float* xd = nullptr;           // [rows, B] their scales
  const int32_t* xs = nullptr;         // [rows, B] their blocks' sums
  const int32_t* xl = nullptr;         // [rows, B] the sums of their blocks' first 16 values (Q6_K)
};
inline GroupTileData TileData(const BlockJob& job, int64_t g, int64_t row) {
  const int64_t blocks = job.w.blocks();
  const bool six = job.w.type == WeightType::kQ6_K, super = IsSuperBlocked(job.w.type);
  const int64_t per_group = super ? blocks / 8 : blocks;  // scale vectors per group
  return {blocks,
          job.w.k,
          job.w.payload + size_t(g * blocks) * PackedPayloadBytes(job.w.type),
          job.w.scales + g * per_group * kPackedRows,
          job.w.mins ? job.w.mins + g * per_group * kPackedRows : nullptr,
          super ? job.w.sub_scales + g * blocks * 2 * kPackedRows : nullptr,
          job.x.q + row * job.w.k,
          job.x.d + row * blocks,
          job.x.sum + row * blocks,
          six ? job.x.sum_low + row * blocks : nullptr};
}

// How far ahead of the block it multiplies a kernel asks for the weights
// in decode: on its own the hardware prefetcher left the products out of
// cache 30-40% below the read bandwidth. A group read alone asks 8 KiB
// ahead; groups side by side 2 KiB, which read faster than 8 there
// (docs/performance.md).
constexpr uintptr_t kPrefetchBytes = 8192, kSideBySidePrefetchBytes = 2048;

// Asks for the cache lines of [p, p + bytes) + ahead; past the end of the
// weights a prefetch is ignored, so the address is formed as an integer.
inline void PrefetchLines(const void* p, int64_t bytes, uintptr_t ahead) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(p) + ahead;
  for (int64_t line = 0; line < bytes; line += 64) {
#if defined(__x86_64__)
    // g++ 12 at -O3 dropped every __builtin_prefetch of the prefetch function once
    // it asked for the scales too: as an instruction it stays.
    __asm__ volatile("prefetcht0 (%0)" : : "r"(at + line));
#else
    __builtin_prefetch(reinterpret_cast<const void*>(at + line));
#endif
  }
}

// Asks for the scales (and mins, sub-scales) of block b as many blocks
// ahead as the payload: they are streams of their own, which the hardware
// prefetcher gives up on at every 4 KiB page.
inline void PrefetchScalesAhead(const GroupTileData& t, int64_t b, int64_t payload_bytes, uintptr_t ahead) {
  const uintptr_t blocks_ahead = ahead / uintptr_t(payload_bytes);
  constexpr uintptr_t kScaleBytes = kPackedRows * sizeof(uint16_t);  // a scale per row of the group
  if (t.sub_scales) {  // K-quants: [B, 2, 16] int8 sub-scales, d and dmin per 8 blocks
    PrefetchLines(t.sub_scales + b * 2 * kPackedRows, 1, blocks_ahead * 2 * kPackedRows);
    if (b % 8 == 0) PrefetchLines(t.scales + b / 8 * kPackedRows, 1, blocks_ahead / 8 * kScaleBytes);
    if (b % 8 == 0 && t.mins) PrefetchLines(t.mins + b / 8 * kPackedRows, 1, blocks_ahead / 8 * kScaleBytes);
  } else {
    PrefetchLines(t.scales + b * kPackedRows, 1, blocks_ahead * kScaleBytes);
    if (t.mins) PrefetchLines(t.mins + b * kPackedRows, 1, blocks_ahead * kScaleBytes);
  }
}

// Asks for block b of groups t[0, kGroups), their payloads (payload_bytes
// each) and scales: one group kPrefetchBytes ahead; groups read side by side
// kSideBySidePrefetchBytes ahead, their payloads line by line in turn (line
// 0 of each group, then line 1, ...): 1.07-1.09x faster decode products
// than group after group 8 KiB ahead (docs/performance.md).
template <int kGroups>
inline void PrefetchGroups(const GroupTileData* t, int64_t b, int64_t payload_bytes) {
  constexpr uintptr_t kAhead = kGroups == 1 ? kPrefetchBytes : kSideBySidePrefetchBytes;
  for (int64_t line = 0; line < payload_bytes; line += 64)
    for (int i = 0; i < kGroups; ++i) PrefetchLines(t[i].payload + b * payload_bytes + line, 1, kAhead);
  for (int i = 0; i < kGroups; ++i) PrefetchScalesAhead(t[i], b, payload_bytes, kAhead);
}

// Writes a group's [rows, 16] results into y's columns below n.
inline void StoreGroup(const BlockJob& job, int64_t g, int64_t row, int64_t rows, const float* tile /*[rows, 16]*/) {
  const int64_t col = g * kPackedRows;
  const int64_t cols = job.w.n - col < kPackedRows ? job.w.n - col : kPackedRows;
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = job.y + (row + r) * job.w.n + col;
    const float* src = tile + r * kPackedRows;
    if (job.accumulate)
      for (int64_t c = 0; c < cols; ++c) dst[c] += src[c];
    else
      for (int64_t c = 0; c < cols; ++c) dst[c] = src[c];
  }
}

// The packed formats the SIMD kernels are instantiated for.
enum class Packed { kQ8_0, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ4_K, kQ5_K, kQ6_K };

// What a format's values need: a fifth bit beside the nibbles; a min per
// block (Q4_1-like, from the input's sum); the offset its values carry
// (Q4_0's nibbles are value + 8, Q5_0's value + 16).
constexpr bool HasFifthBit(Packed f) { return f == Packed::kQ5_0 || f == Packed::kQ5_1 || f == Packed::kQ5_K; }
constexpr bool HasBlockMin(Packed f) { return f == Packed::kQ4_1 || f == Packed::kQ5_1; }
constexpr int32_t NibbleOffset(Packed f) { return f == Packed::kQ4_0 ? 8 : f == Packed::kQ5_0 ? 16 : 0; }
// Whether a format's blocks add a min times the input's sum (Q4_1, Q5_1;
// Q4_K and Q5_K: -(dmin m)).
constexpr bool AddsMins(Packed f) { return HasBlockMin(f) || f == Packed::kQ4_K || f == Packed::kQ5_K; }

// The weight type a packed format holds (WithPacked's inverse), and the
// bytes of one of its group-blocks' payload (ops/packed_blocks.h).
constexpr WeightType TypeOf(Packed f) {
  switch (f) {
    case Packed::kQ8_0: return WeightType::kQ8_0;
    case Packed::kQ4_0: return WeightType::kQ4_0;
    case Packed::kQ4_1: return WeightType::kQ4_1;
    case Packed::kQ5_0: return WeightType::kQ5_0;
    case Packed::kQ5_1: return WeightType::kQ5_1;
    case Packed::kQ4_K: return WeightType::kQ4_K;
    case Packed::kQ5_K: return WeightType::kQ5_K;
    case Packed::kQ6_K: return WeightType::kQ6_K;
  }
  return WeightType::kQ8_0;
}
constexpr int64_t PayloadBytes(Packed f) { return int64_t(PackedPayloadBytes(TypeOf(f))); }

// Calls f(std::integral_constant<Packed, P>) for the matrix's format, so a
// kernel is compiled for each.
template <class F>
void WithPacked(WeightType type, const F& f) {
  if (type == WeightType::kQ4_0) return f(std::integral_constant<Packed, Packed::kQ4_0>{});
  if (type == WeightType::kQ4_1) return f(std::integral_constant<Packed, Packed::kQ4_1>{});
  if (type == WeightType::kQ5_0) return f(std::integral_constant<Packed, Packed::kQ5_0>{});
  if (type == WeightType::kQ5_1) return f(std::integral_constant<Packed, Packed::kQ5_1>{});
  if (type == WeightType::kQ4_K) return f(std::integral_constant<Packed, Packed::kQ4_K>{});
  if (type == WeightType::kQ5_K) return f(std::integral_constant<Packed, Packed::kQ5_K>{});
  if (type == WeightType::kQ6_K) return f(std::integral_constant<Packed, Packed::kQ6_K>{});
  f(std::integral_constant<Packed, Packed::kQ8_0>{});
}

// Runs tile(rows, g, row, out) over groups [g_begin, g_end) and the input
// rows in tiles of kTile (2 to 4; the last of fewer), rows a
// std::integral_constant, and stores each tile's out [rows, 16]. A group's
// weights are read once per tile of input rows, from cache after the first.
template <int kTile, class Tile>
void ForEachTile(const BlockJob& job, int64_t g_begin, int64_t g_end, const Tile& tile) {
  static_assert(kTile >= 2 && kTile <= 4);
  float out[kTile * kPackedRows];
  for (int64_t g = g_begin; g < g_end; ++g) {
    int64_t row = 0;
    for (; row + kTile <= job.m; row += kTile) {
      tile(std::integral_constant<int, kTile>{}, g, row, out);
      StoreGroup(job, g, row, kTile, out);
    }
    const int64_t left = job.m - row;
    if constexpr (kTile > 3)
      if (left == 3) tile(std::integral_constant<int, 3>{}, g, row, out);
    if constexpr (kTile > 2)
      if (left == 2) tile(std::integral_constant<int, 2>{}, g, row, out);
    if (left == 1) tile(std::integral_constant<int, 1>{}, g, row, out);
    if (left) StoreGroup(job, g, row, left, out);
  }
}

}  // namespace swan::block_kernels
