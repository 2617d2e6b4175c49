#include "ops/linear.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>

#include "ops/bf16_round.h"
#include "ops/block_product.h"
#include "ops/packed_blocks.h"
#include "ops/f16_widen.h"
#include "ops/gemm.h"
#include "ops/matmul.h"
#include "util/bf16.h"
#include "util/f16.h"

namespace swan {

namespace {

void CheckSize(size_t values, int64_t out, int64_t in) {
  if (int64_t(values) != out * in)
    throw std::invalid_argument("LinearWeight: " + std::to_string(values) + " values for a [" + std::to_string(out) +
                                ", " + std::to_string(in) + "] matrix");
}

}  // namespace

LinearWeight::LinearWeight(std::vector<float> w, int64_t out, int64_t in, WeightType type)
    : out_(out), in_(in), type_(type) {
  CheckSize(w.size(), out, in);
  if (type == WeightType::kF32) {
    auto owned = std::make_shared<const std::vector<float>>(std::move(w));
    data_ = owned->data();
    owner_ = std::move(owned);
  } else if (IsBlockQuantized(type)) {
    *this = Quantized(w.data(), out, in, type);
  } else {
    auto owned = std::make_shared<std::vector<uint16_t>>(w.size());
    for (size_t i = 0; i < w.size(); ++i) (*owned)[i] = type == WeightType::kF16 ? F32ToF16(w[i]) : F32ToBF16(w[i]);
    data_ = owned->data();
    owner_ = std::move(owned);
  }
}

LinearWeight::LinearWeight(std::vector<uint16_t> w, int64_t out, int64_t in, WeightType type)
    : out_(out), in_(in), type_(type) {
  if (type != WeightType::kBF16 && type != WeightType::kF16)
    throw std::invalid_argument(std::string("LinearWeight: 16-bit values for a ") + WeightTypeName(type) + " matrix");
  CheckSize(w.size(), out, in);
  auto owned = std::make_shared<const std::vector<uint16_t>>(std::move(w));
  data_ = owned->data();
  owner_ = std::move(owned);
}

LinearWeight LinearWeight::Borrow(std::shared_ptr<const void> owner, const void* data, WeightType type, int64_t out,
                                  int64_t in, const SourceDone& done_with) {
  if (!RowFits(type, in))
    throw std::invalid_argument(std::string("LinearWeight: ") + WeightTypeName(type) + " rows of " +
                                std::to_string(in) + " values (a multiple of " + std::to_string(RowMultiple(type)) +
                                " is needed)");
  if (IsBlockQuantized(type)) return Reordered(data, type, out, in, nullptr, done_with);
  LinearWeight w;
  w.owner_ = std::move(owner);
  w.data_ = data;
  w.type_ = type;
  w.out_ = out;
  w.in_ = in;
  return w;
}

LinearWeight LinearWeight::FromBytes(std::vector<uint8_t> blocks, int64_t out, int64_t in, WeightType type) {
  if (!RowFits(type, in) || blocks.size() != size_t(out) * WeightRowBytes(type, in))
    throw std::invalid_argument("LinearWeight: " + std::to_string(blocks.size()) + " bytes are not [" +
                                std::to_string(out) + ", " + std::to_string(in) + "] of " + WeightTypeName(type));
  if (IsBlockQuantized(type)) return Reordered(blocks.data(), type, out, in, nullptr);
  auto owned = std::make_shared<const std::vector<uint8_t>>(std::move(blocks));
  LinearWeight w = Borrow(owned, owned->data(), type, out, in);
  return w;
}

LinearWeight LinearWeight::OwningPacked(int64_t out, int64_t in, WeightType type,
                                        const std::function<void(uint8_t*)>& fill) {
  // Not zeroed first: every packing writes each byte (rows past `out`
  // included), and zeroing a model's packed weights on one thread before the
  // packing threads fill them took 4.6% of `swan generate`'s time for a
  // 2048-token prompt on the side by side's Llama Q8_0.
  std::shared_ptr<uint8_t[]> packed(new uint8_t[PackedBytes(type, out, in)]);  // ops/packed_blocks.h
  fill(packed.get());
  LinearWeight w;
  w.data_ = packed.get();
  w.owner_ = std::move(packed);
  w.type_ = type;
  w.out_ = out;
  w.in_ = in;
  return w;
}

namespace {

void RequireQuantizable(WeightType type, int64_t out, int64_t in) {
  if (!IsBlockQuantized(type) || !RowFits(type, in))
    throw std::invalid_argument(std::string("LinearWeight: ") + WeightTypeName(type) + " [" + std::to_string(out) +
                                ", " + std::to_string(in) + "] (a block format, rows of a multiple of " +
                                std::to_string(RowMultiple(type)) + " values)");
}

}  // namespace

LinearWeight LinearWeight::Quantized(const float* w, int64_t out, int64_t in, WeightType type) {
  RequireQuantizable(type, out, in);
  return OwningPacked(out, in, type, [&](uint8_t* dst) { QuantizePacked(type, dst, w, out, in); });
}

LinearWeight LinearWeight::QuantizedFrom(int64_t out, int64_t in, WeightType type, const FloatRows& rows_of) {
  RequireQuantizable(type, out, in);
  return OwningPacked(out, in, type, [&](uint8_t* dst) { QuantizePackedFrom(type, dst, out, in, rows_of); });
}

LinearWeight LinearWeight::PackedFrom(int64_t out, int64_t in, WeightType type, const BlockRowsOf& rows_of) {
  RequireQuantizable(type, out, in);
  return OwningPacked(out, in, type, [&](uint8_t* dst) { PackBlockRowsFrom(type, dst, out, in, rows_of); });
}

LinearWeight LinearWeight::Reordered(const void* rows, WeightType type, int64_t out, int64_t in, const int64_t* order,
                                     const SourceDone& done_with) {
  if (!RowFits(type, in))
    throw std::invalid_argument(std::string("LinearWeight: ") + WeightTypeName(type) + " rows of " +
                                std::to_string(in) + " values (a multiple of " + std::to_string(RowMultiple(type)) +
                                " is needed)");
  const uint8_t* src = static_cast<const uint8_t*>(rows);  // [out, row_bytes]
  if (IsBlockQuantized(type))
    return OwningPacked(out, in, type, [&](uint8_t* dst) { PackBlockRows(type, dst, src, out, in, order, done_with); });
  const size_t row_bytes = WeightRowBytes(type, in);
  std::vector<uint8_t> copy(size_t(out) * row_bytes);  // [out, row_bytes]
  for (int64_t r = 0; r < out; ++r)
    std::memcpy(copy.data() + size_t(r) * row_bytes, src + size_t(order ? order[r] : r) * row_bytes, row_bytes);
  return FromBytes(std::move(copy), out, in, type);
}

WeightView LinearWeight::view() const { return WeightView{data_, type_, out_, in_}; }

size_t LinearWeight::Bytes() const {
  return IsBlockQuantized(type_) ? PackedBytes(type_, out_, in_) : size_t(out_) * WeightRowBytes(type_, in_);
}

std::vector<float> LinearWeight::ToF32() const {
  std::vector<float> w(size_t(out_ * in_));  // [out, in]
  WeightRowsF32(view(), w.data(), 0, out_);
  return w;
}

namespace {

// Whether a product of m rows with weights of `type` multiplies in bf16:
// 16-bit weights against many rows, where oneDNN has bf16 products.
bool ProductsInBF16(WeightType type, int64_t m) {
  return m > kGemvMaxRows && (type == WeightType::kBF16 || type == WeightType::kF16) && OneDnnHasBF16Matmul();
}

std::atomic<bool> g_stats_on{false};
std::mutex g_stats_mu;
LinearStats g_stats;

// Runs `products` and, while stats are on, counts its time and the flops
// of the weights it multiplied, `m` rows each.
template <class Products, class Weights>
void Counted(const Products& products, int64_t m, const Weights& weights) {
  if (!g_stats_on.load(std::memory_order_relaxed)) {
    products();
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  products();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(g_stats_mu);
  g_stats.seconds += s;
  for (const LinearWeight* w : weights) {
    const double flops = 2.0 * double(m) * double(w->out()) * double(w->in());
    g_stats.flops += flops;
    if (ProductsInBF16(w->type(), m)) g_stats.bf16_flops += flops;
  }
}

// [m, in] x in bf16, in a buffer the thread keeps for its next products (a
// fresh one per product costs page faults at prefill sizes).
const uint16_t* InputBF16(const float* x, int64_t m, int64_t in) {
  thread_local std::vector<uint16_t> x16;
  if (x16.size() < size_t(m * in)) x16.resize(size_t(m * in));
  RoundToBF16(x16.data(), x, m * in);
  return x16.data();
}

// 16-bit weights against many rows. Where oneDNN has bf16 products
// (AVX-512 BF16, AMX) bf16 weights are multiplied as they are with x in
// bf16, and f16 weights rounded to bf16 in one pass first (no f16 GEMM
// exists here): about twice the float32 rate, and an f16 weight loses 3 of
// its 10 fraction bits (decode multiplies the f16 values exactly).
// Elsewhere both are multiplied in float32. On AVX-512 without BF16 they
// are widened for oneDNN's float32 product, faster there than its emulated
// bf16 and than swan's own product; below AVX-512 swan's own product
// widens each weight as it packs it (GemmF32ByHalf), 1.1-1.2x the widened
// oneDNN path on the 1B f16 prefill (docs/performance.md). Either reads
// the weights once per product, which m >= 9 rows amortize.

// Writes (or adds, when accumulate) block [m, nb] into columns [n0, n0 + nb)
// of y [m, ldy]: oneDNN's products run slower straight into a strided y
// than into a block of their own and this copy.
void StoreColumns(float* y, int64_t ldy, int64_t n0, const float* block, int64_t m, int64_t nb, bool accumulate) {
  for (int64_t r = 0; r < m; ++r) {
    float* dst = y + r * ldy + n0;       // [nb]
    const float* part = block + r * nb;  // [nb]
    if (accumulate)
      for (int64_t c = 0; c < nb; ++c) dst[c] += part[c];
    else
      std::copy(part, part + nb, dst);
  }
}

// bf16: the whole matrix when it is at most 4M values (one product straight
// into y), else 256 rows at a time into y_block. (oneDNN's bf16 product
// straight into y's columns, in panels as below, prefilled Gemma 3 f16 at
// 0.89x and peaked 4.7 MiB higher.)
void F16ProductBF16(float* y, const float* x, int64_t m, const LinearWeight& w, bool accumulate) {
  const int64_t in = w.in();
  const int64_t block = w.out() * in <= (int64_t(1) << 22) ? w.out() : std::min<int64_t>(256, w.out());
  const bool whole = block == w.out();
  const uint16_t* x16 = InputBF16(x, m, in);  // [m, in]
  thread_local std::vector<uint16_t> w16;     // [block, in] bf16
  thread_local std::vector<float> y_block;    // [m, block]
  if (w16.size() < size_t(block * in)) w16.resize(size_t(block * in));
  if (!whole && y_block.size() < size_t(m * block)) y_block.resize(size_t(m * block));
  const uint16_t* rows = static_cast<const uint16_t*>(w.view().data);  // [out, in] f16
  for (int64_t n0 = 0; n0 < w.out(); n0 += block) {
    const int64_t nb = std::min(block, w.out() - n0);
    F16ToBF16(w16.data(), rows + n0 * in, nb * in);
    if (whole) return MatmulTransBBF16(y, x16, w16.data(), MatmulShape{m, nb, in}, accumulate);
    MatmulTransBBF16(y_block.data(), x16, w16.data(), MatmulShape{m, nb, in});
    StoreColumns(y, w.out(), n0, y_block.data(), m, nb, accumulate);
  }
}

// float32 on AVX-512 without BF16: the rows in panels of at most
// kWidePanelValues values (1 MiB), each widened, multiplied into a block of
// y's own and copied into its columns. A widened copy of a whole 1536 x
// 512 matrix had been 3 MiB of a Gemma 3 f16 prefill's peak memory (panels
// of 512 rows there; 256 measured about 3% slower, capped to AVX2).
// Straight into y's columns, oneDNN's AVX-512 float32 product ran well
// below its rate into a block (docs/performance.md).
constexpr int64_t kWidePanelValues = int64_t(1) << 18;

void WidenedProductF32(float* y, const float* x, int64_t m, const LinearWeight& w, bool accumulate) {
  const int64_t in = w.in();
  const int64_t panel = std::min(w.out(), std::max<int64_t>(16, kWidePanelValues / in / 16 * 16));  // rows
  const bool whole = panel == w.out();
  thread_local std::vector<float> w32;      // [panel, in]
  thread_local std::vector<float> y_block;  // [m, panel]
  if (w32.size() < size_t(panel * in)) w32.resize(size_t(panel * in));
  if (!whole && y_block.size() < size_t(m * panel)) y_block.resize(size_t(m * panel));
  const uint16_t* rows = static_cast<const uint16_t*>(w.view().data);  // [out, in] f16 or bf16
  const auto widen = w.type() == WeightType::kF16 ? WidenF16 : WidenBF16;
  for (int64_t n0 = 0; n0 < w.out(); n0 += panel) {
    const int64_t nb = std::min(panel, w.out() - n0);
    widen(w32.data(), rows + n0 * in, nb * in);
    if (whole) return MatmulTransB(y, x, w32.data(), MatmulShape{m, nb, in}, accumulate);
    MatmulTransB(y_block.data(), x, w32.data(), MatmulShape{m, nb, in});
    StoreColumns(y, w.out(), n0, y_block.data(), m, nb, accumulate);
  }
}

void Product(float* y, const float* x, int64_t m, const LinearWeight& w, bool accumulate) {
  if (IsBlockQuantized(w.type())) {
    BlockProduct(y, x, w.view().packed(), m, accumulate);
    return;
  }
  if (m <= kGemvMaxRows) {
    Gemv(y, x, w.view(), m, accumulate);
    return;
  }
  const MatmulShape shape{m, w.out(), w.in()};
  if (w.type() == WeightType::kF32) {
    MatmulTransB(y, x, w.f32(), shape, accumulate);
    return;
  }
  if (!ProductsInBF16(w.type(), m)) {
    if (OneDnnHasAvx512()) {
      WidenedProductF32(y, x, m, w, accumulate);
    } else {
      const HalfFormat format = w.type() == WeightType::kF16 ? HalfFormat::kF16 : HalfFormat::kBF16;
      GemmF32ByHalf(y, x, static_cast<const uint16_t*>(w.view().data), format,
                    GemmShape{m, w.out(), w.in(), false, /*trans_b=*/true}, accumulate);
    }
    return;
  }
  if (w.type() == WeightType::kF16) {
    F16ProductBF16(y, x, m, w, accumulate);
    return;
  }
  MatmulTransBBF16(y, InputBF16(x, m, w.in()), w.bf16(), shape, accumulate);
}

}  // namespace

void Embed(float* out, const WeightView& table, const int32_t* ids, int64_t n_tokens) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    if (ids[t] < 0 || ids[t] >= table.n)
      throw std::out_of_range("token id " + std::to_string(ids[t]) + " outside the vocabulary [0, " +
                              std::to_string(table.n) + ")");
    WeightRowsF32(table, out + t * table.k, ids[t], 1);
  }
}

void Linear(float* y, const float* x, int64_t m, const LinearWeight& w, bool accumulate) {
  Counted([&] { Product(y, x, m, w, accumulate); }, m, std::initializer_list<const LinearWeight*>{&w});
}

void LinearSameInput(const float* x, int64_t m, std::initializer_list<LinearOutput> outs) {
  bool blocks = true;
  for (const LinearOutput& o : outs)
    blocks = blocks && IsBlockQuantized(o.w->type()) && o.w->in() == outs.begin()->w->in();
  if (!blocks) {
    bool floats = m <= kGemvMaxRows;
    for (const LinearOutput& o : outs)
      floats = floats && !IsBlockQuantized(o.w->type()) && o.w->in() == outs.begin()->w->in();
    if (!floats) {
      for (const LinearOutput& o : outs) Linear(o.y, x, m, *o.w);
      return;
    }
    std::vector<GemvOutput> products;          // [outs]
    std::vector<const LinearWeight*> weights;  // [outs]
    for (const LinearOutput& o : outs) {
      products.push_back(GemvOutput{o.y, o.w->view()});
      weights.push_back(o.w);
    }
    Counted([&] { Gemvs(x, m, products.data(), int64_t(products.size())); }, m, weights);
    return;
  }
  std::vector<BlockOutput> products;         // [outs]
  std::vector<const LinearWeight*> weights;  // [outs]
  for (const LinearOutput& o : outs) {
    products.push_back(BlockOutput{o.y, o.w->view().packed()});
    weights.push_back(o.w);
  }
  Counted([&] { BlockProducts(x, m, products.data(), int64_t(products.size())); }, m, weights);
}

void EnableLinearStats(bool on) { g_stats_on.store(on); }

LinearStats TakeLinearStats() {
  std::lock_guard<std::mutex> lock(g_stats_mu);
  const LinearStats s = g_stats;
  g_stats = LinearStats{};
  return s;
}

}  // namespace swan
