// The best SIMD target Highway may dispatch to, capped from the
// environment: SWAN_SIMD_TARGET=AVX2 makes an AVX-512 or AMX machine run
// the kernels an AVX2-only CPU runs (CI's second test pass does this, with
// oneDNN capped by DNNL_MAX_CPU_ISA=AVX2, so that a bigger build machine
// fails where an AVX2 user would).
#pragma once

#include <cstdint>
#include <string>

namespace swan {

// Disables every Highway target better than SWAN_SIMD_TARGET (AVX3_DL,
// AVX3, AVX2, SSE4, SSSE3, EMU128, SCALAR; unset: no cap). Throws
// std::invalid_argument on another name. Call before the first kernel.
void ApplySimdTargetCap();

// The target the kernels dispatch to now, e.g. "AVX2".
std::string DispatchedSimdTarget();
// Its bit (HWY_AVX2, ...), through Highway's dispatch table: cheap enough
// to ask before every kernel call (hwy::SupportedTargets asks the CPU).
int64_t DispatchedSimdTargetBit();
// Whether kernels may use AVX-512 BF16's dot products (vdpbf16ps) now: the
// CPU has them and the dispatch is AVX3 or AVX3_DL (not capped below).
// Highway 1.0.3 has no op for them, so such kernels use intrinsics.
bool AvxBF16DotsHere();
// Every target this binary was compiled for, best first ("AVX3_DL AVX3 ...").
std::string CompiledSimdTargets();

}  // namespace swan
