#include "ops/gemm.h"

#include <atomic>
#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "ops/bf16_gemm.h"
#include "ops/bf16_round.h"
#include "util/threads.h"

namespace swan {
namespace {

using dnnl::memory;

struct Key {
  int64_t m, n, k;
  bool trans_a, trans_b, accumulate;
  bool bf16;    // A and B in bfloat16
  int64_t ldc;  // C's row stride
  bool operator<(const Key& o) const {
    return std::tie(m, n, k, trans_a, trans_b, accumulate, bf16, ldc) <
           std::tie(o.m, o.n, o.k, o.trans_a, o.trans_b, o.accumulate, o.bf16, o.ldc);
  }
};

struct Entry {
  memory::desc a_md, b_md, c_md;
  memory::desc scratch_md;  // the primitive's working memory, supplied per call
  dnnl::matmul prim;
};

// oneDNN's primitives by shape, the most recently used kept. Unbounded, it
// grew with every prompt length a server met: one primitive per (m, n, k),
// 60-100 KiB each, ~100 MB after a few hundred requests of random lengths
// (heaptrack, docs/serving.md "Memory"). A model has a handful of (n, k)
// shapes, so the cap keeps every shape of ~20 prompt lengths.
constexpr size_t kMaxCachedPrimitives = 128;

class GemmCache {
 public:
  GemmCache() : engine_(dnnl::engine::kind::cpu, 0) {
    // oneDNN keeps 1,024 primitives of its own behind this cache, which
    // held them after it dropped them; the primitives are kept here only.
    dnnl::set_primitive_cache_capacity(kMaxCachedPrimitives);
  }

  void Run(float* c, const void* a, const void* b, const Key& key) {
    std::shared_ptr<const Entry> e;  // held while it runs, evicted or not
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) {
        recent_.splice(recent_.begin(), recent_, it->second.recent);
      } else {
        if (cache_.size() >= kMaxCachedPrimitives) {
          cache_.erase(recent_.back());
          recent_.pop_back();
        }
        recent_.push_front(key);
        it = cache_.emplace(key, Slot{std::make_shared<const Entry>(Build(key)), recent_.begin()}).first;
      }
      e = it->second.entry;
    }
    // oneDNN's own scratchpad is one buffer shared by every primitive, so
    // two products at once (the server's prefills side by side) wrote over
    // each other's partial sums; each thread brings its own instead.
    struct alignas(64) Line {
      uint8_t bytes[64];
    };
    thread_local std::vector<Line> scratch;  // [scratch_md.get_size() / 64, rounded up]
    const size_t lines = (e->scratch_md.get_size() + sizeof(Line) - 1) / sizeof(Line);
    if (scratch.size() < lines) scratch.resize(lines);
    dnnl::stream stream(engine_);
    memory a_mem(e->a_md, engine_, const_cast<void*>(a));
    memory b_mem(e->b_md, engine_, const_cast<void*>(b));
    memory c_mem(e->c_md, engine_, c);
    memory scratch_mem(e->scratch_md, engine_, scratch.data());
    e->prim.execute(
        stream,
        {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}, {DNNL_ARG_SCRATCHPAD, scratch_mem}});
    stream.wait();
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return cache_.size();
  }

 private:
  Entry Build(const Key& key) const {
    const auto f32 = memory::data_type::f32;
    const auto in = key.bf16 ? memory::data_type::bf16 : f32;
    Entry e;
    // A transposed operand is the plain one with swapped strides.
    e.a_md = key.trans_a ? memory::desc({key.m, key.k}, in, memory::dims{1, key.m})
                         : memory::desc({key.m, key.k}, in, memory::dims{key.k, 1});
    e.b_md = key.trans_b ? memory::desc({key.k, key.n}, in, memory::dims{1, key.k})
                         : memory::desc({key.k, key.n}, in, memory::dims{key.n, 1});
    e.c_md = memory::desc({key.m, key.n}, f32, memory::dims{key.ldc, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (key.accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    // oneDNN fixes how a product is split among threads (the sums split
    // along k included) when it builds it, from the caller's thread count:
    // built at one count, the product's sums are the same whichever count
    // runs it (fewer while other programs are busy, one side by side).
    const int threads_before = omp_get_max_threads();
    omp_set_num_threads(ThreadLimit());
    struct Restore {
      int n;
      ~Restore() { omp_set_num_threads(n); }
    } restore{threads_before};
    try {
      dnnl::matmul::desc desc(e.a_md, e.b_md, e.c_md);
      dnnl::matmul::primitive_desc pd(desc, attr, engine_);
      e.scratch_md = pd.scratchpad_desc();
      e.prim = dnnl::matmul(pd);
    } catch (const dnnl::error& error) {  // say what failed, not only oneDNN's words
      throw std::runtime_error(std::string("oneDNN cannot build a ") + (key.bf16 ? "bf16" : "f32") +
                               " matrix product of " + std::to_string(key.m) + "x" + std::to_string(key.k) + " by " +
                               std::to_string(key.k) + "x" + std::to_string(key.n) + " on this CPU: " + error.what());
    }
    return e;
  }

  struct Slot {
    std::shared_ptr<const Entry> entry;
    std::list<Key>::iterator recent;  // its place in recent_
  };

  dnnl::engine engine_;
  std::mutex mu_;
  std::map<Key, Slot> cache_;
  std::list<Key> recent_;  // most recently used first
};

GemmCache& Cache() {
  static GemmCache cache;
  return cache;
}

std::mutex counters_mu;
GemmCounters counters;
std::atomic<bool> thread_invariant{false};

}  // namespace

namespace {

int64_t Ldc(const GemmShape& s) { return s.ldc != 0 ? s.ldc : s.n; }

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs product() and counts its flops and time.
template <class Product>
void RunCounted(const GemmShape& s, const Product& product) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0)
    throw std::invalid_argument("matrix product sizes must be positive, got m=" + std::to_string(s.m) +
                                " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k));
  if (s.ldc != 0 && s.ldc < s.n)
    throw std::invalid_argument("matrix product: C's row stride " + std::to_string(s.ldc) + " is below its " +
                                std::to_string(s.n) + " columns");
  const auto start = std::chrono::steady_clock::now();
  product();
  const double seconds = SecondsSince(start);
  std::lock_guard<std::mutex> lock(counters_mu);
  counters.flops += 2.0 * double(s.m) * double(s.n) * double(s.k);
  counters.seconds += seconds;
}

// Whether oneDNN runs on an ISA that has all of `isa`'s extensions (its
// dnnl_cpu_isa_t values are sets of bits, each ISA holding those below it).
bool OneDnnIsaHas(dnnl_cpu_isa_t isa) { return (int(dnnl::get_effective_cpu_isa()) & int(isa)) == int(isa); }

}  // namespace

size_t CachedGemmPrimitives() { return Cache().size(); }

bool OneDnnHasBF16Matmul() {
  // Asked once. oneDNN 2.6 builds bf16 products from AVX-512 up, but below
  // AVX-512 BF16 they are emulated, at about a third of its float32 rate
  // (docs/performance.md); DNNL_MAX_CPU_ISA caps a bigger CPU.
  static const bool has = [] {
    if (!OneDnnIsaHas(dnnl_cpu_isa_avx512_core_bf16)) return false;
    try {
      const auto bf16 = memory::data_type::bf16;
      const memory::desc a_md({16, 16}, bf16, memory::format_tag::ab);
      const memory::desc c_md({16, 16}, memory::data_type::f32, memory::format_tag::ab);
      const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, a_md, c_md), engine);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return has;
}

void SetThreadInvariantProducts(bool on) { thread_invariant.store(on); }

bool OneDnnHasAvx512() {
  static const bool has = OneDnnIsaHas(dnnl_cpu_isa_avx512_core);
  return has;
}

void Gemm(float* c, const float* a, const float* b, const GemmShape& s, bool accumulate) {
  RunCounted(s, [&] {
    // Where oneDNN has no AVX-512 its float32 product splits the sums by
    // the threads that run it.
    if (thread_invariant.load() && !OneDnnHasAvx512())
      GemmF32Swan(c, a, b, s, accumulate);
    else
      Cache().Run(c, a, b, Key{s.m, s.n, s.k, s.trans_a, s.trans_b, accumulate, /*bf16=*/false, Ldc(s)});
  });
}

void GemmBF16(float* c, const uint16_t* a, const uint16_t* b, const GemmShape& s, bool accumulate) {
  RunCounted(s, [&] {
    if (OneDnnHasBF16Matmul())
      Cache().Run(c, a, b, Key{s.m, s.n, s.k, s.trans_a, s.trans_b, accumulate, /*bf16=*/true, Ldc(s)});
    else
      GemmBF16Swan(c, a, b, s, accumulate);
  });
}

void GemmF32ByHalf(float* c, const float* a, const uint16_t* b, HalfFormat b_format, const GemmShape& s,
                   bool accumulate) {
  RunCounted(s, [&] { GemmF32ByHalfSwan(c, a, b, b_format, s, accumulate); });
}

void ConvertToBF16(uint16_t* dst, const float* src, int64_t n) {
  if (n <= 0) return;
  const auto start = std::chrono::steady_clock::now();
  RoundToBF16(dst, src, n);
  const double seconds = SecondsSince(start);
  std::lock_guard<std::mutex> lock(counters_mu);
  counters.convert_seconds += seconds;
}

GemmCounters GetGemmCounters() {
  std::lock_guard<std::mutex> lock(counters_mu);
  return counters;
}

void ResetGemmCounters() {
  std::lock_guard<std::mutex> lock(counters_mu);
  counters = GemmCounters{};
}

}  // namespace swan
