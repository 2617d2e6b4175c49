// Writes a Llama-family model of random float32 weights (uniform, standard
// deviation 0.02; norms 1) as a Hugging Face directory: config.json and
// model.safetensors, streamed, so that any shape can be written in little
// memory (tests of memory use; benchmarks in real models' shapes).
//   usage: node scripts/random_model.mjs --out DIR [--hidden 512] [--layers 4]
//            [--inter 1536] [--heads 8] [--kv-heads 8] [--head-dim H/heads]
//            [--vocab 16384] [--tied] [--seed 1] [--qkv-bias] [--arch LlamaForCausalLM]
//            [--max-pos 4096 (Gemma 3: 32768)] [--sliding-window 512] [--pattern 6]
// --qkv-bias adds q/k/v projection biases (Qwen2's layout; like Qwen2's
// configs, config.json then says nothing of them).
// --arch Gemma3ForCausalLM writes Gemma 3's layout: q/k norms, pre/post
// feed-forward norms (all norms 0, since Gemma scales by 1 + weight), GELU-tanh,
// every --pattern-th layer global and the others a window of --sliding-window,
// RoPE base 1M global / 10K local.
// A Llama given --sliding-window is swan's hybrid: every --pattern-th layer
// full, the others a window of --sliding-window (config.json's layer_types).
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const out = flag("--out");
if (!out) { console.error("--out DIR is required"); process.exit(2); }
const hidden = Number(flag("--hidden", 512)), layers = Number(flag("--layers", 4));
const inter = Number(flag("--inter", 1536)), heads = Number(flag("--heads", 8));
const kvHeads = Number(flag("--kv-heads", heads)), headDim = Number(flag("--head-dim", hidden / heads));
const vocab = Number(flag("--vocab", 16384)), tied = args.includes("--tied");
const qkvBias = args.includes("--qkv-bias"), arch = flag("--arch", "LlamaForCausalLM");
const gemma3 = arch === "Gemma3ForCausalLM";
const slidingWindow = Number(flag("--sliding-window", 512)), pattern = Number(flag("--pattern", 6));
const maxPos = Number(flag("--max-pos", gemma3 ? 32768 : 4096));
let state = (Number(flag("--seed", 1)) * 2654435761) >>> 0 || 1;

// [name, shape] in the order they are written
const tensors = [["model.embed_tokens.weight", [vocab, hidden]]];
for (let l = 0; l < layers; ++l) {
  const p = `model.layers.${l}.`;
  tensors.push([p + "input_layernorm.weight", [hidden]], [p + "self_attn.q_proj.weight", [heads * headDim, hidden]],
               [p + "self_attn.k_proj.weight", [kvHeads * headDim, hidden]],
               [p + "self_attn.v_proj.weight", [kvHeads * headDim, hidden]],
               [p + "self_attn.o_proj.weight", [hidden, heads * headDim]],
               ...(gemma3 ? [[p + "self_attn.q_norm.weight", [headDim]], [p + "self_attn.k_norm.weight", [headDim]]] : []),
               ...(qkvBias ? [[p + "self_attn.q_proj.bias", [heads * headDim]], [p + "self_attn.k_proj.bias", [kvHeads * headDim]],
                              [p + "self_attn.v_proj.bias", [kvHeads * headDim]]] : []),
               [p + "post_attention_layernorm.weight", [hidden]],
               ...(gemma3 ? [[p + "pre_feedforward_layernorm.weight", [hidden]]] : []),
               [p + "mlp.gate_proj.weight", [inter, hidden]],
               [p + "mlp.up_proj.weight", [inter, hidden]], [p + "mlp.down_proj.weight", [hidden, inter]],
               ...(gemma3 ? [[p + "post_feedforward_layernorm.weight", [hidden]]] : []));
}
tensors.push(["model.norm.weight", [hidden]]);
if (!tied) tensors.push(["lm_head.weight", [vocab, hidden]]);

const header = {};
let offset = 0;
for (const [name, shape] of tensors) {
  const bytes = shape.reduce((a, b) => a * b, 1) * 4;
  header[name] = { dtype: "F32", shape, data_offsets: [offset, offset + bytes] };
  offset += bytes;
}
let json = JSON.stringify(header);
json += " ".repeat((8 - (json.length % 8)) % 8);  // keeps the data 8-byte aligned

mkdirSync(out, { recursive: true });
const config = {
  architectures: [arch], model_type: arch.replace("ForCausalLM", "").toLowerCase(), hidden_size: hidden, intermediate_size: inter,
  num_hidden_layers: layers, num_attention_heads: heads, num_key_value_heads: kvHeads, head_dim: headDim,
  vocab_size: vocab, max_position_embeddings: maxPos, rms_norm_eps: 1e-5, rope_theta: 10000,
  tie_word_embeddings: tied, bos_token_id: 1, eos_token_id: 2, torch_dtype: "float32",
};
if (gemma3)  // Gemma 3 1B's settings, in its config's words
  Object.assign(config, {
    model_type: "gemma3_text", rms_norm_eps: 1e-6, rope_theta: 1000000,
    rope_local_base_freq: 10000, sliding_window: slidingWindow, sliding_window_pattern: pattern,
    query_pre_attn_scalar: headDim, hidden_activation: "gelu_pytorch_tanh",
  });
else if (args.includes("--sliding-window"))
  Object.assign(config, {
    sliding_window: slidingWindow,
    layer_types: Array.from({ length: layers }, (_, l) => ((l + 1) % pattern === 0 ? "full_attention" : "sliding_attention")),
  });
writeFileSync(join(out, "config.json"), JSON.stringify(config, null, 1) + "\n");
const fd = openSync(join(out, "model.safetensors"), "w");
const length = Buffer.alloc(8);
length.writeBigUInt64LE(BigInt(json.length));
writeSync(fd, length);
writeSync(fd, json);
// xorshift32 values, uniform on [-a, a] with a = 0.02 sqrt(3)
const chunk = new Float32Array(1 << 18);
const a = 0.02 * Math.sqrt(3);
for (const [name, shape] of tensors) {
  let left = shape.reduce((x, y) => x * y, 1);
  const norm = name.endsWith("norm.weight");
  while (left > 0) {
    const n = Math.min(left, chunk.length);
    for (let i = 0; i < n; ++i) {
      if (norm) { chunk[i] = gemma3 ? 0 : 1; continue; }
      state ^= state << 13; state ^= state >>> 17; state ^= state << 5; state >>>= 0;
      chunk[i] = (state / 4294967296 * 2 - 1) * a;
    }
    writeSync(fd, new Uint8Array(chunk.buffer, 0, n * 4));
    left -= n;
  }
}
closeSync(fd);
console.log(`${out}: ${tensors.length} tensors, ${(offset / 1048576).toFixed(1)} MiB of float32 weights`);
