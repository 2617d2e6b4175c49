#include "ops/linear.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>

#include "ops/bf16_round.h"
#include "ops/quant_blocks.h"
#include "ops/matmul.h"
#include "util/bf16.h"
#include "util/f16.h"

namespace swan {

namespace {

void CheckSize(size_t values, int64_t out, int64_t in) {
  if (int64_t(values) != out * in)
    throw std::invalid_argument("LinearWeight: " + std::to_string(values) + " values for a [" +
                                std::to_string(out) + ", " + std::to_string(in) + "] matrix");
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
    *this = FromBytes(QuantizeRows(type, w.data(), out, in), out, in, type);
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
                                  int64_t in) {
  if (!RowFits(type, in))
    throw std::invalid_argument(std::string("LinearWeight: ") + WeightTypeName(type) + " rows of " +
                                std::to_string(in) + " values (a multiple of 32 is needed)");
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
  auto owned = std::make_shared<const std::vector<uint8_t>>(std::move(blocks));
  LinearWeight w = Borrow(owned, owned->data(), type, out, in);
  return w;
}

WeightView LinearWeight::view() const { return WeightView{data_, type_, out_, in_}; }

std::vector<float> LinearWeight::ToF32() const {
  std::vector<float> w(size_t(out_ * in_));  // [out, in]
  DequantizeRows(type_, w.data(), data_, out_, in_);
  return w;
}

namespace {

std::atomic<bool> g_stats_on{false};
std::mutex g_stats_mu;
LinearStats g_stats;

void Product(float* y, const float* x, int64_t m, const LinearWeight& w, bool accumulate) {
  if (m <= kGemvMaxRows) {
    Gemv(y, x, w.view(), m, accumulate);
    return;
  }
  const MatmulShape shape{m, w.out(), w.in()};
  if (w.type() == WeightType::kF32) {
    MatmulTransB(y, x, w.f32(), shape, accumulate);
    return;
  }
  if (w.type() != WeightType::kBF16) {
    // No f16 or block-format GEMM here: 256 rows of w at a time widened to
    // float32, their product into a block of y's columns. The widening
    // reads the weights once per product, which m >= 9 rows amortize.
    constexpr int64_t kBlock = 256;
    thread_local std::vector<float> w32, y_block;  // [kBlock, in], [m, kBlock]
    if (w32.size() < size_t(kBlock * w.in())) w32.resize(size_t(kBlock * w.in()));
    if (y_block.size() < size_t(m * kBlock)) y_block.resize(size_t(m * kBlock));
    const size_t row_bytes = WeightRowBytes(w.type(), w.in());
    for (int64_t n0 = 0; n0 < w.out(); n0 += kBlock) {
      const int64_t nb = std::min(kBlock, w.out() - n0);
      DequantizeRows(w.type(), w32.data(), static_cast<const uint8_t*>(w.view().data) + size_t(n0) * row_bytes, nb,
                     w.in());
      MatmulTransB(y_block.data(), x, w32.data(), MatmulShape{m, nb, w.in()});
      for (int64_t r = 0; r < m; ++r) {
        float* dst = y + r * w.out() + n0;
        const float* part = y_block.data() + r * nb;
        for (int64_t c = 0; c < nb; ++c) dst[c] = accumulate ? dst[c] + part[c] : part[c];
      }
    }
    return;
  }
  // [m, in] bf16, kept by the thread for its next products (a fresh one
  // per product costs page faults at prefill sizes)
  thread_local std::vector<uint16_t> x16;
  if (x16.size() < size_t(m * w.in())) x16.resize(size_t(m * w.in()));
  RoundToBF16(x16.data(), x, m * w.in());
  MatmulTransBBF16(y, x16.data(), w.bf16(), shape, accumulate);
}

}  // namespace

void Embed(float* out, const WeightView& table, const int32_t* ids, int64_t n_tokens) {
  const size_t row_bytes = WeightRowBytes(table.type, table.k);
  for (int64_t t = 0; t < n_tokens; ++t) {
    if (ids[t] < 0 || ids[t] >= table.n)
      throw std::out_of_range("token id " + std::to_string(ids[t]) + " outside the vocabulary [0, " +
                              std::to_string(table.n) + ")");
    DequantizeRows(table.type, out + t * table.k, static_cast<const uint8_t*>(table.data) + size_t(ids[t]) * row_bytes,
                   1, table.k);
  }
}

void Linear(float* y, const float* x, int64_t m, const LinearWeight& w, bool accumulate) {
  if (!g_stats_on.load(std::memory_order_relaxed)) {
    Product(y, x, m, w, accumulate);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  Product(y, x, m, w, accumulate);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(g_stats_mu);
  g_stats.seconds += s;
  const double flops = 2.0 * double(m) * double(w.out()) * double(w.in());
  g_stats.flops += flops;
  if (w.type() == WeightType::kBF16) g_stats.bf16_flops += flops;
}

void EnableLinearStats(bool on) { g_stats_on.store(on); }

LinearStats TakeLinearStats() {
  std::lock_guard<std::mutex> lock(g_stats_mu);
  const LinearStats s = g_stats;
  g_stats = LinearStats{};
  return s;
}

}  // namespace swan
