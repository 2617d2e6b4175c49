#include "model/step_decoder.h"

#include <stdexcept>

#include "model/blocks.h"

namespace swan {
namespace {

// The family's own check, after the one every family needs.
void CheckPlanFits(const Session& session, int32_t n_layers) {
  if (int32_t(session.plan.layers.size()) != n_layers)
    throw std::invalid_argument("Forward: the session's plan does not fit this model");
}

}  // namespace

void StepDecoder::Forward(float* logits, const Batch& batch, Session& session) const {
  if (batch.n <= 0) throw std::invalid_argument("Forward: empty batch");
  CheckPlanFits(session, config().n_layers);
  CheckSession(session);
  ForwardInChunks(logits, batch, session.cache.options().max_chunk, config().vocab_size,
                  [&](float* part_logits, const Batch& part) {
                    ForwardSteps(part_logits, {SequenceStep{part, &session}});
                  });
}

void StepDecoder::ForwardBatch(float* logits, const std::vector<SequenceStep>& steps) const {
  CheckSteps(steps);
  for (const SequenceStep& step : steps) {
    CheckPlanFits(*step.session, config().n_layers);
    CheckSession(*step.session);
  }
  // A step longer than its cache's chunk needs several passes: one by one.
  if (!StepsFitChunks(steps))
    LanguageModel::ForwardBatch(logits, steps);
  else if (!steps.empty())
    ForwardSteps(logits, steps);
}

}  // namespace swan
