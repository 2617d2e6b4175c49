#include "util/gemm_rate.h"

#include <algorithm>
#include <cstdint>
#include <chrono>
#include <dnnl.hpp>
#include <vector>

namespace swan {

namespace {

double Measure(int64_t m, int64_t n, int64_t k, int repeats, bool bf16) {
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
  std::vector<float> a(size_t(m * k), 0.5f), b(size_t(k * n), 0.25f), c(size_t(m * n));  // [m,k] [k,n] [m,n]
  std::vector<uint16_t> a16(bf16 ? a.size() : 0, 0x3f00), b16(bf16 ? b.size() : 0, 0x3e80);
  memory a_mem(a_md, engine, bf16 ? static_cast<void*>(a16.data()) : a.data());
  memory b_mem(b_md, engine, bf16 ? static_cast<void*>(b16.data()) : b.data());
  memory c_mem(c_md, engine, c.data());
  double best = 1e30;
  for (int r = 0; r <= repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    matmul.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    stream.wait();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) best = std::min(best, s);  // run 0 warms up
  }
  return 2.0 * double(m) * double(n) * double(k) / best * 1e-9;
}

}  // namespace

double MeasureOneDnnGemmGflops(int64_t m, int64_t n, int64_t k, int repeats) {
  return Measure(m, n, k, repeats, /*bf16=*/false);
}

double MeasureOneDnnGemmGflopsBF16(int64_t m, int64_t n, int64_t k, int repeats) {
  return Measure(m, n, k, repeats, /*bf16=*/true);
}

}  // namespace swan
