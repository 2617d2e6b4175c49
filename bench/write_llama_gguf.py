#!/usr/bin/env python3
"""Writes a random-weight Llama in GGUF f16 with llama.cpp's own gguf-py.

The side by side (bench/llama_cpp_side_by_side.sh) measures models of the
sizes people run from files llama.cpp's tools wrote, not swan's converter:
this writes the f16 file, and llama-quantize makes the other types from it.
Tensors stream to the file one by one, so an 8B model (16 GB) needs little
memory. Weights are windows of one pool of normal values (std 0.02): their
values do not change what a token costs.

  python3 bench/write_llama_gguf.py --gguf-py DIR --out FILE --shape llama3.2-1b|llama3.1-8b
"""
import argparse
import sys

import numpy as np

# Llama 3.2 1B and Llama 3.1 8B: layers, hidden, heads, KV heads, MLP, vocab, tied.
SHAPES = {
    "llama3.2-1b": (16, 2048, 32, 8, 8192, 128256, True),
    "llama3.1-8b": (32, 4096, 32, 8, 14336, 128256, False),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py folder")
    parser.add_argument("--out", required=True, help="the GGUF file to write")
    parser.add_argument("--shape", required=True, choices=sorted(SHAPES))
    args = parser.parse_args()
    sys.path.insert(0, args.gguf_py)
    import gguf  # llama.cpp's writer, from its sources

    layers, hidden, heads, kv_heads, mlp, vocab, tied = SHAPES[args.shape]
    head_dim = hidden // heads
    rng = np.random.default_rng(1)
    pool = (rng.standard_normal(1 << 24, dtype=np.float32) * 0.02).astype(np.float16)  # [16M]
    pool = np.concatenate([pool, pool])  # [32M] any window of 16M values is contiguous

    def random_f16(rows, cols):  # [rows, cols] f16
        out = np.empty((rows, cols), dtype=np.float16)
        flat = out.reshape(-1)
        for start in range(0, flat.size, 1 << 24):
            n = min(1 << 24, flat.size - start)
            offset = int(rng.integers(0, 1 << 24))
            flat[start:start + n] = pool[offset:offset + n]
        return out

    # name -> (rows, cols) f16, or (cols,) f32 of ones (the RMS norms)
    tensors = [("token_embd.weight", (vocab, hidden))]
    for i in range(layers):
        b = f"blk.{i}."
        tensors += [(b + "attn_norm.weight", (hidden,)),
                    (b + "attn_q.weight", (heads * head_dim, hidden)),
                    (b + "attn_k.weight", (kv_heads * head_dim, hidden)),
                    (b + "attn_v.weight", (kv_heads * head_dim, hidden)),
                    (b + "attn_output.weight", (hidden, heads * head_dim)),
                    (b + "ffn_norm.weight", (hidden,)),
                    (b + "ffn_gate.weight", (mlp, hidden)),
                    (b + "ffn_up.weight", (mlp, hidden)),
                    (b + "ffn_down.weight", (hidden, mlp))]
    tensors.append(("output_norm.weight", (hidden,)))
    if not tied:
        tensors.append(("output.weight", (vocab, hidden)))

    writer = gguf.GGUFWriter(args.out, "llama")
    writer.add_name(f"random {args.shape}")
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_context_length(131072)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(mlp)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(500000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)
    writer.add_tokenizer_model("none")  # no vocabulary: both programs run on token ids
    for name, shape in tensors:
        dtype = np.float32 if len(shape) == 1 else np.float16
        writer.add_tensor_info(name, shape, np.dtype(dtype), int(np.prod(shape)) * np.dtype(dtype).itemsize)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    total = sum(int(np.prod(s)) for _, s in tensors)
    done, shown = 0, 0
    for name, shape in tensors:
        writer.write_tensor_data(np.ones(shape, dtype=np.float32) if len(shape) == 1 else random_f16(*shape))
        done += int(np.prod(shape))
        if done * 10 // total > shown:  # progress in tenths
            shown = done * 10 // total
            print(f"{args.shape}: {done / total:.0%} of {total / 1e9:.2f}B parameters written", file=sys.stderr)
    writer.close()


if __name__ == "__main__":
    main()
