"""Attention plans side by side from Python (docs/python.md walks through it).

1. swan's default model under its own 3:1 hybrid plan and under a window of
   64 + 4 sinks: the plan per layer, a continuation of a prompt, and where on
   the prompt the window plan's log-probabilities part from the model's.
2. A retrieval lab model (models/lab/hybrid) compared under three plans, as
   `swan compare --json` reports it: recall by key->query distance, plotted
   with matplotlib when it is installed.

Usage: python3 examples/compare_plans.py [--plot FILE.png]   (from the checkout)
"""

import argparse
import os

import numpy as np

import swan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log_softmax(logits):
    x = logits.astype(np.float64)
    x -= x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def plans_on_a_prompt():
    path = os.path.join(ROOT, "models", "swan-7m")
    own = swan.load(path)
    window = swan.load(path, plan="swa:64,sinks:4")
    print("plan of %s: %s" % (path, ", ".join("%d:%s" % (l["layer"], l["kind"]) for l in own.plan)))
    prompt = "import os\nimport sys\n\n\ndef main("
    for model in (own, window):
        print("%-16s %r" % (model.plan_spec, str(model.generate(prompt, 24, temperature=0))))

    # A longer text: the window plan sees only the last 64 keys (and 4 sinks).
    with open(os.path.join(ROOT, "models", "README.md")) as f:
        ids = own.tokenizer.encode(f.read())[:512]
    cache = own.new_cache(len(ids))
    lp_own = log_softmax(own.forward(ids, cache))
    lp_window = log_softmax(window.logits(ids))
    token_lp = lambda lp: lp[np.arange(len(ids) - 1), ids[1:]]
    gap = token_lp(lp_own) - token_lp(lp_window)
    print("mean log-prob of the text's next tokens: own plan %.3f, window %.3f" %
          (token_lp(lp_own).mean(), token_lp(lp_window).mean()))
    print("largest difference inside the first 64 positions: %.2e, after: %.3f nats" %
          (np.abs(gap[:63]).max(), np.abs(gap[63:]).max()))
    print("KV cache after %d tokens under the model's plan: %.1f KiB" % (cache.n_pos, cache.nbytes / 1024))


def recall_by_distance(plot):
    model = swan.load(os.path.join(ROOT, "models", "lab", "hybrid"))
    report = swan.compare(model, plans=["model", "full", "swa:64,sinks:4"], suite={"samples": 16})
    print("\nrecall by key->query distance, %s, %d sequences per plan:" % (report["model"], report["sequences"]))
    bins = report["plans"][0]["bins"]
    print("%-16s" % "plan" + "".join("%12s" % ("[%d,%d)" % (b["lo"], b["hi"])) for b in bins))
    for plan in report["plans"]:
        print("%-16s" % plan["plan"] + "".join("%11.1f%%" % (100 * b["accuracy"]) for b in plan["bins"]))
    if plot:
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            print("(matplotlib is not installed: no plot)")
            return
        labels = ["[%d,%d)" % (b["lo"], b["hi"]) for b in bins]
        for plan in report["plans"]:
            plt.plot(labels, [100 * b["accuracy"] for b in plan["bins"]], marker="o", label=plan["plan"])
        plt.xlabel("key -> query distance")
        plt.ylabel("recall (%)")
        plt.legend()
        plt.savefig(plot)
        print("wrote", plot)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plot", help="write recall by distance as a picture (needs matplotlib)")
    args = parser.parse_args()
    plans_on_a_prompt()
    recall_by_distance(args.plot)
