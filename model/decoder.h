// The one inference decoder: every family (model/decoder_spec.h) runs
// through it, its weights read from the family's tensor table. Forward runs
// one sequence in chunks of its cache's max_chunk; ForwardBatch runs many
// sequences in one pass when each fits its chunk (one read of the weights
// for all), else one by one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/decoder_spec.h"
#include "model/model.h"

namespace swan {

class WeightSource;

// A model of config's family from its weights (a checkpoint, a GGUF file,
// or random weights in a real shape). A layer holds a router, feature maps
// or window factors when the weights have them. Throws std::runtime_error
// for settings the family does not cover and for missing or misshapen
// tensors, naming `origin` and the tensor.
std::unique_ptr<LanguageModel> BuildDecoder(const WeightSource& weights, const ModelConfig& config,
                                            const std::string& origin);

// What each layer of these weights holds beyond its family's tensors
// (a router, feature maps, window factors): the extras DecoderTensors
// lists.   [n_layers]
std::vector<LayerExtras> ExtrasInWeights(const WeightSource& w, int32_t n_layers);

// Throws std::invalid_argument when `plan` has linear layers and the
// family's logit scale is not 1/sqrt(head_dim), which linear attention's
// window part assumes (a Gemma 3 whose query_pre_attn_scalar is not its
// head_dim).
void CheckLinearLayersFit(const ModelConfig& config, const DecoderSpec& spec, const AttentionPlan& plan);

}  // namespace swan
