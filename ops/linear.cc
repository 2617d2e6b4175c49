#include "ops/linear.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>

#include "ops/bf16_round.h"
#include "ops/matmul.h"
#include "util/bf16.h"

namespace swan {

LinearWeight::LinearWeight(std::vector<float> w, int64_t out, int64_t in, KvType type)
    : out_(out), in_(in), type_(type) {
  if (int64_t(w.size()) != out * in)
    throw std::invalid_argument("LinearWeight: " + std::to_string(w.size()) + " values for a [" +
                                std::to_string(out) + ", " + std::to_string(in) + "] matrix");
  if (type == KvType::kF32) {
    f32_ = std::move(w);
  } else {
    bf16_.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) bf16_[i] = F32ToBF16(w[i]);
  }
}

LinearWeight::LinearWeight(std::vector<uint16_t> w, int64_t out, int64_t in)
    : bf16_(std::move(w)), out_(out), in_(in), type_(KvType::kBF16) {
  if (int64_t(bf16_.size()) != out * in)
    throw std::invalid_argument("LinearWeight: " + std::to_string(bf16_.size()) +
                                " values for a [" + std::to_string(out) + ", " +
                                std::to_string(in) + "] matrix");
}

WeightView LinearWeight::view() const {
  return WeightView{type_ == KvType::kF32 ? static_cast<const void*>(f32_.data()) : bf16_.data(),
                    type_, out_, in_};
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
  if (w.type() == KvType::kF32) {
    MatmulTransB(y, x, w.f32(), shape, accumulate);
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
  if (w.type() == KvType::kBF16) g_stats.bf16_flops += flops;
}

void EnableLinearStats(bool on) { g_stats_on.store(on); }

LinearStats TakeLinearStats() {
  std::lock_guard<std::mutex> lock(g_stats_mu);
  const LinearStats s = g_stats;
  g_stats = LinearStats{};
  return s;
}

}  // namespace swan
