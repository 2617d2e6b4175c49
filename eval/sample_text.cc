#include "eval/sample_text.h"

#include <algorithm>
#include <stdexcept>

#include "model/sampler.h"
#include "util/threads.h"

namespace swan {

std::vector<int32_t> SampleText(const LanguageModel& model, const SampleTextOptions& options) {
  if (options.context < 2) throw std::invalid_argument("sample text: the context must be at least 2");
  const ModelConfig& config = model.config();
  const int64_t vocab = config.vocab_size;
  const AttentionPlan plan = model.ResolvePlan("full");
  SamplerOptions so;
  so.temperature = options.temperature;
  so.seed = options.seed;
  Sampler sampler(so);
  auto is_eos = [&](int32_t id) {
    return std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), id) != config.eos_token_ids.end();
  };
  std::vector<int32_t> text;
  std::vector<float> logits(static_cast<size_t>(vocab));  // [vocab]
  std::mt19937_64 rng(options.seed);
  while (int64_t(text.size()) < options.tokens) {
    auto session = model.NewSession(plan);
    int32_t token = options.bos_id >= 0 ? options.bos_id : int32_t(rng() % uint64_t(vocab));
    if (options.bos_id < 0) text.push_back(token);
    for (int32_t pos = 0; pos + 1 < options.context && int64_t(text.size()) < options.tokens; ++pos) {
      ThreadsForNextStep();  // the cores other programs leave idle
      model.Forward(logits.data(), Batch{&token, &pos, 1, false}, *session);
      token = sampler.Sample(logits.data(), vocab);
      if (is_eos(token)) break;
      text.push_back(token);
    }
  }
  return text;
}

}  // namespace swan
