// A model loaded with its linear layers converted (LoadOptions::weights)
// against the same model in float32: the logits move by about what the
// format's rounding predicts, and the weights take the format's bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "model/model.h"
#include "model/test_files.h"
#include "ops/gemm.h"

namespace swan {
namespace {

// [n, vocab] logits of tokens 1..n, as one prefill (m > 8 rows: the
// widened GEMM) or one token at a time (the GEMV, which for the block
// formats multiplies in integers).
std::vector<float> Logits(const LanguageModel& model, int64_t n, bool one_at_a_time) {
  const int64_t vocab = model.config().vocab_size;
  std::vector<int32_t> ids(static_cast<size_t>(n)), pos(static_cast<size_t>(n));  // [n]
  std::iota(ids.begin(), ids.end(), 1);
  std::iota(pos.begin(), pos.end(), 0);
  std::vector<float> logits(size_t(n * vocab));  // [n, vocab]
  auto session = model.NewSession(model.ResolvePlan(""));
  if (!one_at_a_time) {
    model.Forward(logits.data(), Batch{ids.data(), pos.data(), n}, *session);
    return logits;
  }
  for (int64_t i = 0; i < n; ++i)
    model.Forward(logits.data() + i * vocab, Batch{&ids[size_t(i)], &pos[size_t(i)], 1}, *session);
  return logits;
}

TEST(ConvertedWeights, LogitsStayWithinTheFormatsError) {
  const auto f32 = LoadModel(test::Stories260K());
  const int64_t n = 40;
  const std::vector<float> ref = Logits(*f32, n, false);
  // Measured (the tied embedding table converted too): f16 1.4e-4 (2.0e-3
  // in a prefill that multiplies in bf16, where oneDNN has bf16 products:
  // the weights rounded on to bf16, x to bf16), q8_0 5.5e-3 (x quantized
  // too), q4_0 5.7e-2; the bounds are 2.5-7x those. A wrong nibble or
  // scale order gives errors near 1.
  struct Case {
    WeightType type;
    double bound;
    double bytes_ratio;  // of f32's
  };
  for (const Case& c : {Case{WeightType::kF16, 1e-3, 0.5}, Case{WeightType::kQ8_0, 1.5e-2, 34.0 / 128},
                        Case{WeightType::kQ4_0, 0.15, 18.0 / 128}}) {
    LoadOptions options;
    options.weights = c.type;
    const auto model = LoadModel(test::Stories260K(), options);
    for (bool one_at_a_time : {false, true}) {
      const double err = test::RelativeRms(Logits(*model, n, one_at_a_time), ref);
      std::printf("%s %s: relative RMS logit error %.2e\n", WeightTypeName(c.type),
                  one_at_a_time ? "decode" : "prefill", err);
      const bool in_bf16 = c.type == WeightType::kF16 && !one_at_a_time && OneDnnHasBF16Matmul();
      EXPECT_LE(err, in_bf16 ? 5e-3 : c.bound) << WeightTypeName(c.type);
      EXPECT_GT(err, 0.0) << WeightTypeName(c.type) << ": the weights did not change";
    }
    // down_proj's rows (172 values) cannot be blocks; they stay f32, so the
    // block formats take more than their ratio of the f32 bytes
    const double ratio = double(model->WeightBytes()) / double(f32->WeightBytes());
    EXPECT_LT(ratio, c.type == WeightType::kF16 ? 0.51 : 0.7) << WeightTypeName(c.type);
    EXPECT_GE(ratio, c.bytes_ratio) << WeightTypeName(c.type);
  }
}

}  // namespace
}  // namespace swan
