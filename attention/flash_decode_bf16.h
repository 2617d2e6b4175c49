// Decode over a bf16 KV view with the CPU's bf16 dot products (AVX-512
// BF16: Zen 4 and later, Cooper Lake, Sapphire Rapids). vdpbf16ps multiplies
// 32 bf16 pairs into 16 float32 sums in one instruction, where the float32
// kernel (flash_decode.cc) widens K and V to float32 first and needs two
// multiply-adds per 32 values. Its price is precision: the queries (times
// nothing: the logit scale is applied to the float32 scores) and the
// softmax probabilities are rounded to bf16 before they are multiplied;
// scores, the softmax and every sum stay float32. Decode with `--kv f32`,
// or on any other CPU, computes in float32 throughout.
#pragma once

#include <cstdint>

#include "attention/attention.h"
#include "attention/flash_plan.h"

namespace swan {

// Whether Attend(args) runs RunDecodeTaskBf16Dot here: a decode call (at
// most kDecodeMaxRows rows per KV head), a bf16 view, head_dim a multiple
// of 32, a CPU with AVX-512 BF16 and the kernels' dispatch not capped below
// AVX-512 (SWAN_SIMD_TARGET).
bool DecodeRunsBf16Dot(const AttentionArgs& args);

// Decode task `t` of `plan` (a bf16 view, DecodeRunsBf16Dot) with bf16 dot
// products; hands its rows' softmax states to plan.StoreRow.
void RunDecodeTaskBf16Dot(const FlashPlan& plan, const FlashTask& t);

// flash_decode.cc's online-softmax step (Highway-dispatched), for the bf16
// kernel: per row r of S [rows][kBlockKeys] over keys [0, n_keys) (masked
// ones -inf), the new max m[r], alpha[r] = e^{m_old - m} and l[r]; S
// becomes the probabilities e^{s - m}, 0 past n_keys up to a multiple of 16.
void DecodeSoftmaxBlock(float* s, int64_t n_keys, int64_t rows, float* m, float* l, float* alpha);

}  // namespace swan
