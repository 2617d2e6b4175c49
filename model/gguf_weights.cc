#include "model/gguf_weights.h"

#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "ops/dequant_blocks.h"
#include "ops/quant_blocks.h"
#include "util/memory.h"

namespace swan {
namespace {

bool EndsWith(std::string_view s, std::string_view tail) { return s.ends_with(tail); }

// "model.layers.12.self_attn.q_proj.weight" -> 12 and "self_attn.q_proj.weight"
bool SplitLayer(const std::string& hf, int* layer, std::string* rest) {
  const std::string head = "model.layers.";
  if (hf.rfind(head, 0) != 0) return false;
  const size_t dot = hf.find('.', head.size());
  if (dot == std::string::npos) return false;
  *layer = std::stoi(hf.substr(head.size(), dot - head.size()));
  *rest = hf.substr(dot + 1);
  return true;
}

}  // namespace

int64_t LlamaQkHfRow(int64_t gguf_row, int64_t head_dim) {
  const int64_t head = gguf_row / head_dim, r = gguf_row % head_dim;  // r = 2i + j
  return head * head_dim + (r % 2) * (head_dim / 2) + r / 2;
}

std::string GgufTensorName(const std::string& hf, const std::string& architecture) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  int layer = 0;
  std::string rest;
  if (!SplitLayer(hf, &layer, &rest)) return "";
  const bool gemma = architecture == "gemma3";
  struct Pair {
    const char* hf;
    const char* gguf;
  };
  static const Pair kNames[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
  };
  const std::string blk = "blk." + std::to_string(layer) + ".";
  // Llama's norm after attention is the MLP's input norm; Gemma 3 has both.
  if (rest == "post_attention_layernorm.weight")
    return blk + (gemma ? "post_attention_norm.weight" : "ffn_norm.weight");
  for (const Pair& p : kNames)
    if (rest == p.hf) return blk + p.gguf;
  return "";
}

GgufWeights::GgufWeights(const GgufFile& file, const ModelConfig& config) : file_(file), config_(config) {
  // read by GgufModelConfig: the RoPE factors, granite_swa's sink logits (checked to be none)
  if (config.rope.scaling.kind == RopeScaling::Kind::kFrequencyFactors) read_.insert("rope_freqs.weight");
  if (config.model_type == "granite_swa")
    for (int32_t l = 0; l < config.n_layers; ++l) read_.insert("blk." + std::to_string(l) + ".attn_sinks.weight");
}

bool GgufWeights::Has(const std::string& name) const {
  const std::string g = GgufTensorName(name, config_.model_type);
  return !g.empty() && file_.Tensor(g) != nullptr;
}

const GgufTensor& GgufWeights::Find(const std::string& hf, const std::vector<int64_t>& shape) const {
  const std::string g = GgufTensorName(hf, config_.model_type);
  const GgufTensor* t = g.empty() ? nullptr : file_.Tensor(g);
  if (!t) throw std::runtime_error(file_.origin() + ": missing tensor '" + (g.empty() ? hf : g) + "' (" + hf + ")");
  std::vector<int64_t> ne(shape.rbegin(), shape.rend());  // GGUF lists the innermost first
  if (t->ne != ne)
    throw std::runtime_error(file_.origin() + ": tensor '" + g + "' has ne " + ShapeToString(t->ne) + ", expected " +
                             ShapeToString(ne));
  read_.insert(g);
  return *t;
}

namespace {

// Q3_K, which swan holds as Q6_K.
bool IsQ3K(const GgufTensor& t) { return t.type == uint32_t(GgmlType::kQ3_K); }

// A tensor's type, which swan computes in; throws naming the file and
// tensor for a type it does not read.
WeightType FormatOf(const GgufTensor& t, const std::string& origin) {
  const std::optional<WeightType> f = WeightTypeOf(t.type);
  if (!f)
    throw std::runtime_error(origin + ": tensor '" + t.name + "' of " + GgmlTypeName(t.type) +
                             " is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, "
                             "Q6_K)");
  return *f;
}

}  // namespace

std::vector<float> GgufWeights::F32(const std::string& name, const std::vector<int64_t>& shape) const {
  const GgufTensor& t = Find(name, shape);
  const int64_t in = t.ne[0], rows = t.numel() / in;
  std::vector<float> out(size_t(t.numel()));  // [numel]
  if (IsQ3K(t))
    DequantizeFormatRow(DequantFormat::kQ3_K, out.data(), t.data, t.numel());
  else
    DequantizeRows(FormatOf(t, file_.origin()), out.data(), t.data, rows, in);
  // llama.cpp's converter stores Gemma's norm weights as 1 + w
  if (config_.model_type == "gemma3" && EndsWith(name, "norm.weight"))
    for (float& v : out) v -= 1.0f;
  return out;
}

std::optional<WeightType> GgufHeldType(const GgufTensor& t) {
  return IsQ3K(t) ? std::optional<WeightType>(WeightType::kQ6_K) : WeightTypeOf(t.type);
}

WeightType GgufWeights::LinearType(const std::string& name) const {
  const std::string g = GgufTensorName(name, config_.model_type);
  const GgufTensor* t = g.empty() ? nullptr : file_.Tensor(g);
  return (t ? GgufHeldType(*t) : std::nullopt).value_or(WeightType::kF32);
}

LinearWeight GgufWeights::Linear(const std::string& name, int64_t out, int64_t in) const {
  const GgufTensor& t = Find(name, {out, in});
  const bool permuted = LlamaRowOrder(config_.model_type) &&
                        (EndsWith(name, "self_attn.q_proj.weight") || EndsWith(name, "self_attn.k_proj.weight"));
  std::vector<int64_t> order;  // [out] Hugging Face's row r is the file's row order[r]; empty: the same row
  if (permuted) {
    order.resize(size_t(out));
    for (int64_t g = 0; g < out; ++g) order[size_t(LlamaQkHfRow(g, config_.head_dim))] = g;
  }
  if (IsQ3K(t)) {
    // held as Q6_K of the same values (ops/dequant_blocks.h), converted 16 rows at a time as they are packed
    const int64_t blocks = in / DequantBlockValues(DequantFormat::kQ3_K);
    const size_t q3_row = size_t(blocks) * DequantBlockBytes(DequantFormat::kQ3_K);
    const size_t q6_row = size_t(blocks) * DequantBlockBytes(DequantFormat::kQ6_K);
    LinearWeight w =
        LinearWeight::PackedFrom(out, in, WeightType::kQ6_K, [&](int64_t first, int64_t count, uint8_t* rows) {
          for (int64_t r = 0; r < count; ++r) {
            const int64_t src = order.empty() ? first + r : order[size_t(first + r)];
            Q3KAsQ6K(t.data + size_t(src) * q3_row, blocks, rows + size_t(r) * q6_row);
          }
        });
    Evict(name);  // converted into a copy
    return w;
  }
  const WeightType format = FormatOf(t, file_.origin());
  if (!permuted) {
    // a block format's rows leave the mapping as they are packed
    const auto evict = [&](const uint8_t* span, size_t bytes) {
      if (file_.owner()) EvictMappedPages(span, bytes);
    };
    LinearWeight w = LinearWeight::Borrow(file_.owner(), t.data, format, out, in, evict);
    if (IsBlockQuantized(format)) Evict(name);  // packed into a copy: the file's bytes are not read again
    return w;
  }
  // rows back in Hugging Face's order (whole rows, so blocks too)
  LinearWeight w = LinearWeight::Reordered(t.data, format, out, in, order.data());
  Evict(name);  // reordered into a copy
  return w;
}

void GgufWeights::Evict(const std::string& name) const {
  if (!file_.owner()) return;  // the caller's bytes, not a mapping: dropping them would lose them
  const std::string g = GgufTensorName(name, config_.model_type);
  if (const GgufTensor* t = g.empty() ? nullptr : file_.Tensor(g)) EvictMappedPages(t->data, t->n_bytes);
}

void GgufWeights::RequireAllUsed() const {
  std::vector<std::string> unused;
  for (const GgufTensor& t : file_.tensors())
    if (!read_.count(t.name)) unused.push_back(t.name);
  if (unused.empty()) return;
  std::string list;
  for (size_t i = 0; i < unused.size() && i < 3; ++i) list += (i ? ", " : "") + unused[i];
  if (unused.size() > 3) list += ", ...";
  throw std::runtime_error(file_.origin() + ": the file holds " + std::to_string(unused.size()) +
                           " tensors the model does not use (" + list + ")");
}

}  // namespace swan
