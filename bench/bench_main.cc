// main() of the kernel benchmarks: SWAN_SIMD_TARGET caps Highway's dispatch
// here as in the swan program (DNNL_MAX_CPU_ISA caps oneDNN by itself), so
// that `SWAN_SIMD_TARGET=AVX2 DNNL_MAX_CPU_ISA=AVX2 build/bench/gemm_bench`
// measures what an AVX2-only CPU runs.
#include <benchmark/benchmark.h>

#include "util/simd_target.h"

int main(int argc, char** argv) {
  swan::ApplySimdTargetCap();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
