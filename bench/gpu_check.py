#!/usr/bin/env python3
"""The Python half of bench/gpu_check.sh: what needs PyTorch, and the table.

  gpu_check.py bandwidth             the GPU's copy bandwidth in GB/s (bytes
                                     read + written per second), one number
  gpu_check.py transformers OUT.json Llama 3.2 1B's shape with random bf16
                                     weights in Hugging Face transformers:
                                     decode tokens/s from each depth
  gpu_check.py table SWAN.json... [--hf HF.json]
                                     one markdown table of swan's rows (from
                                     `swan bench --json`) beside transformers'

The first two exit with status 3 when PyTorch or a CUDA device is missing,
so that the shell script can say so and go on.
"""
import json
import sys
import time

# Llama 3.2 1B's shape, as model/synthetic.cc's llama3.2-1b.
LLAMA_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
                rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=True)


def cuda_torch():
    try:
        import torch
    except ImportError:
        print("no PyTorch here", file=sys.stderr)
        sys.exit(3)
    if not torch.cuda.is_available():
        print("PyTorch sees no CUDA device", file=sys.stderr)
        sys.exit(3)
    return torch


def bandwidth():
    torch = cuda_torch()
    n = 1 << 30  # bytes per buffer: far beyond the L2
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 10
    start.record()
    for _ in range(reps):
        b.copy_(a)
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3
    print(f"{2 * n * reps / seconds / 1e9:.1f}")


def transformers_decode(out_path, depths, tokens):
    torch = cuda_torch()
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        print("no transformers here", file=sys.stderr)
        sys.exit(3)
    torch.manual_seed(1)
    config = LlamaConfig(**LLAMA_1B, torch_dtype="bfloat16")
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    rows = []
    with torch.inference_mode():
        for depth in depths:
            ids = torch.randint(0, LLAMA_1B["vocab_size"], (1, max(depth, 1)), device="cuda")
            runs = []
            for repeat in range(3):  # the first is a warm-up
                out = model(ids, use_cache=True)  # the depth, as one prefill
                cache = out.past_key_values
                next_id = out.logits[:, -1:].argmax(-1)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(tokens):
                    out = model(next_id, past_key_values=cache, use_cache=True)
                    cache = out.past_key_values
                    next_id = out.logits[:, -1:].argmax(-1)
                torch.cuda.synchronize()
                if repeat > 0:
                    runs.append(tokens / (time.perf_counter() - t0))
                del out, cache
                torch.cuda.empty_cache()
            rows.append({"depth": depth, "decode_tokens_per_s": sorted(runs)[len(runs) // 2], "runs": runs})
            print(f"  transformers at depth {depth}: {rows[-1]['decode_tokens_per_s']:.1f} tok/s", file=sys.stderr)
    import transformers
    report = {"transformers": transformers.__version__, "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(0), "attention": model.config._attn_implementation,
              "decode_tokens": tokens, "rows": rows}
    with open(out_path, "w") as f:
        json.dump(report, f, indent=1)


def table(swan_files, hf_file):
    hf = {}
    if hf_file:
        with open(hf_file) as f:
            hf = {r["depth"]: r["decode_tokens_per_s"] for r in json.load(f)["rows"]}
    print("| weights | plan | depth | swan tg tok/s | roofline tok/s | share of roofline | KV MiB "
          "| transformers tg tok/s (bf16, full) | swan / transformers |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path in swan_files:
        with open(path) as f:
            run = json.load(f)
        weights = run["command"].split("--weights ")[1].split()[0] if "--weights " in run["command"] else "-"
        for r in run["rows"]:
            roof = r["decode_roofline_tokens_per_s"]
            share = f"{100 * r['decode_fraction_of_roofline']:.0f}%" if roof > 0 else "-"
            theirs = hf.get(r["depth"]) if r["plan"] == "full" and weights == "bf16" else None
            compared = f"{theirs:.1f} | {r['decode_tokens_per_s'] / theirs:.2f}x" if theirs else "- | -"
            roof_cell = f"{roof:.1f}" if roof > 0 else "-"
            print(f"| {weights} | {r['plan']} | {r['depth']} | {r['decode_tokens_per_s']:.1f} | {roof_cell} | "
                  f"{share} | {r['kv_mib']:.1f} | {compared} |")

def main(argv):
    if len(argv) >= 1 and argv[0] == "bandwidth":
        return bandwidth()
    if len(argv) >= 2 and argv[0] == "transformers":
        depths = [int(d) for d in (argv[2] if len(argv) > 2 else "0,4096,32768").split(",")]
        tokens = int(argv[3]) if len(argv) > 3 else 16
        return transformers_decode(argv[1], depths, tokens)
    if len(argv) >= 2 and argv[0] == "table":
        files, hf = [], None
        rest = argv[1:]
        while rest:
            if rest[0] == "--hf" and len(rest) > 1:
                hf, rest = rest[1], rest[2:]
            else:
                files, rest = files + [rest[0]], rest[1:]
        return table(files, hf)
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
