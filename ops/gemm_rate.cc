#include "ops/gemm_rate.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <dnnl.hpp>
#include <vector>

#include "ops/bf16_gemm.h"
#include "ops/gemm.h"

namespace swan {
namespace {

// Best seconds of `repeats` runs of product(), after one warm-up run.
template <class Product>
double BestSeconds(int repeats, const Product& product) {
  double best = 1e30;
  for (int r = 0; r <= repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    product();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) best = std::min(best, s);
  }
  return best;
}

double Gflops(int64_t m, int64_t n, int64_t k, double seconds) {
  return 2.0 * double(m) * double(n) * double(k) / seconds * 1e-9;
}

// oneDNN's own primitive (not ops/gemm.h's, whose calls count toward a
// training run's matmul statistics).
double MeasureOneDnn(int64_t m, int64_t n, int64_t k, int repeats, bool bf16) {
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const auto in = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  const memory::desc a_md({m, k}, in, memory::format_tag::ab);
  const memory::desc b_md({k, n}, in, memory::format_tag::ab);
  const memory::desc c_md({m, n}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
  const dnnl::matmul matmul(pd);
  // Constant inputs 0.5 and 0.25, in f32 or as bf16 bits.
  std::vector<float> a(size_t(m * k), 0.5f), b(size_t(k * n), 0.25f),
      c(size_t(m * n));  // [m,k] [k,n] [m,n]
  std::vector<uint16_t> a16(bf16 ? a.size() : 0, 0x3f00), b16(bf16 ? b.size() : 0, 0x3e80);
  memory a_mem(a_md, engine, bf16 ? static_cast<void*>(a16.data()) : a.data());
  memory b_mem(b_md, engine, bf16 ? static_cast<void*>(b16.data()) : b.data());
  memory c_mem(c_md, engine, c.data());
  return Gflops(m, n, k, BestSeconds(repeats, [&] {
                  matmul.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
                  stream.wait();
                }));
}

}  // namespace

double MeasureOneDnnGemmGflops(int64_t m, int64_t n, int64_t k, int repeats) {
  return MeasureOneDnn(m, n, k, repeats, /*bf16=*/false);
}

BF16GemmRate MeasureBF16GemmGflops(int64_t m, int64_t n, int64_t k, int repeats) {
  if (OneDnnHasBF16Matmul()) return {MeasureOneDnn(m, n, k, repeats, /*bf16=*/true), true};
  // The layout of a linear layer's forward product (B = w stored [n, k]).
  std::vector<uint16_t> a(size_t(m * k), 0x3f00), b(size_t(k * n), 0x3e80);  // [m,k] [n,k]
  std::vector<float> c(size_t(m * n));                                       // [m,n]
  const GemmShape shape{m, n, k, false, true};
  return {Gflops(m, n, k, BestSeconds(repeats, [&] { GemmBF16Swan(c.data(), a.data(), b.data(), shape, false); })),
          false};
}

std::string BF16ProductName() {
  if (OneDnnHasBF16Matmul()) return "oneDNN bf16";
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!cap) cap = std::getenv("DNNL_MAX_CPU_ISA");
  return std::string("swan bf16 (oneDNN bf16: not in this CPU's hardware") +
         (cap ? std::string(" under MAX_CPU_ISA=") + cap : "") + ")";
}

}  // namespace swan
