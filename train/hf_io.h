// Between a TrainModel and a Hugging Face directory: start from one
// (continual pretraining) and write one that `swan generate -m DIR` loads.
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "model/plan.h"
#include "train/model.h"

namespace swan {

// Copies every parameter from DIR's safetensors into the model. A routed
// layer whose router DIR lacks (continual pretraining of a full-attention
// model) gets InitRouter's: weight 0, bias +2, every token on full
// attention; a linear layer whose feature maps DIR lacks (linearizing a
// softmax model) gets InitHedgehog's identity start. Returns how many
// routers were so initialised (new_feature_maps: how many linear layers).
// Throws naming the missing or misshapen tensor.
//
// layer_sources (growing a model deeper, train/grow.h): for each of the
// model's layers, the layer of DIR it copies, or -1 for a new layer, whose
// attention and MLP outputs are set to zero (the identity) and whose other
// weights keep the model's initialisation. Empty: layer l copies layer l.
int32_t LoadHfWeights(TrainModel& model, const std::string& dir, int32_t* new_feature_maps = nullptr,
                      const std::vector<int32_t>& layer_sources = {});

// A spec that model/plan.h resolves to exactly `plan` for any model with
// its layer count ("full,layer0:swa:64,layer1:routed:64,...,sinks:4,nope:full").
std::string CanonicalPlanSpec(const AttentionPlan& plan);

struct ExportOptions {
  std::string tokenizer_json;  // copied as DIR/tokenizer.json; "" = none
  int32_t bos_token_id = -1;   // -1 = none
  int32_t eos_token_id = -1;
};

// Writes DIR/config.json (the model's own config and architecture; the
// plan's window layers as sliding_window + layer_types, routed layers there
// as full attention, and the whole plan as "swan_attention_plan"),
// DIR/model.safetensors (F32, every tensor of the model's table: biases,
// norms, routers, feature maps), DIR/tokenizer.json and
// DIR/attention_plan.json (spec and per-layer description: kind full,
// window or routed). Every file is written atomically.
void ExportHfDirectory(const std::string& dir, const TrainModel& model, const ExportOptions& options);

// The id of `token` among tokenizer.json's added tokens, or -1.
int32_t AddedTokenId(const std::string& tokenizer_json_path, const std::string& token);

}  // namespace swan
