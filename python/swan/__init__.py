"""swan from Python: load a model under an attention plan, read its logits
and caches as numpy arrays, generate, score and compare plans.

    import swan
    m = swan.load("models/swan-7m", plan="swa:256,sinks:4")
    print(m.generate("def main(", 16))
    logits = m.logits(m.tokenizer.encode("import os"))   # [n, vocab] float32

docs/python.md walks through it. The work is done by swan's C++ engine
(the extension module `swan._swan`); calls that compute release the GIL,
and Ctrl-C stops them between steps.
"""

import json as _json
import sys as _sys

try:
    from . import _swan
except ImportError as error:  # the package's Python files without the built module
    raise ImportError(
        "swan's compiled module (_swan) is missing or does not load here: build swan with "
        "pybind11 installed (bash scripts/setup.sh; cmake --build build), then use build/python "
        "(PYTHONPATH or bash scripts/install_python.sh). Cause: %s" % error) from error

# Snapshots pickle by reference to their class: name it as it is imported.
_swan.Snapshot.__module__ = __name__ + "._swan"

Snapshot = _swan.Snapshot
Cache = _swan.Cache

__all__ = ["load", "compare", "Model", "Cache", "Snapshot", "Tokenizer", "Generation"]


def _arrays(call, *args):
    """Runs a call that returns numpy arrays, with a clear error where this
    interpreter has no numpy (the module itself loads without it)."""
    try:
        return call(*args)
    except ModuleNotFoundError as error:
        if error.name != "numpy":
            raise
        raise ImportError("this call returns numpy arrays, and %s has no numpy: install it "
                          "(Debian: apt-get install python3-numpy, for /usr/bin/python3)" % _sys.executable) from error


def load(path, plan=None, weights=None, kv="f32", threads=None, batch=512):
    """Loads a Hugging Face model directory or a GGUF file under a plan.

    path:    a directory with config.json and *.safetensors, or a .gguf file
    plan:    an attention plan spec (docs/plans.md): "full", "swa:256,sinks:4",
             "hybrid:3:1,window:1024", ...; None = the model's own
    weights: hold the linear layers as "bf16", "f16", "q8_0", "q4_k", ...
             (converted as they load); None = as stored
    kv:      the KV cache's type: "f32", "bf16" or "q8_0"
    threads: threads to compute with; None = swan's default (the cores)
    batch:   the prefill chunk: the most tokens one step writes

    Raises FileNotFoundError for a missing path, ValueError for a bad plan or
    option (naming it), RuntimeError for a file that is not a model.
    """
    return Model(_swan.load(str(path), plan or "", weights, kv, threads, batch), plan or "model")


class Tokenizer:
    """The model's tokenizer (its tokenizer.json, or the GGUF file's)."""

    def __init__(self, native):
        self._native = native

    def encode(self, text, add_special_tokens=True):
        """Token ids of `text`, with BOS (and whatever the tokenizer adds) by default."""
        return self._native.encode(text, add_special_tokens)

    def decode(self, ids, skip_special_tokens=False):
        return self._native.decode(list(ids), skip_special_tokens)

    def token_to_id(self, token):
        """The id of a token's string, or None."""
        return self._native.token_to_id(token)

    def id_to_token(self, id):
        return self._native.id_to_token(id)

    @property
    def vocab_size(self):
        return self._native.vocab_size

    @property
    def bos_id(self):
        """The BOS id, or None."""
        return None if self._native.bos_id < 0 else self._native.bos_id

    @property
    def eos_ids(self):
        return list(self._native.eos_ids)

    def apply_chat_template(self, messages, add_generation_prompt=True):
        """The prompt text of OpenAI-style messages ([{"role", "content"}]) through
        the model's chat template (tokenizer_config.json or GGUF metadata; a plain
        "role: content" fallback when it has none)."""
        return self._native._apply_chat_template(_json.dumps(list(messages)), add_generation_prompt)


class Generation:
    """What model.generate returns: iterate it for the text as it comes (token
    ids for a prompt of ids), or read .text / str() for all of it.

    .tokens: the ids generated so far; .finish_reason: None while running,
    then "stop" (EOS or a stop string), "length" (max_tokens) or "context"
    (the cache is full)."""

    def __init__(self, native, text_mode):
        self._native = native
        self._text_mode = text_mode
        self._pieces = []
        self.tokens = []
        self.prompt_tokens = list(native.prompt)
        self.finish_reason = None

    def __iter__(self):
        while True:
            step = self._native.step()
            if step is None:
                return
            token, text, finished = step
            self.tokens.append(token)
            self._pieces.append(text)
            if finished:
                self.finish_reason = self._native.finish_reason
            if self._text_mode:
                if text:
                    yield text
            else:
                yield token

    @property
    def text(self):
        """The whole continuation (generates what is left first)."""
        for _ in self:
            pass
        return "".join(self._pieces)

    def __str__(self):
        return self.text

    def __repr__(self):
        return "Generation(%r, finish_reason=%r)" % (self.text, self.finish_reason)


class Model:
    """A model loaded by swan.load, under one attention plan."""

    def __init__(self, native, spec):
        self._native = native
        self._spec = spec
        self._tokenizer = None

    @property
    def path(self):
        return self._native.path

    @property
    def config(self):
        """The hyperparameters as a config.json dict (as swan read them)."""
        return _json.loads(self._native.config_json)

    @property
    def plan(self):
        """The resolved plan, one dict per layer: kind (full, window, routed,
        per-head, linear), window (0 = every key), sinks, rope, rope_base (None
        under NoPE), positions (absolute or cache), full_heads (per-head)."""
        return self._native.plan_layers

    @property
    def plan_spec(self):
        """The plan as given to swan.load ("model" = the model's own)."""
        return self._spec

    def describe_plan(self):
        """The plan as `swan inspect` words it."""
        return self._native.plan_description

    @property
    def vocab_size(self):
        return self._native.vocab_size

    @property
    def kv(self):
        return self._native.kv

    @property
    def tokenizer(self):
        """The model's Tokenizer; raises RuntimeError when the model has none."""
        if self._tokenizer is None:
            self._tokenizer = Tokenizer(_swan.Tokenizer(self._native))
        return self._tokenizer

    def logits(self, ids):
        """Logits of every position of `ids` from an empty cache: a [n, vocab]
        float32 numpy array."""
        return _arrays(self._native.logits, list(ids))

    def new_cache(self, context=None):
        """An empty KV cache for one sequence: up to `context` positions
        (default: the model's trained length). Window layers keep a ring, full
        layers grow as tokens arrive. cache.snapshot() / cache.restore(s) save
        and restore its state; snapshots pickle."""
        return self._native.new_cache(context)

    def forward(self, ids, cache, all_logits=True):
        """Appends `ids` to `cache` (at positions cache.n_pos, ...) and returns
        their logits: [len(ids), vocab], or [1, vocab] for the last with
        all_logits=False."""
        return _arrays(self._native.forward, list(ids), cache, all_logits)

    def score(self, ids, positions=None):
        """For each scored position p (default 1..n-1): the log-probability of
        ids[p] given ids[:p], and the greedy choice there, as `swan score`
        prints them: [{"position", "token", "logprob", "greedy", "correct"}]."""
        return self._native.score(list(ids), None if positions is None else list(positions))

    def generate(self, prompt, max_tokens=16, temperature=None, top_k=None, top_p=None, min_p=None, seed=0,
                 stop=None, ignore_eos=False, context=None):
        """Continues `prompt` (text, encoded with BOS as the tokenizer says, or a
        list of token ids) by up to max_tokens tokens. Sampling options left
        None take generation_config.json's when it samples, else greedy
        (temperature 0). stop: strings that end the text (not included).
        Returns a Generation: iterate it to stream, or str() it."""
        text_mode = isinstance(prompt, str)
        if not text_mode:
            prompt = list(prompt)
        if isinstance(stop, str):
            stop = [stop]
        native = _swan.Generator(self._native, prompt, max_tokens, temperature, top_k, top_p, min_p, seed,
                                 list(stop or []), ignore_eos, context)
        return Generation(native, text_mode)

    def __repr__(self):
        return "swan.Model(%r, plan=%r)" % (self.path, self._spec)


def compare(model, plans=None, suite=None, progress=None, **options):
    """What each plan costs and loses on `model`: `swan compare --json`'s
    report as a dict, from the same code.

    plans:    plan specs, e.g. ["full", "swa:256", "swa:256,sinks:4"]
              (default: full, a window of CTX/8, the same with 4 sinks, 3:1)
    suite:    the task suite's settings as a dict: lengths, depths,
              distances (lists), samples, seed, limit
    progress: called with a line of text now and then
    options:  any other flag of `swan compare` by its name: context (-c),
              window, text (-f), filler, text_tokens, bench_depths, batch, html,
              svg. The KV cache's type is the model's (swan.load(kv=...)).
    """
    flags = []
    if plans is not None:
        if isinstance(plans, str):
            plans = [plans]
        flags += ["--attn", ";".join(plans)]
    named = dict(suite or {})
    named.update(options)
    renamed = {"context": "-c", "text": "-f"}
    for name, value in named.items():
        if value is None or value is False:
            continue
        flag = renamed.get(name, "--" + name.replace("_", "-"))
        if value is True:
            flags.append(flag)
        elif isinstance(value, (list, tuple)):
            flags += [flag, ",".join(str(v) for v in value)]
        else:
            flags += [flag, str(value)]
    return _json.loads(_swan.compare_json(model._native, flags, progress))
