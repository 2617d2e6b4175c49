// Tests of architecture families: tiny random checkpoints written as
// safetensors, and the pieces of a plain float64 forward pass (following
// the Hugging Face modeling code) that each family's reference composes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "model/test_files.h"

namespace swan::test {

using Vec = std::vector<double>;

// Named tensors with seeded normal values, exactly representable in float32
// (so the reference and the engine start from the same numbers).
class TinyCheckpoint {
 public:
  explicit TinyCheckpoint(uint64_t seed) : rng_(seed) {}

  // A tensor of `shape` with values mean + std * N(0, 1).
  const Vec& Add(const std::string& name, const std::vector<int64_t>& shape, double std, double mean = 0.0) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::normal_distribution<double> normal;
    Vec v(static_cast<size_t>(n));
    for (double& x : v) x = double(float(mean + std * normal(rng_)));
    shapes_[name] = shape;
    return values_[name] = std::move(v);
  }
  const Vec& operator[](const std::string& name) const { return values_.at(name); }

  // Writes DIR/config.json and DIR/model.safetensors without the tensors in `leave_out`.
  void Write(const std::filesystem::path& dir, const std::string& config_json,
             const std::set<std::string>& leave_out = {}) const {
    std::vector<RawTensor> tensors;
    for (const auto& [name, values] : values_) {
      if (leave_out.count(name)) continue;
      tensors.push_back(F32Tensor(name, shapes_.at(name), std::vector<float>(values.begin(), values.end())));
    }
    WriteFile(dir / "model.safetensors", SafetensorsBytes(tensors));
    WriteFile(dir / "config.json", config_json);
  }

 private:
  std::mt19937_64 rng_;
  std::map<std::string, std::vector<int64_t>> shapes_;
  std::map<std::string, Vec> values_;
};

// Sizes of a tiny Llama-family checkpoint.
struct TinyLlamaShape {
  int64_t vocab = 0, hidden = 0, inter = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int32_t layers = 0;
};

// The tensors of a LlamaForCausalLM (untied output head) in HF names, with
// q/k/v biases for Qwen2 when `qkv_bias`; `per_layer(prefix, layer)` adds a
// layer's extra tensors (a router) after its MLP. Scales keep activations
// of order 1 through a few layers.
template <typename PerLayer>
void AddTinyLlamaWeights(TinyCheckpoint& w, const TinyLlamaShape& s, bool qkv_bias, PerLayer per_layer) {
  const double s_in = 1.0 / std::sqrt(double(s.hidden)), s_inter = 1.0 / std::sqrt(double(s.inter));
  const int64_t q_dim = s.heads * s.head_dim, kv_dim = s.kv_heads * s.head_dim;
  w.Add("model.embed_tokens.weight", {s.vocab, s.hidden}, 1.0);
  w.Add("model.norm.weight", {s.hidden}, 0.1, 1.0);
  w.Add("lm_head.weight", {s.vocab, s.hidden}, s_in);
  for (int32_t i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    w.Add(p + "input_layernorm.weight", {s.hidden}, 0.1, 1.0);
    w.Add(p + "self_attn.q_proj.weight", {q_dim, s.hidden}, 2 * s_in);
    w.Add(p + "self_attn.k_proj.weight", {kv_dim, s.hidden}, 2 * s_in);
    w.Add(p + "self_attn.v_proj.weight", {kv_dim, s.hidden}, s_in);
    if (qkv_bias) {
      w.Add(p + "self_attn.q_proj.bias", {q_dim}, 0.5);
      w.Add(p + "self_attn.k_proj.bias", {kv_dim}, 0.5);
      w.Add(p + "self_attn.v_proj.bias", {kv_dim}, 0.5);
    }
    w.Add(p + "self_attn.o_proj.weight", {s.hidden, q_dim}, s_in);
    w.Add(p + "post_attention_layernorm.weight", {s.hidden}, 0.1, 1.0);
    w.Add(p + "mlp.gate_proj.weight", {s.inter, s.hidden}, s_in);
    w.Add(p + "mlp.up_proj.weight", {s.inter, s.hidden}, s_in);
    w.Add(p + "mlp.down_proj.weight", {s.hidden, s.inter}, s_inter);
    per_layer(p, i);
  }
}
inline void AddTinyLlamaWeights(TinyCheckpoint& w, const TinyLlamaShape& s, bool qkv_bias) {
  AddTinyLlamaWeights(w, s, qkv_bias, [](const std::string&, int32_t) {});
}

// The config.json of the tiny Gemma 3 that AddTinyGemma3Weights fills with
// shape {50, 24, 40, 4, 2, 8, 6}: 5 local : 1 global (window 4), linear
// RoPE scaling x2 on the global layers, query_pre_attn_scalar 10.
inline constexpr const char* kTinyGemma3Config =
    R"({"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
  "hidden_size": 24, "intermediate_size": 40, "num_hidden_layers": 6, "num_attention_heads": 4,
  "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 50, "max_position_embeddings": 256,
  "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
  "rope_scaling": {"rope_type": "linear", "factor": 2.0}, "sliding_window": 4,
  "sliding_window_pattern": 6, "query_pre_attn_scalar": 10, "hidden_activation": "gelu_pytorch_tanh",
  "attn_logit_softcapping": null, "final_logit_softcapping": null, "tie_word_embeddings": true,
  "bos_token_id": 2, "eos_token_id": 1})";

// The tensors of a Gemma3ForCausalLM (tied head; four norms a layer and
// QK-norm) in HF names.
inline void AddTinyGemma3Weights(TinyCheckpoint& w, const TinyLlamaShape& s) {
  const double s_in = 1.0 / std::sqrt(double(s.hidden)), s_inter = 1.0 / std::sqrt(double(s.inter));
  w.Add("model.embed_tokens.weight", {s.vocab, s.hidden}, 0.5);
  w.Add("model.norm.weight", {s.hidden}, 0.2);
  for (int32_t i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    for (const char* norm :
         {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"})
      w.Add(p + norm + ".weight", {s.hidden}, 0.2);
    w.Add(p + "self_attn.q_proj.weight", {s.heads * s.head_dim, s.hidden}, s_in);
    w.Add(p + "self_attn.k_proj.weight", {s.kv_heads * s.head_dim, s.hidden}, s_in);
    w.Add(p + "self_attn.v_proj.weight", {s.kv_heads * s.head_dim, s.hidden}, s_in);
    w.Add(p + "self_attn.o_proj.weight", {s.hidden, s.heads * s.head_dim}, s_in);
    w.Add(p + "self_attn.q_norm.weight", {s.head_dim}, 0.5);
    w.Add(p + "self_attn.k_norm.weight", {s.head_dim}, 0.5);
    w.Add(p + "mlp.gate_proj.weight", {s.inter, s.hidden}, 2 * s_in);
    w.Add(p + "mlp.up_proj.weight", {s.inter, s.hidden}, s_in);
    w.Add(p + "mlp.down_proj.weight", {s.hidden, s.inter}, s_inter);
  }
}

// y = x w^T (+ bias): x [n, in], w [out, in], bias [out] or null -> y [n, out]
inline Vec RefLinear(const Vec& x, int64_t n, const Vec& w, int64_t out, int64_t in, const Vec* bias = nullptr) {
  Vec y(static_cast<size_t>(n * out));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double s = bias ? (*bias)[size_t(o)] : 0.0;
      for (int64_t i = 0; i < in; ++i) s += x[size_t(t * in + i)] * w[size_t(o * in + i)];
      y[size_t(t * out + o)] = s;
    }
  return y;
}

// Each row of x [rows, dim]: x / sqrt(mean(x²) + eps) * (offset + w). offset 0
// is LlamaRMSNorm, 1 Gemma's RMSNorm.
inline Vec RefRmsNorm(const Vec& x, int64_t rows, int64_t dim, const Vec& w, double eps, double offset = 0.0) {
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += x[size_t(r * dim + i)] * x[size_t(r * dim + i)];
    const double inv = 1.0 / std::sqrt(ss / double(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) y[size_t(r * dim + i)] = x[size_t(r * dim + i)] * inv * (offset + w[size_t(i)]);
  }
  return y;
}

// HF apply_rotary_pos_emb (rotate_half) on x [n, heads, d], token t at
// position pos[t] / linear_factor (linear RoPE scaling; 1 = none).
inline void RefRope(Vec& x, int64_t n, int64_t heads, int64_t d, const std::vector<int32_t>& pos, double base,
                    double linear_factor = 1.0) {
  const int64_t half = d / 2;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      double* v = &x[size_t((t * heads + h) * d)];
      for (int64_t i = 0; i < half; ++i) {
        const double inv_freq = 1.0 / std::pow(base, double(2 * i) / double(d));
        const double angle = double(pos[size_t(t)]) / linear_factor * inv_freq;
        const double a = v[i], b = v[i + half];
        v[i] = a * std::cos(angle) - b * std::sin(angle);
        v[i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
}

// Causal softmax attention of n tokens at positions 0..n-1 (eager HF
// attention with GQA): key j visible to query i iff j <= i and (window == 0
// or i - j < window).
//   q [n, heads, d], k, v [n, kv_heads, d] -> out [n, heads, d]
inline Vec RefAttention(const Vec& q, const Vec& k, const Vec& v, int64_t n, int64_t heads, int64_t kv_heads, int64_t d,
                        int64_t window, double scale) {
  Vec out(static_cast<size_t>(n * heads * d), 0.0);
  const int64_t group = heads / kv_heads;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kh = h / group;
      std::vector<double> logits;
      double top = -INFINITY;
      for (int64_t j = 0; j <= i; ++j) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c)
          s += q[size_t((i * heads + h) * d + c)] * k[size_t((j * kv_heads + kh) * d + c)];
        s *= scale;
        if (window > 0 && i - j >= window) s = -INFINITY;
        logits.push_back(s);
        top = std::max(top, s);
      }
      double sum = 0;
      for (double& l : logits) sum += (l = std::exp(l - top));
      for (int64_t j = 0; j <= i; ++j)
        for (int64_t c = 0; c < d; ++c)
          out[size_t((i * heads + h) * d + c)] += logits[size_t(j)] / sum * v[size_t((j * kv_heads + kh) * d + c)];
    }
  return out;
}

// Rows of `table` [vocab, dim] for `ids`.
inline Vec RefEmbed(const Vec& table, const std::vector<int32_t>& ids, int64_t dim) {
  Vec x;
  for (int32_t id : ids) x.insert(x.end(), table.begin() + id * dim, table.begin() + (id + 1) * dim);
  return x;
}

inline void AddInto(Vec& x, const Vec& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

inline double MaxAbsDiff(const std::vector<float>& a, const Vec& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

// What the Llama-family forward below varies by.
struct RefLlamaOptions {
  bool qkv_bias = false;  // Qwen2: q/k/v projection biases
  bool qk_norm = false;   // Qwen3: an RMSNorm over each head of q and k before RoPE
  double theta = 10000.0, eps = 1e-6;
  std::vector<int64_t> windows;  // [layers] each layer's window, 0 = full (empty: all full)
};

// LlamaForCausalLM.forward in float64 (with Qwen2's biases or Qwen3's q/k
// norms as `o` says) on AddTinyLlamaWeights' tensors of shape `s`: logits
// [n, vocab] for `ids` at positions 0..n-1.
inline Vec RefLlamaLogits(const TinyCheckpoint& w, const std::vector<int32_t>& ids, const TinyLlamaShape& s,
                          const RefLlamaOptions& o) {
  const int64_t n = int64_t(ids.size()), q_dim = s.heads * s.head_dim, kv_dim = s.kv_heads * s.head_dim;
  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  Vec x = RefEmbed(w["model.embed_tokens.weight"], ids, s.hidden);
  for (int32_t i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    auto bias = [&](const char* name) { return o.qkv_bias ? &w[p + "self_attn." + name + ".bias"] : nullptr; };
    const Vec h = RefRmsNorm(x, n, s.hidden, w[p + "input_layernorm.weight"], o.eps);
    Vec q = RefLinear(h, n, w[p + "self_attn.q_proj.weight"], q_dim, s.hidden, bias("q_proj"));
    Vec k = RefLinear(h, n, w[p + "self_attn.k_proj.weight"], kv_dim, s.hidden, bias("k_proj"));
    const Vec v = RefLinear(h, n, w[p + "self_attn.v_proj.weight"], kv_dim, s.hidden, bias("v_proj"));
    if (o.qk_norm) {
      q = RefRmsNorm(q, n * s.heads, s.head_dim, w[p + "self_attn.q_norm.weight"], o.eps);
      k = RefRmsNorm(k, n * s.kv_heads, s.head_dim, w[p + "self_attn.k_norm.weight"], o.eps);
    }
    RefRope(q, n, s.heads, s.head_dim, pos, o.theta);
    RefRope(k, n, s.kv_heads, s.head_dim, pos, o.theta);
    const int64_t window = o.windows.empty() ? 0 : o.windows[size_t(i)];
    const Vec a =
        RefAttention(q, k, v, n, s.heads, s.kv_heads, s.head_dim, window, 1.0 / std::sqrt(double(s.head_dim)));
    AddInto(x, RefLinear(a, n, w[p + "self_attn.o_proj.weight"], s.hidden, q_dim));
    const Vec h2 = RefRmsNorm(x, n, s.hidden, w[p + "post_attention_layernorm.weight"], o.eps);
    Vec g = RefLinear(h2, n, w[p + "mlp.gate_proj.weight"], s.inter, s.hidden);
    const Vec u = RefLinear(h2, n, w[p + "mlp.up_proj.weight"], s.inter, s.hidden);
    for (size_t j = 0; j < g.size(); ++j) g[j] = g[j] / (1.0 + std::exp(-g[j])) * u[j];
    AddInto(x, RefLinear(g, n, w[p + "mlp.down_proj.weight"], s.hidden, s.inter));
  }
  const Vec xn = RefRmsNorm(x, n, s.hidden, w["model.norm.weight"], o.eps);
  return RefLinear(xn, n, w["lm_head.weight"], s.vocab, s.hidden);
}

}  // namespace swan::test
