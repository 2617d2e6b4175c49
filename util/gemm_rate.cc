#include "util/gemm_rate.h"

#include <algorithm>
#include <chrono>
#include <dnnl.hpp>
#include <vector>

namespace swan {

double MeasureOneDnnGemmGflops(int64_t m, int64_t n, int64_t k, int repeats) {
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc a_md({m, k}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc b_md({k, n}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc c_md({m, n}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
  const dnnl::matmul matmul(pd);
  std::vector<float> a(size_t(m * k), 0.5f), b(size_t(k * n), 0.25f), c(size_t(m * n));  // [m,k] [k,n] [m,n]
  memory a_mem(a_md, engine, a.data()), b_mem(b_md, engine, b.data()), c_mem(c_md, engine, c.data());
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

}  // namespace swan
