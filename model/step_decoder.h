// The part of a decoder family that is the same for every family: Forward
// (one sequence, in chunks of its cache's max_chunk) and ForwardBatch (many
// sequences in one pass when each fits its chunk, else one by one), both
// from the family's own session check and one pass over steps.
#pragma once

#include <vector>

#include "model/model.h"

namespace swan {

class StepDecoder : public LanguageModel {
 public:
  void Forward(float* logits, const Batch& batch, Session& session) const final;
  void ForwardBatch(float* logits, const std::vector<SequenceStep>& steps) const final;

 protected:
  // Throws when the session's plan (with one layer per model layer) does
  // not fit this model.
  virtual void CheckSession(const Session& session) const = 0;
  // One pass over the steps' tokens, each step at most its cache's max_chunk.
  virtual void ForwardSteps(float* logits, const std::vector<SequenceStep>& steps) const = 0;
};

}  // namespace swan
