#include "ops/matmul.h"

#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <string>
#include <tuple>

namespace swan {
namespace {

using dnnl::memory;

struct Key {
  int64_t m, n, k;
  bool accumulate;
  bool bf16;  // x and w in bfloat16 (y stays float32)
  bool operator<(const Key& o) const {
    return std::tie(m, n, k, accumulate, bf16) < std::tie(o.m, o.n, o.k, o.accumulate, o.bf16);
  }
};

struct Entry {
  memory::desc x_md, w_md, y_md;
  dnnl::matmul prim;
};

// One CPU engine and a cache of primitives by shape.
class MatmulCache {
 public:
  MatmulCache() : engine_(dnnl::engine::kind::cpu, 0) {}

  void Run(float* y, const void* x, const void* w, const Key& key) {
    const Entry* e;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it == cache_.end()) it = cache_.emplace(key, Build(key)).first;
      e = &it->second;  // std::map nodes are stable
    }
    dnnl::stream stream(engine_);
    memory x_mem(e->x_md, engine_, const_cast<void*>(x));
    memory w_mem(e->w_md, engine_, const_cast<void*>(w));
    memory y_mem(e->y_md, engine_, y);
    e->prim.execute(stream, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DST, y_mem}});
    stream.wait();
  }

 private:
  Entry Build(const Key& key) const {
    const auto f32 = memory::data_type::f32;
    const auto in = key.bf16 ? memory::data_type::bf16 : f32;
    Entry e;
    e.x_md = memory::desc({key.m, key.k}, in, memory::format_tag::ab);
    // w is [n, k] row-major, i.e. the [k, n] operand stored transposed.
    e.w_md = memory::desc({key.k, key.n}, in, memory::format_tag::ba);
    e.y_md = memory::desc({key.m, key.n}, f32, memory::format_tag::ab);
    dnnl::primitive_attr attr;
    if (key.accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::desc desc(e.x_md, e.w_md, e.y_md);
    dnnl::matmul::primitive_desc pd(desc, attr, engine_);
    e.prim = dnnl::matmul(pd);
    return e;
  }

  dnnl::engine engine_;
  std::mutex mu_;
  std::map<Key, Entry> cache_;
};

MatmulCache& Cache() {
  static MatmulCache cache;
  return cache;
}

void CheckShape(const MatmulShape& s) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0)
    throw std::invalid_argument("matmul sizes must be positive, got m=" + std::to_string(s.m) +
                                " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k));
}

}  // namespace

void MatmulTransB(float* y, const float* x, const float* w, const MatmulShape& shape,
                  bool accumulate) {
  CheckShape(shape);
  Cache().Run(y, x, w, Key{shape.m, shape.n, shape.k, accumulate, false});
}

void MatmulTransBBF16(float* y, const uint16_t* x, const uint16_t* w, const MatmulShape& shape,
                      bool accumulate) {
  CheckShape(shape);
  Cache().Run(y, x, w, Key{shape.m, shape.n, shape.k, accumulate, true});
}

void MatmulTransBReference(float* y, const float* x, const float* w, const MatmulShape& shape,
                           bool accumulate) {
  CheckShape(shape);
  for (int64_t i = 0; i < shape.m; ++i)
    for (int64_t j = 0; j < shape.n; ++j) {
      double acc = accumulate ? y[i * shape.n + j] : 0.0;
      for (int64_t c = 0; c < shape.k; ++c) acc += double(x[i * shape.k + c]) * w[j * shape.k + c];
      y[i * shape.n + j] = float(acc);
    }
}

}  // namespace swan
