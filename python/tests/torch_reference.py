"""Small Llama, Qwen2 and Gemma 3 models written from scratch, and their
forward pass in PyTorch, written from the Hugging Face modeling files
(modeling_llama.py, modeling_qwen2.py, modeling_gemma3.py), not from swan.

The attention mask is swan's window rule as docs/design.md §1 states it:
a query at position q sees the key at k iff k <= q and (W == 0 or q - k < W
or k < S). Agreement with swan is therefore also a check of its window
convention.
"""

import json
import math
import os
import struct

import numpy as np
import torch

FAMILIES = ("llama", "qwen2", "gemma3")


def write_safetensors(path, tensors):
    """tensors: name -> float32 numpy array."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def make_model(directory, family, seed=0):
    """A random model of `family` in `directory` (config.json and
    model.safetensors); returns (config, weights as torch tensors)."""
    rng = np.random.default_rng(seed)
    hidden, heads, kv_heads, head_dim, mlp, vocab = 64, 4, 2, 16, 96, 101
    layers = 3
    config = {
        "hidden_size": hidden, "intermediate_size": mlp, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
        "vocab_size": vocab, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "tie_word_embeddings": family == "gemma3", "torch_dtype": "float32",
        "bos_token_id": 1, "eos_token_id": 2,
    }
    if family == "llama":
        config.update(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu")
    elif family == "qwen2":
        config.update(architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_act="silu",
                      use_sliding_window=False)
    else:
        # Layers 0 and 1 local (a window of 6, RoPE base 10000), layer 2 global.
        config.update(architectures=["Gemma3ForCausalLM"], model_type="gemma3_text",
                      hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24, sliding_window=6,
                      sliding_window_pattern=3, rope_local_base_freq=10000.0, rope_theta=1000000.0,
                      final_logit_softcapping=None, attn_logit_softcapping=None)

    def matrix(rows, cols):
        return rng.standard_normal((rows, cols)).astype(np.float32) / math.sqrt(cols)

    def norm(n):
        # Gemma stores w of (1 + w); the others w itself.
        centre = 0.0 if family == "gemma3" else 1.0
        return (centre + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w = {"model.embed_tokens.weight": rng.standard_normal((vocab, hidden)).astype(np.float32),
         "model.norm.weight": norm(hidden)}
    if not config["tie_word_embeddings"]:
        w["lm_head.weight"] = matrix(vocab, hidden)
    for i in range(layers):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = norm(hidden)
        w[p + "post_attention_layernorm.weight"] = norm(hidden)
        w[p + "self_attn.q_proj.weight"] = matrix(heads * head_dim, hidden)
        w[p + "self_attn.k_proj.weight"] = matrix(kv_heads * head_dim, hidden)
        w[p + "self_attn.v_proj.weight"] = matrix(kv_heads * head_dim, hidden)
        w[p + "self_attn.o_proj.weight"] = matrix(hidden, heads * head_dim)
        w[p + "mlp.gate_proj.weight"] = matrix(mlp, hidden)
        w[p + "mlp.up_proj.weight"] = matrix(mlp, hidden)
        w[p + "mlp.down_proj.weight"] = matrix(hidden, mlp)
        if family == "qwen2":
            for name, n in (("q", heads), ("k", kv_heads), ("v", kv_heads)):
                w[p + "self_attn.%s_proj.bias" % name] = (0.1 * rng.standard_normal(n * head_dim)).astype(np.float32)
        if family == "gemma3":
            w[p + "self_attn.q_norm.weight"] = norm(head_dim)
            w[p + "self_attn.k_norm.weight"] = norm(head_dim)
            w[p + "pre_feedforward_layernorm.weight"] = norm(hidden)
            w[p + "post_feedforward_layernorm.weight"] = norm(hidden)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    write_safetensors(os.path.join(directory, "model.safetensors"), w)
    return config, {k: torch.from_numpy(v) for k, v in w.items()}


def rms_norm(x, weight, eps, unit_offset):
    x64 = x.double()
    y = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps)
    return y * ((1.0 + weight.double()) if unit_offset else weight.double())


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(x, positions, base):
    """HF's apply_rotary_pos_emb on x [n, heads, head_dim]."""
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = positions.double()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
    return x * cos + rotate_half(x) * sin


def sees(q, k, window, sinks):
    """docs/design.md §1, written out."""
    return k <= q and (window == 0 or q - k < window or k < sinks)


def layer_spans(config, family, plan):
    """The (window, sinks) of each layer under `plan`: "model" (the config's own),
    "full", or ("swa", W, S)."""
    n = config["num_hidden_layers"]
    if plan == "full":
        return [(0, 0)] * n
    if plan == "model":
        if family == "gemma3":
            pattern = config["sliding_window_pattern"]
            return [((config["sliding_window"], 0) if (i + 1) % pattern else (0, 0)) for i in range(n)]
        return [(0, 0)] * n
    _, window, sinks = plan
    return [(window, sinks)] * n


def forward(config, w, family, ids, spans):
    """Logits [n, vocab] as float64 for token ids under per-layer spans."""
    hidden, heads, kv_heads = config["hidden_size"], config["num_attention_heads"], config["num_key_value_heads"]
    head_dim, eps = config["head_dim"], config["rms_norm_eps"]
    gemma = family == "gemma3"
    n = len(ids)
    positions = torch.arange(n)
    x = w["model.embed_tokens.weight"].double()[torch.tensor(ids)]
    if gemma:
        x = x * float(np.float32(math.sqrt(hidden)))  # HF: the normalizer in the activations' dtype
    scale = config["query_pre_attn_scalar"] ** -0.5 if gemma else head_dim ** -0.5
    mask = torch.zeros(len(spans), n, n, dtype=torch.bool)
    for layer, (window, sinks) in enumerate(spans):
        for q in range(n):
            for k in range(n):
                mask[layer, q, k] = sees(q, k, window, sinks)

    def linear(name, h):
        y = h @ w[name + ".weight"].double().T
        if name + ".bias" in w:
            y = y + w[name + ".bias"].double()
        return y

    for i in range(config["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps, gemma)
        q = linear(p + "self_attn.q_proj", h).view(n, heads, head_dim)
        k = linear(p + "self_attn.k_proj", h).view(n, kv_heads, head_dim)
        v = linear(p + "self_attn.v_proj", h).view(n, kv_heads, head_dim)
        if gemma:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps, True)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps, True)
            local = (i + 1) % config["sliding_window_pattern"] != 0
            base = config["rope_local_base_freq"] if local else config["rope_theta"]
        else:
            base = config["rope_theta"]
        q, k = rope(q, positions, base), rope(k, positions, base)
        group = heads // kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q, k) * scale
        scores = scores.masked_fill(~mask[i][None], float("-inf"))
        attn = torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), v).reshape(n, heads * head_dim)
        o = linear(p + "self_attn.o_proj", attn)
        if gemma:
            o = rms_norm(o, w[p + "post_attention_layernorm.weight"], eps, True)
            x = x + o
            h = rms_norm(x, w[p + "pre_feedforward_layernorm.weight"], eps, True)
            gate = torch.nn.functional.gelu(linear(p + "mlp.gate_proj", h), approximate="tanh")
            m = linear(p + "mlp.down_proj", gate * linear(p + "mlp.up_proj", h))
            x = x + rms_norm(m, w[p + "post_feedforward_layernorm.weight"], eps, True)
        else:
            x = x + o
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps, False)
            gate = torch.nn.functional.silu(linear(p + "mlp.gate_proj", h))
            x = x + linear(p + "mlp.down_proj", gate * linear(p + "mlp.up_proj", h))
    x = rms_norm(x, w["model.norm.weight"], eps, gemma)
    head = w["model.embed_tokens.weight"] if config["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.double().T
