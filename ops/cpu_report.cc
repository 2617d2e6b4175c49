#include "ops/cpu_report.h"

#include <hwy/highway.h>  // HWY_MAJOR, HWY_MINOR, HWY_PATCH

#include <cstdlib>
#include <fstream>
#include <oneapi/dnnl/dnnl.hpp>
#include <set>
#include <sstream>
#include <string>

#include "ops/block_product.h"
#include "ops/gemm.h"
#include "ops/gemm_rate.h"
#include "util/simd_target.h"
#include "util/threads.h"

namespace swan {
namespace {

// "model name" and the flags of the first processor in /proc/cpuinfo.
void ReadCpuInfo(std::string* model, std::set<std::string>* flags) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && model->empty()) *model = value;
    if (key == "flags" && flags->empty()) {
      std::istringstream words(value);
      for (std::string w; words >> w;) flags->insert(w);
    }
  }
}

const char* IsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "SSE4.1";
    case dnnl::cpu_isa::avx: return "AVX";
    case dnnl::cpu_isa::avx2: return "AVX2";
    case dnnl::cpu_isa::avx2_vnni: return "AVX2 VNNI";
    case dnnl::cpu_isa::avx512_mic: return "AVX-512 MIC";
    case dnnl::cpu_isa::avx512_mic_4ops: return "AVX-512 MIC 4ops";
    case dnnl::cpu_isa::avx512_core: return "AVX-512";
    case dnnl::cpu_isa::avx512_core_vnni: return "AVX-512 VNNI";
    case dnnl::cpu_isa::avx512_core_bf16: return "AVX-512 BF16";
    case dnnl::cpu_isa::avx512_core_amx: return "AVX-512 AMX";
    default: return "all";
  }
}

}  // namespace

std::string CpuReport() {
  std::string model;
  std::set<std::string> flags;
  ReadCpuInfo(&model, &flags);
  std::string have, lack;
  for (const char* f :
       {"sse4_1", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_bf16"})
    (flags.count(f) ? have : lack) += std::string(" ") + f;
  const dnnl_version_t* v = dnnl_version();
  const char* isa_cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!isa_cap) isa_cap = std::getenv("DNNL_MAX_CPU_ISA");
  const char* simd_cap = std::getenv("SWAN_SIMD_TARGET");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::ostringstream out;
  out << "cpu: " << (model.empty() ? "unknown" : model) << "\n"
      << "cpu features:" << (have.empty() ? " (none of these)" : have) << (lack.empty() ? "" : "; not:" + lack) << "\n"
      << "simd: Highway " << HWY_MAJOR << "." << HWY_MINOR << "." << HWY_PATCH << ", kernels run "
      << DispatchedSimdTarget() << " (compiled: " << CompiledSimdTargets() << ")"
      << (simd_cap ? std::string(", capped by SWAN_SIMD_TARGET=") + simd_cap : "") << "\n"
      << "onednn: " << v->major << "." << v->minor << "." << v->patch << ", ISA "
      << IsaName(dnnl::get_effective_cpu_isa())
      << (isa_cap ? std::string(" (capped by MAX_CPU_ISA=") + isa_cap + ")" : "") << "\n"
      << "bf16 products: " << BF16ProductName()
      << (OneDnnHasBF16Matmul() ? "" : ", its kernel on Highway " + DispatchedSimdTarget()) << "\n"
      << "q8_0/q4_0 products: " << BlockKernelName(BestBlockKernel()) << " integer kernel"
      << (OneDnnHasBF16Matmul()
              ? "; f16 and bf16 prefill in bf16"
              : (OneDnnHasAvx512() ? "; f16 and bf16 prefill in float32 (widened for oneDNN)"
                                   : "; f16 and bf16 prefill in float32 (widened as packed, swan's own)"))
      << "\n"
      << "bf16 KV decode: "
      << (AvxBF16DotsHere() ? "AVX-512 BF16 dot products (queries, probabilities in bf16)"
                            : "float32 on Highway " + DispatchedSimdTarget())
      << "\n"
      << "threads: " << ThreadLimit() << " (fewer while other programs keep the cores busy; OpenMP "
      << (policy ? std::string("OMP_WAIT_POLICY=") + policy
                 : std::string("GOMP_SPINCOUNT=") + (spin ? spin : "default"))
      << ")\n";
  return out.str();
}

}  // namespace swan
