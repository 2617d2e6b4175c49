#include "model/decoder_spec.h"

#include <cmath>
#include <stdexcept>

#include "model/gemma3.h"
#include "model/llama.h"
#include "model/qwen2.h"

namespace swan {

const char* MlpActivationName(MlpActivation a) { return a == MlpActivation::kSilu ? "silu" : "gelu_pytorch_tanh"; }

const std::vector<DecoderFamily>& DecoderFamilies() {
  static const std::vector<DecoderFamily> families = {LlamaFamily(), MistralFamily(), Qwen2Family(), Qwen3Family(),
                                                      Gemma3Family()};
  return families;
}

const DecoderFamily& FamilyOf(const ModelConfig& config, const std::string& origin) {
  std::string known;
  for (const DecoderFamily& f : DecoderFamilies()) {
    if (config.architecture == f.spec.architecture) return f;
    known += (known.empty() ? "" : ", ") + f.spec.architecture;
  }
  throw std::runtime_error(origin + ": architecture '" + config.architecture +
                           "' is not supported (supported: " + known + ")");
}

DecoderSpec DecoderSpecOf(const ModelConfig& c, const std::string& origin) {
  const DecoderSpec& spec = FamilyOf(c, origin).spec;
  const std::string where = origin + ": ";
  if (c.hidden_act != MlpActivationName(spec.activation))
    throw std::runtime_error(where + "activation '" + c.hidden_act + "' is not supported by " + spec.architecture +
                             " (" + MlpActivationName(spec.activation) + ")");
  // Qwen2 has its biases whatever the config says; no other family has a place for them.
  if (c.attention_bias && !spec.qkv_bias) throw std::runtime_error(where + "attention_bias = true is not supported");
  if (c.mlp_bias) throw std::runtime_error(where + "mlp_bias = true is not supported");
  if (c.attn_logit_softcapping != 0 || c.final_logit_softcapping != 0)
    throw std::runtime_error(where + "logit soft-capping is not supported (Gemma 3 has none)");
  if (c.head_dim % 2 != 0) throw std::runtime_error(where + "head_dim must be even for RoPE");
  return spec;
}

float AttentionScaleOf(const ModelConfig& config, const DecoderSpec& spec) {
  if (spec.default_query_pre_attn_scalar <= 0) return 0.0f;
  const double scalar =
      config.query_pre_attn_scalar > 0 ? config.query_pre_attn_scalar : spec.default_query_pre_attn_scalar;
  return float(1.0 / std::sqrt(scalar));
}

bool IsNormRole(TensorRole role) {
  switch (role) {
    case TensorRole::kAttnNorm:
    case TensorRole::kQNorm:
    case TensorRole::kKNorm:
    case TensorRole::kPostAttnNorm:
    case TensorRole::kMlpNorm:
    case TensorRole::kPostMlpNorm:
    case TensorRole::kFinalNorm: return true;
    default: return false;
  }
}

bool IsRouterRole(TensorRole role) { return role == TensorRole::kRouterWeight || role == TensorRole::kRouterBias; }

bool IsLinearLayerRole(TensorRole role) {
  switch (role) {
    case TensorRole::kFeatureMapQWeight:
    case TensorRole::kFeatureMapQBias:
    case TensorRole::kFeatureMapKWeight:
    case TensorRole::kFeatureMapKBias:
    case TensorRole::kWindowFactor: return true;
    default: return false;
  }
}

std::vector<LayerExtras> PlanExtras(const AttentionPlan& plan) {
  std::vector<LayerExtras> extras;  // [n_layers]
  for (const LayerPlan& l : plan.layers) {
    const bool linear = l.kind == LayerKind::kLinear;
    extras.push_back({l.kind == LayerKind::kRouted, linear, linear && !l.span.full()});
  }
  return extras;
}

std::vector<DecoderTensor> DecoderTensors(const ModelConfig& c, const DecoderSpec& spec,
                                          const std::vector<LayerExtras>& extras) {
  if (int32_t(extras.size()) != c.n_layers)
    throw std::invalid_argument("DecoderTensors: " + std::to_string(extras.size()) + " layers' extras for " +
                                std::to_string(c.n_layers) + " layers");
  const int64_t C = c.hidden_size, F = c.intermediate_size, V = c.vocab_size, D = c.head_dim;
  const int64_t H = c.n_heads, KV = c.n_kv_heads, QD = H * D, KD = KV * D;
  const int64_t Fm = LinearPhiDim(c) / 2;  // the Hedgehog map's F
  std::vector<DecoderTensor> t;
  int32_t layer = -1;
  // Matrices decay; vectors (norms, biases) do not.
  auto add = [&](const std::string& name, std::vector<int64_t> shape, TensorRole role) {
    const bool decay = shape.size() >= 2;
    t.push_back({name, std::move(shape), role, layer, decay});
  };
  using R = TensorRole;
  add("model.embed_tokens.weight", {V, C}, R::kEmbedding);
  for (layer = 0; layer < c.n_layers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    add(p + "input_layernorm.weight", {C}, R::kAttnNorm);
    add(p + "self_attn.q_proj.weight", {QD, C}, R::kQ);
    add(p + "self_attn.k_proj.weight", {KD, C}, R::kK);
    add(p + "self_attn.v_proj.weight", {KD, C}, R::kV);
    add(p + "self_attn.o_proj.weight", {C, QD}, R::kO);
    // Llama's post_attention_layernorm is the MLP's input norm; in the
    // sandwich (Gemma) it normalizes the attention output instead.
    add(p + "post_attention_layernorm.weight", {C}, spec.sandwich_norms ? R::kPostAttnNorm : R::kMlpNorm);
    add(p + "mlp.gate_proj.weight", {F, C}, R::kGate);
    add(p + "mlp.up_proj.weight", {F, C}, R::kUp);
    add(p + "mlp.down_proj.weight", {C, F}, R::kDown);
    if (spec.qkv_bias) {
      add(p + "self_attn.q_proj.bias", {QD}, R::kQBias);
      add(p + "self_attn.k_proj.bias", {KD}, R::kKBias);
      add(p + "self_attn.v_proj.bias", {KD}, R::kVBias);
    }
    if (spec.qk_norm) {
      add(p + "self_attn.q_norm.weight", {D}, R::kQNorm);
      add(p + "self_attn.k_norm.weight", {D}, R::kKNorm);
    }
    if (spec.sandwich_norms) {
      add(p + "pre_feedforward_layernorm.weight", {C}, R::kMlpNorm);
      add(p + "post_feedforward_layernorm.weight", {C}, R::kPostMlpNorm);
    }
    const LayerExtras& x = extras[size_t(layer)];
    if (x.router) {
      add(p + "self_attn.router.weight", {1, C}, R::kRouterWeight);
      t.back().decay = false;  // decay would pull every token's route towards the bias alone
      add(p + "self_attn.router.bias", {1}, R::kRouterBias);
    }
    if (x.feature_maps) {
      const size_t first = t.size();
      add(p + "self_attn.feature_map_q.weight", {H, D, Fm}, R::kFeatureMapQWeight);
      add(p + "self_attn.feature_map_q.bias", {H, Fm}, R::kFeatureMapQBias);
      add(p + "self_attn.feature_map_k.weight", {KV, D, Fm}, R::kFeatureMapKWeight);
      add(p + "self_attn.feature_map_k.bias", {KV, Fm}, R::kFeatureMapKBias);
      if (x.window_factor) add(p + "self_attn.window_factor", {H}, R::kWindowFactor);
      for (size_t i = first; i < t.size(); ++i) t[i].decay = false;
    }
  }
  layer = -1;
  add("model.norm.weight", {C}, R::kFinalNorm);
  if (!c.tie_word_embeddings) add("lm_head.weight", {V, C}, R::kLmHead);
  return t;
}

}  // namespace swan
