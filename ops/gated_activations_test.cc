// SiluMul and GeluTanhMul against their formulas in double, on random gates
// over the range a model's activations take and on extremes, on every
// Highway target this CPU runs, at lengths that leave vector tails.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/elementwise.h"

namespace swan {
namespace {

double Silu(double g) { return g / (1.0 + std::exp(-g)); }
double GeluTanh(double g) { return 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))); }

template <class Gate, class Ref>
void ExpectMatchesOnEveryTarget(Gate gate_fn, Ref ref, const char* name) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> gate(70000 + 5), up(gate.size());  // [n]: past one 64K piece, with a tail
  for (float& g : gate) g = normal(rng);
  for (float& u : up) u = normal(rng);
  const float extremes[] = {0.0f,   -0.0f, 1e-30f, -1e-30f, 10.0f,   -10.0f, 87.0f,
                            -87.0f, 90.0f, -90.0f, 200.0f,  -200.0f, 1e30f,  -1e30f};
  for (size_t i = 0; i < std::size(extremes); ++i) gate[i] = extremes[i], up[i] = 1.5f;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(std::string(name) + " on " + hwy::TargetName(target));
    std::vector<float> out(gate.size());
    gate_fn(out.data(), gate.data(), up.data(), int64_t(gate.size()));
    int wrong = 0;
    for (size_t i = 0; i < gate.size(); ++i) {
      const double want = ref(double(gate[i])) * up[i];
      // a few float ulps of g * u: the gates are at most |g|
      const double tol = 1e-6 * std::fabs(double(gate[i]) * up[i]) + 1e-30;
      if (!(std::fabs(out[i] - want) <= tol) && ++wrong <= 5)
        ADD_FAILURE() << "gate " << gate[i] << " up " << up[i] << ": " << out[i] << " vs " << want;
    }
    EXPECT_EQ(wrong, 0);
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(GatedActivations, SiluMulMatchesItsFormula) { ExpectMatchesOnEveryTarget(SiluMul, Silu, "silu"); }

TEST(GatedActivations, GeluTanhMulMatchesItsFormula) { ExpectMatchesOnEveryTarget(GeluTanhMul, GeluTanh, "gelu_tanh"); }

}  // namespace
}  // namespace swan

namespace swan {
namespace {

// A value's result does not depend on where it falls: at the end of a
// short row, or inside a vector of a longer call (a server's decode batch
// puts rows side by side; a scalar tail once rounded differently).
TEST(GatedActivations, AValueGivesTheSameResultWhereverItFalls) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> gate(300), up(300);
  for (size_t i = 0; i < gate.size(); ++i) gate[i] = dist(rng), up[i] = dist(rng);
  for (auto* activation : {&SiluMul, &GeluTanhMul}) {
    std::vector<float> whole(300);
    activation(whole.data(), gate.data(), up.data(), 300);
    for (int64_t n : {1, 3, 17, 172, 299})
      for (int64_t start : {int64_t(0), int64_t(1), 300 - n}) {
        std::vector<float> part(static_cast<size_t>(n));
        activation(part.data(), gate.data() + start, up.data() + start, n);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(part[size_t(i)], whole[size_t(start + i)]) << "n " << n << " start " << start << " i " << i;
      }
  }
}

}  // namespace
}  // namespace swan
