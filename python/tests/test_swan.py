"""The Python module against the CLI, against PyTorch, and as a user calls it.

Run from CTest (python_tests), or by hand:
    PYTHONPATH=build/python SWAN_BINARY=build/swan /usr/bin/python3 -m unittest discover -s python/tests
"""

import json
import os
import pickle
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import numpy as np

import swan

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("SWAN_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
BINARY = os.environ.get("SWAN_BINARY", os.path.join(SOURCE, "build", "swan"))
STORIES = os.path.join(SOURCE, "models", "stories260K")
SWAN_7M = os.path.join(SOURCE, "models", "swan-7m")
# stories260K's greedy continuation of "Once upon a time" (cli/CMakeLists.txt).
STORY_IDS = [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317]


# A prefill product's rounding can depend on its thread count
# (docs/serving.md, "Batch invariance"), and a model loaded with threads=
# sets the process's limit for the tests after it: the comparisons with the
# CLI run both sides on this many threads, the command without its choice
# of the idle cores.
THREADS = 2


def run_cli(*args, computes=True):
    """computes: the command takes -t (convert does not)."""
    env = dict(os.environ, SWAN_ADAPT_THREADS="0")
    threads = ["-t", str(THREADS)] if computes else []
    return subprocess.run([BINARY, *args, *threads], check=True, capture_output=True, text=True, env=env).stdout


def log_softmax(logits):
    x = logits.astype(np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


class AgreesWithTheCli(unittest.TestCase):
    def score_cli(self, model, ids, *flags):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.write(json.dumps(ids) + "\n")
            f.flush()
            return [json.loads(line) for line in run_cli("score", "-m", model, "--ids", f.name, *flags).splitlines()]

    def test_score_is_swan_score_bit_for_bit(self):
        for model, plan, kv, ids in ((STORIES, "full", "f32", STORY_IDS),
                                     (STORIES, "swa:4,sinks:2", "bf16", STORY_IDS),
                                     (SWAN_7M, "", "f32", list(range(5, 300, 7)))):
            with self.subTest(model=model, plan=plan):
                flags = ["--kv", kv] + (["--attn", plan] if plan else [])
                cli = self.score_cli(model, ids, *flags)
                ours = swan.load(model, plan=plan, kv=kv, threads=THREADS).score(ids)
                self.assertEqual(len(cli), len(ids) - 1)
                for c, o in zip(cli, ours):
                    self.assertEqual(c["logprob"], o["logprob"])  # exact: the same double
                    self.assertEqual((c["position"], c["token"], c["greedy"], c["correct"]),
                                     (o["position"], o["token"], o["greedy"], o["correct"]))

    def test_logits_give_the_scores(self):
        m = swan.load(STORIES, plan="swa:4,sinks:2")
        logits = m.logits(STORY_IDS)
        self.assertEqual(logits.shape, (len(STORY_IDS), 512))
        self.assertEqual(logits.dtype, np.float32)
        lp = log_softmax(logits)
        for s in m.score(STORY_IDS, positions=[3, 9]):
            self.assertAlmostEqual(lp[s["position"] - 1, s["token"]], s["logprob"], delta=1e-5)
            self.assertEqual(int(np.argmax(logits[s["position"] - 1])), s["greedy"])

    def test_generate_is_swan_generate(self):
        m = swan.load(STORIES)
        cli = run_cli("generate", "-m", STORIES, "-p", "Once upon a time", "-n", "24", "--temp", "0")
        gen = m.generate("Once upon a time", 24, temperature=0)
        self.assertEqual("Once upon a time" + gen.text, cli.rstrip("\n"))
        self.assertEqual(len(gen.tokens), 24)
        self.assertEqual(gen.finish_reason, "length")
        # Streaming gives the same pieces; ids in, ids out.
        self.assertEqual("".join(m.generate("Once upon a time", 24, temperature=0)), gen.text)
        ids = list(m.generate(STORY_IDS[:6], 9, temperature=0))
        self.assertEqual(ids, STORY_IDS[6:])

    def test_generate_stops_at_a_stop_string(self):
        m = swan.load(STORIES)
        gen = m.generate("Once upon a time", 40, temperature=0, stop=["Lily"])
        self.assertEqual(gen.text, ", there was a little girl named ")
        self.assertEqual(gen.finish_reason, "stop")
        sampled = [str(m.generate("Once upon a time", 12, temperature=0.8, seed=s)) for s in (1, 1, 2)]
        self.assertEqual(sampled[0], sampled[1])
        self.assertNotEqual(sampled[0], sampled[2])

    def test_compare_is_swan_compare_json(self):
        lines = []
        ours = swan.compare(swan.load(STORIES, threads=THREADS), plans=["full", "swa:16,sinks:4"], context=256,
                            suite={"limit": 1, "samples": 1}, bench_depths=[16], progress=lines.append)
        cli = json.loads(run_cli("compare", "-m", STORIES, "--attn", "full;swa:16,sinks:4", "-c", "256", "--limit",
                                 "1", "--samples", "1", "--bench-depths", "16", "--json", "--quiet"))
        self.assertTrue(lines)
        self.assertEqual([p["plan"] for p in ours["plans"]], ["full", "swa:16,sinks:4"])
        self.assertTrue(ours["plans"][0]["retrieval"])

        def quality(report):  # everything but timings and provenance
            plans = [{k: v for k, v in p.items() if k not in ("cost", "seconds")} for p in report["plans"]]
            rows = [r for r in report["table"] if "tok/s" not in r["metric"]]
            return plans, rows

        self.assertEqual(quality(ours), quality(cli))


class AgreesWithPyTorch(unittest.TestCase):
    """A small Llama, Qwen2 and Gemma 3 written here, run by swan and by a
    PyTorch forward written from the HF modeling files."""

    @classmethod
    def setUpClass(cls):
        import torch_reference  # PyTorch is imported only here
        cls.ref = torch_reference
        cls.tmp = tempfile.TemporaryDirectory()
        cls.models = {f: (os.path.join(cls.tmp.name, f),) + torch_reference.make_model(os.path.join(cls.tmp.name, f), f)
                      for f in torch_reference.FAMILIES}
        cls.worst = {}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()
        print("\nlargest |swan - PyTorch| logit difference:", json.dumps(cls.worst))

    def test_logits_agree_under_full_and_window_plans(self):
        ids = [int(i) for i in np.random.default_rng(7).integers(3, 101, size=40)]
        for family, (path, config, weights) in self.models.items():
            for spec, plan in (("", "model"), ("full", "full"), ("swa:5", ("swa", 5, 0)),
                               ("swa:7,sinks:3", ("swa", 7, 3))):
                with self.subTest(family=family, plan=spec or "model"):
                    ours = swan.load(path, plan=spec, batch=16).logits(ids)
                    theirs = self.ref.forward(config, weights, family, ids,
                                              self.ref.layer_spans(config, family, plan)).numpy()
                    diff = float(np.abs(ours - theirs).max())
                    self.worst["%s %s" % (family, spec or "model")] = float("%.3g" % diff)
                    self.assertLess(diff, 1e-4)
                    self.assertGreater(float(np.abs(theirs).max()), 0.5)  # not trivially small logits

    def test_the_window_changes_the_logits_where_it_should(self):
        # The reference's own check: a window of 5 matches full attention on
        # the first 5 positions and differs after, so the rule is not vacuous.
        path, config, weights = self.models["llama"]
        ids = list(range(10, 30))
        full = swan.load(path, plan="full").logits(ids)
        window = swan.load(path, plan="swa:5").logits(ids)
        np.testing.assert_allclose(full[:5], window[:5], atol=1e-5)
        self.assertGreater(float(np.abs(full[5:] - window[5:]).max()), 1e-2)


class Caches(unittest.TestCase):
    def test_chunked_steps_give_the_one_shot_logits(self):
        for plan in ("full", "hybrid:1:1,window:8,sinks:2"):
            m = swan.load(STORIES, plan=plan)
            whole = m.logits(STORY_IDS)
            cache = m.new_cache(64)
            parts = [m.forward(STORY_IDS[:5], cache), m.forward(STORY_IDS[5:6], cache),
                     m.forward(STORY_IDS[6:], cache)]
            self.assertEqual(cache.n_pos, len(STORY_IDS))
            np.testing.assert_allclose(np.concatenate(parts), whole, rtol=1e-5, atol=1e-4)
            last = m.forward([STORY_IDS[0]], m.new_cache(), all_logits=False)
            self.assertEqual(last.shape, (1, 512))

    def test_snapshot_restores_and_pickles(self):
        m = swan.load(STORIES, plan="swa:6,sinks:2", kv="bf16")
        cache = m.new_cache(128)
        m.forward(STORY_IDS[:9], cache)
        snap = cache.snapshot()
        self.assertEqual(snap.n_pos, 9)
        after = m.forward(STORY_IDS[9:], cache)
        cache.restore(snap)
        self.assertEqual(cache.n_pos, 9)
        np.testing.assert_array_equal(m.forward(STORY_IDS[9:], cache), after)
        other = m.new_cache(128)
        other.restore(pickle.loads(pickle.dumps(snap)))
        np.testing.assert_array_equal(m.forward(STORY_IDS[9:], other), after)

    def test_a_cache_refuses_what_does_not_fit(self):
        m = swan.load(STORIES)
        cache = m.new_cache(8)
        m.forward(STORY_IDS[:6], cache)
        with self.assertRaisesRegex(ValueError, "holds 6 positions of its context of 8; 3 more do not fit"):
            m.forward(STORY_IDS[6:9], cache)
        self.assertEqual(cache.n_pos, 6)
        with self.assertRaisesRegex(ValueError, "another model"):
            swan.load(STORIES).forward([1], cache)


class Errors(unittest.TestCase):
    def test_errors_map_to_python_exceptions(self):
        with self.assertRaisesRegex(ValueError, "swaa"):
            swan.load(STORIES, plan="swaa:4")
        with self.assertRaisesRegex(ValueError, "sinks"):
            swan.load(STORIES, plan="full,sinks:4")
        with self.assertRaises(FileNotFoundError):
            swan.load(os.path.join(SOURCE, "no-such-model"))
        with self.assertRaisesRegex(ValueError, "weights"):
            swan.load(STORIES, weights="q3_x")
        with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
            f.write(b"not a model at all")
            f.flush()
            with self.assertRaises(RuntimeError):
                swan.load(f.name)
        m = swan.load(STORIES)
        with self.assertRaisesRegex(ValueError, "not below the vocabulary size 512"):
            m.logits([1, 600])
        with self.assertRaisesRegex(ValueError, "longer than the context of 4 positions"):
            m.generate("Once upon a time there was", 4, context=4)

    def test_ctrl_c_stops_a_long_call(self):
        m = swan.load(SWAN_7M, plan="full", batch=8)
        ids = [5] * 2048
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        with self.assertRaises(KeyboardInterrupt):
            m.logits(ids)
        self.assertLess(time.monotonic() - started, 5.0)
        self.assertEqual(m.logits([5, 6]).shape, (2, 4096))  # still usable

    def test_the_gil_is_released_while_computing(self):
        m = swan.load(SWAN_7M, plan="full", threads=1)
        done = threading.Event()
        worker = threading.Thread(target=lambda: (m.logits([5] * 768), done.set()))
        ticks = 0
        worker.start()
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)
        worker.join()
        self.assertGreater(ticks, 20)


class Resources(unittest.TestCase):
    def test_no_leak_over_a_thousand_loads(self):
        def rss_kib():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

        def load_and_use():
            m = swan.load(STORIES, plan="swa:8,sinks:4")
            m.forward(STORY_IDS[:4], m.new_cache(32))

        for _ in range(100):
            load_and_use()
        before = rss_kib()
        for _ in range(1000):
            load_and_use()
        grown = rss_kib() - before
        print("\nRSS growth over 1,000 loads, uses and frees after 100: %d KiB" % grown)
        self.assertLess(grown, 4096)


class ModelData(unittest.TestCase):
    def test_a_gguf_file_loads_with_its_tokenizer(self):
        with tempfile.TemporaryDirectory() as tmp:
            gguf = os.path.join(tmp, "stories260K.gguf")
            run_cli("convert", "-m", STORIES, "--out", gguf, "--dtype", "f32", computes=False)
            a, b = swan.load(STORIES, plan="swa:6"), swan.load(gguf, plan="swa:6")
            ids = b.tokenizer.encode("Once upon a time")
            self.assertEqual(ids, a.tokenizer.encode("Once upon a time"))
            np.testing.assert_array_equal(b.logits(ids), a.logits(ids))
            self.assertEqual(str(b.generate("Once upon a time", 6, temperature=0)),
                             str(a.generate("Once upon a time", 6, temperature=0)))

    def test_plan_config_and_tokenizer(self):
        m = swan.load(SWAN_7M)
        self.assertEqual(m.config["num_hidden_layers"], 8)
        self.assertEqual([l["kind"] for l in m.plan], ["window"] * 3 + ["full"] + ["window"] * 3 + ["full"])
        self.assertEqual((m.plan[0]["window"], m.plan[0]["sinks"]), (256, 4))
        nope = swan.load(SWAN_7M, plan="hybrid:3:1,window:64,nope:full").plan
        self.assertIsNone(nope[3]["rope_base"])
        self.assertEqual(nope[0]["window"], 64)
        ids = m.tokenizer.encode("def main():")
        self.assertEqual(m.tokenizer.decode(ids, skip_special_tokens=True), "def main():")
        prompt = m.tokenizer.apply_chat_template([{"role": "user", "content": "hi"}])
        self.assertIn("hi", prompt)


if __name__ == "__main__":
    unittest.main()
