// `swan train`: train a language model under an attention plan, from
// scratch or from a Hugging Face directory; `swan train synth`: write
// synthetic long-range retrieval documents to mix into training.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "tokenizer/token_file.h"
#include "train/recall_eval.h"
#include "train/data_parallel.h"
#include "train/synthetic.h"
#include "train/trainer.h"
#include "ops/gemm_rate.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan train (--data TRAIN.bin | --recall TASK.json) --out RUN [options]\n"
      "       swan train synth --out DIR [--docs N] [--chars C] [--kinds passkey,kv,code] [--seed S]\n"
      "                                           (`swan train synth --help`)\n"
      "       swan train recall --out DIR [...]   recall tasks in token-id space, with labels\n"
      "                                           (`swan train recall --help`)\n"
      "       swan train --head-gates -m DIR --select SHARE --out HEADS.json [...]\n"
      "                                           a per-head plan's full heads, learned by\n"
      "                                           DuoAttention's gates (`swan train --head-gates --help`)\n");
  options.Text("data (token files from `swan tokenize --out`):\n")
      .Add({{"--data"}, "FILE", "training tokens"})
      .Add({{"--val"}, "FILE", "held-out tokens (default: FILE's .val.bin twin when it exists)"})
      .Add({{"--recall"},
            "TASK.json",
            "instead of --data: a recall task (`swan train recall` writes DIR/recall.json), every training "
            "sequence made fresh on the fly, held-out ones from the task's own seed"})
      .Add({{"--synthetic"}, "FILE", "tokenized synthetic retrieval documents (`swan train synth`)"})
      .Add({{"--synthetic-rate"}, "R", "fraction of sequences drawn from them (default 0.1 with --synthetic)"})
      .Text(
          "  A token file with labels beside it (DATA.labels, from `swan train recall`) weighs each\n"
          "  token's loss by its label (e.g. answers only), and its held-out twin reports recall\n"
          "  accuracy by key->query distance (RUN/recall_log.csv, RUN/recall.svg)\n"
          "model:\n")
      .Add({{"--preset"}, "NAME", "shape from scratch: tiny, mini, small (~7M at vocab 4K; default)"})
      .Add({{"--layers"}, "L", "from scratch: the number of layers, replacing the preset's"})
      .Add({{"--dim"}, "C", "from scratch: the hidden size, replacing the preset's"})
      .Add({{"--heads"}, "H", "from scratch: query heads, replacing the preset's (--heads alone: as many KV heads)"})
      .Add({{"--kv-heads"}, "K", "from scratch: KV heads, replacing the preset's"})
      .Add({{"--head-dim"}, "D", "from scratch: the head dim, replacing the preset's"})
      .Add({{"--mlp"}, "F", "from scratch: the MLP's intermediate size, replacing the preset's"})
      .Add({{"--arch"},
            "NAME",
            "the family from scratch: LlamaForCausalLM (default), MistralForCausalLM, Qwen2ForCausalLM (q/k/v "
            "biases), Qwen3ForCausalLM (q/k norms) or Gemma3ForCausalLM (its norms, GELU, 5:1 layers of window "
            "512)"})
      .Add({{"--init"},
            "DIR",
            "start from a Hugging Face model directory (continual pretraining; Llama, Mistral, Qwen2, Qwen3 or "
            "Gemma 3; exported as the same family)"})
      .Add({{"--grow"},
            "L",
            "with --init and --attn: a deeper model of L layers; DIR's layers keep their order spread over them "
            "(the first first, the last last: 2 -> 4 puts them at 0 and 3), each new layer starts as the identity "
            "(attention and MLP outputs of zero)"})
      .Add(PlanOption(
          "full, swa:256, hybrid:3:1,window:256,sinks:4, nope:full, routed:256, full,window:64,heads:FILE.json "
          "(per-head), linear (linear attention), linear:64 (LoLCATs' hybrid: a softmax window of 64, older keys "
          "linear), full,layer1:linear: one layer",
          "full; with --arch or --init: the model's own"))
      .Add({{"--rope-base"}, "B", "RoPE base from scratch (default 10000)"})
      .Add({{"--feature-dim"},
            "F",
            "linear layers: the Hedgehog feature map's F (phi has 2F; default head dim / 2, or the --init model's)"})
      .Add({{"--tokenizer"}, "PATH", "tokenizer.json (or its directory) copied into the exported model"})
      .Text(
          "Switch Attention (routed layers: a router per layer sends each token to full attention\n"
          "or the window; new routers start with every token on full attention):\n")
      .Add({{"--router-gamma"}, "G", "regularizer weight gamma_base (default 1e-3)"})
      .Add({{"--router-eps"}, "E", "gamma_t = G / (E + NLL_t + A |o_full - o_window|^2) (default 0.1)"})
      .Add({{"--router-alpha"}, "A", "A in gamma_t (default 100; 0 = no output-difference term)"})
      .Add({{"--router-gamma-constant"}, "", "gamma_t = G for every token (ablation)"})
      .Add({{"--router-lr"},
            "LR",
            "routers' peak learning rate, on --lr's warmup + cosine shape (default: --lr; a new router's bias of "
            "+2 takes ~2/LR steps to reach 0)"})
      .Text(
          "linear attention (LoLCATs: --init a softmax model --attn linear or linear:W; new feature maps start\n"
          "from the identity):\n")
      .Add({{"--attention-transfer"},
            "",
            "train only the feature maps, every other weight frozen, to make each linear layer's output that of "
            "softmax attention on the softmax model's inputs; the loss is that mean squared distance, summed over "
            "the layers. Then fine-tune the whole model: --init RUN/model"})
      .Text("optimization:\n")
      .Add({{"--context"}, "T", "training context (default 256)"})
      .Add({{"--context-schedule"},
            "S",
            "a curriculum: CTX:STEP,... trains at CTX until STEP, then the next, then --context (e.g. "
            "128:400,256:800)"})
      .Add({{"--batch"}, "B", "sequences per micro-batch (default 4)"})
      .Add({{"--accum"}, "K", "micro-batches per step (default 1)"})
      .Add({{"--steps"}, "N", "optimizer steps (default 1000)"})
      .Add({{"--lr"}, "LR", "peak learning rate (default 3e-3)"})
      .Add({{"--min-lr-ratio"}, "F", "cosine floor as a fraction of --lr (default 0.1)"})
      .Add({{"--warmup"}, "N", "warmup steps (default: min(100, steps/10))"})
      .Add({{"--weight-decay"}, "W", "AdamW decoupled weight decay on matrices (default 0.1)"})
      .Add({{"--clip"}, "C", "gradient-norm clipping (default 1; 0 = off)"})
      .Add({{"--matmul"}, "P", "linear layers' products: f32 (default) or bf16 (f32 weights and AdamW)"})
      .Add({{"--seed"}, "S", "seed of the initialization and the data order (default 1234)"})
      .Text("run:\n")
      .Add({{"--out"}, "RUN", "run directory: checkpoint.bin, train_log.csv/.json, loss.svg, model/"})
      .Add({{"--resume"},
            "",
            "continue RUN from its checkpoint exactly, with the flags it was started with (RUN/train_args.json); "
            "flags given now win, and a larger --steps extends the run: the added steps at the final rate"})
      .Add({{"--eval-every"}, "N", "held-out loss every N steps (default 100; 0 = none)"})
      .Add({{"--eval-seqs"}, "N", "held-out sequences per evaluation (default 8)"})
      .Add({{"--eval-bins"},
            "EDGES",
            "recall distance bins (default from the plan: [1,W/4), [W/4,W), [W, window layers * (W-1)), [.., T]; "
            "full plans: T/8, T/2)"})
      .Add({{"--checkpoint-every"}, "N", "checkpoint every N steps (default 100; 0 = at the end only; also on Ctrl-C)"})
      .Add({{"--log-every"}, "N", "progress and log row every N steps (default 1)"})
      .Add({{"--time-limit"}, "MIN", "stop, checkpoint and export after MIN minutes"})
      .Add(QuietOption())
      .Add({{"--gemm-report"},
            "",
            "measure the GEMM rate in the run's precision afterwards (oneDNN; bf16: swan's own where oneDNN has "
            "none) and compare"})
      .Add({{"--debug-kill-after"},
            "N",
            "for tests: the last rank kills itself (SIGKILL) after step N, before its checkpoint (never stored "
            "in RUN/train_args.json)"})
      .Add(ThreadsOption())
      .Text(
          "data-parallel (mpirun -np N swan train ...; every rank with the same flags):\n"
          "  each step trains N x --batch x --accum sequences, each rank its own share; the\n"
          "  gradients are summed across ranks; rank 0 prints, logs, checkpoints and exports. A\n"
          "  checkpoint keeps that global batch: --resume works on any N that keeps it\n");
  return options;
}

// `swan train synth`'s options.
OptionSet SynthOptions() {
  OptionSet options("usage: swan train synth --out DIR [--docs N] [--chars C] [--kinds passkey,kv,code] [--seed S]\n");
  options.Add({{"--out"}, "DIR", "where the documents are written, one text file each"})
      .Add({{"--docs"}, "N", "documents (default 300)"})
      .Add({{"--chars"}, "C", "about this many characters per document (default 6000)"})
      .Add({{"--kinds"},
            "LIST",
            "any of passkey (a number among filler lines), kv (key-value pairs, then keys to complete) and code (a "
            "Python constant and helper used far below), taken in turn (default passkey,kv,code)"})
      .Add({{"--seed"}, "S", "seed of the documents (default 1)"})
      .Text("Tokenize DIR with `swan tokenize --out` and mix it in with swan train --synthetic.\n");
  return options;
}

// "128:400,256:800" -> {{400, 128}, {800, 256}}.
std::vector<std::pair<int64_t, int64_t>> ParseContextSchedule(const std::string& spec) {
  std::vector<std::pair<int64_t, int64_t>> schedule;
  for (const std::string& item : SplitList(spec, ',')) {
    const size_t colon = item.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument(item);
      size_t used_ctx = 0, used_step = 0;
      const int64_t context = std::stoll(item.substr(0, colon), &used_ctx);
      const int64_t step = std::stoll(item.substr(colon + 1), &used_step);
      if (used_ctx != colon || used_step != item.size() - colon - 1) throw std::invalid_argument(item);
      schedule.push_back({step, context});
    } catch (const std::logic_error&) {
      throw std::invalid_argument("--context-schedule '" + spec + "': '" + item +
                                  "' is not CTX:STEP (e.g. 128:400,256:800)");
    }
  }
  return schedule;
}

void OnSigint(int) {
  StopRequested().store(true);
  std::signal(SIGINT, SIG_DFL);
}

int Synth(const std::vector<std::string>& words) {
  const OptionSet flags = SynthOptions();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  if (!args.Has("--out")) throw std::invalid_argument("--out DIR is required\n" + flags.Help());
  const std::string dir = args.Get("--out", "");
  const int64_t docs = args.GetInt("--docs", 300);
  const int64_t chars = args.GetInt("--chars", 6000);
  const uint64_t seed = uint64_t(args.GetInt("--seed", 1));
  const std::vector<SyntheticKind> kinds = ParseSyntheticKinds(args.Get("--kinds", "passkey,kv,code"));
  std::filesystem::create_directories(dir);
  for (int64_t i = 0; i < docs; ++i) {
    const SyntheticKind kind = kinds[size_t(i) % kinds.size()];
    const SyntheticDoc doc = MakeSyntheticDoc(kind, chars, seed, uint64_t(i));
    char name[64];
    std::snprintf(name, sizeof name, "/%s_%05lld.txt", SyntheticKindName(kind), (long long)i);
    std::ofstream out(dir + name, std::ios::binary);
    out << doc.text;
    if (!out) throw std::runtime_error("cannot write " + dir + name);
  }
  std::printf("wrote %lld synthetic documents of ~%lld characters to %s\n", (long long)docs, (long long)chars,
              dir.c_str());
  return 0;
}

// Numbers that cannot mean anything are refused before any work, each by
// its flag (0 is a value where it means one: no warmup, no decay, no clip).
void CheckTrainNumbers(const TrainOptions& o) {
  auto need = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(what);
  };
  need(o.context > 0 && o.batch > 0 && o.accum > 0 && o.steps > 0,
       "--context, --batch, --accum and --steps must be positive");
  need(o.schedule.lr > 0 && std::isfinite(o.schedule.lr), "--lr must be a positive number");
  need(o.schedule.min_lr_ratio >= 0 && o.schedule.min_lr_ratio <= 1, "--min-lr-ratio must lie in [0, 1]");
  need(o.schedule.warmup_steps >= 0, "--warmup must be >= 0");
  need(o.adamw.weight_decay >= 0 && std::isfinite(o.adamw.weight_decay), "--weight-decay must be >= 0");
  need(o.adamw.clip_norm >= 0 && std::isfinite(o.adamw.clip_norm), "--clip must be >= 0 (0 = off)");
  need(o.rope_base > 1 && std::isfinite(o.rope_base), "--rope-base must be greater than 1");
  need(o.synthetic_rate >= 0 && o.synthetic_rate <= 1, "--synthetic-rate must lie in [0, 1]");
  need(o.eval_every >= 0, "--eval-every must be >= 0 (0 = no held-out evaluation)");
  need(o.eval_sequences > 0, "--eval-seqs must be positive");
  need(o.checkpoint_every >= 0, "--checkpoint-every must be >= 0 (0 = only at the end and on Ctrl-C)");
  need(o.time_limit_s >= 0, "--time-limit must be >= 0 (0 = none)");
}

}  // namespace

int RunTrainRecall(const std::vector<std::string>& words);     // cli/train_recall.cc
int RunTrainHeadGates(const std::vector<std::string>& words);  // cli/train_head_gates.cc

// A run keeps the flags it was started with in RUN/train_args.json, so
// that `swan train --out RUN --resume` needs no others; flags given with
// --resume come after the stored ones and so win (e.g. a larger --steps
// extends the run). The debug flag is never stored.
std::string FlagValue(const std::vector<std::string>& words, const std::string& flag) {
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == flag && i + 1 < words.size()) return words[i + 1];
    if (words[i].rfind(flag + "=", 0) == 0) return words[i].substr(flag.size() + 1);
  }
  return "";
}

std::filesystem::path StoredSettingsPath(const std::string& run_dir) {
  return std::filesystem::path(run_dir) / "train_args.json";
}

std::vector<std::string> WithStoredSettings(const std::vector<std::string>& words) {
  const std::string run_dir = FlagValue(words, "--out");
  if (std::find(words.begin(), words.end(), "--resume") == words.end() || run_dir.empty() ||
      !std::filesystem::exists(StoredSettingsPath(run_dir)))
    return words;
  std::vector<std::string> all =
      nlohmann::json::parse(std::ifstream(StoredSettingsPath(run_dir))).get<std::vector<std::string>>();
  all.insert(all.end(), words.begin(), words.end());
  return all;
}

void StoreSettings(const std::string& run_dir, const std::vector<std::string>& settings) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < settings.size(); ++i) {
    if (settings[i] == "--resume" || settings[i] == "--quiet") continue;
    if (settings[i] == "--debug-kill-after") {
      ++i;
      continue;
    }
    kept.push_back(settings[i]);
  }
  std::filesystem::create_directories(run_dir);
  std::ofstream(StoredSettingsPath(run_dir)) << nlohmann::json(kept).dump(1) << "\n";
}

int RunTrain(const std::vector<std::string>& words) {
  if (!words.empty() && words[0] == "synth") return Synth(std::vector<std::string>(words.begin() + 1, words.end()));
  if (!words.empty() && words[0] == "recall")
    return RunTrainRecall(std::vector<std::string>(words.begin() + 1, words.end()));
  if (std::find(words.begin(), words.end(), "--head-gates") != words.end()) return RunTrainHeadGates(words);
  const std::vector<std::string> settings = WithStoredSettings(words);
  const OptionSet flags = Options();
  const Args args = flags.Parse(settings);
  if (words.empty() || HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return words.empty() ? 2 : 0;
  }
  ApplyThreadsOption(args);
  if (args.Has("--data") == args.Has("--recall"))
    throw std::invalid_argument("give --data TRAIN.bin or --recall TASK.json\n" + flags.Help());
  if (!args.Has("--out")) throw std::invalid_argument("--out RUN is required\n" + flags.Help());
  TrainOptions o;
  o.run_dir = args.Get("--out", "");
  o.train_data = args.Get("--data", "");
  o.recall_task = args.Get("--recall", "");
  o.val_data = args.Get("--val", "");
  if (o.val_data.empty() && o.recall_task.empty()) {
    std::string twin = o.train_data;
    if (twin.size() > 4 && twin.substr(twin.size() - 4) == ".bin") twin = twin.substr(0, twin.size() - 4);
    twin += ".val.bin";
    // The twin `swan tokenize --holdout` writes, when it holds a whole sequence.
    if (std::filesystem::exists(twin) && TokenFile(twin).size() > uint64_t(args.GetInt("--context", 256)))
      o.val_data = twin;
  }
  o.synthetic_data = args.Get("--synthetic", "");
  o.synthetic_rate = args.GetDouble("--synthetic-rate", o.synthetic_data.empty() ? 0.0 : 0.1);
  o.preset = args.Get("--preset", "small");
  o.shape_overrides.layers = int32_t(args.GetPositiveInt("--layers", 0));
  o.shape_overrides.hidden = args.GetPositiveInt("--dim", 0);
  o.shape_overrides.heads = int32_t(args.GetPositiveInt("--heads", 0));
  o.shape_overrides.kv_heads = int32_t(args.GetPositiveInt("--kv-heads", 0));
  o.shape_overrides.head_dim = int32_t(args.GetPositiveInt("--head-dim", 0));
  o.shape_overrides.intermediate = args.GetPositiveInt("--mlp", 0);
  for (const char* flag : {"--layers", "--dim", "--heads", "--kv-heads", "--head-dim", "--mlp"})
    if (args.Has(flag) && args.GetInt(flag, 0) <= 0)
      throw std::invalid_argument(std::string(flag) + " must be positive");
  o.init_from = args.Get("--init", "");
  if (!o.init_from.empty() &&
      (o.shape_overrides.layers || o.shape_overrides.hidden || o.shape_overrides.heads || o.shape_overrides.kv_heads ||
       o.shape_overrides.head_dim || o.shape_overrides.intermediate))
    throw std::invalid_argument(
        "--layers, --dim, --heads, --kv-heads, --head-dim and --mlp shape a "
        "model from scratch; --init takes the model's own shape");
  o.grow_layers = int32_t(args.GetPositiveInt("--grow", 0));
  if (args.Has("--grow") && o.init_from.empty())
    throw std::invalid_argument("--grow makes a trained model deeper: give it --init DIR");
  o.architecture = args.Get("--arch", o.architecture);
  if (args.Has("--arch") && !o.init_from.empty())
    throw std::invalid_argument("--arch chooses the family from scratch; --init takes the model's own");
  o.attn = args.Get("--attn", o.init_from.empty() && !args.Has("--arch") ? "full" : "model");
  o.attention_transfer = args.Has("--attention-transfer");
  if (o.attention_transfer && o.init_from.empty())
    throw std::invalid_argument("--attention-transfer linearizes a trained model: give --init DIR and --attn linear");
  o.feature_dim = int32_t(args.GetPositiveInt("--feature-dim", 0));
  o.rope_base = args.GetDouble("--rope-base", 10000.0);
  o.router.gamma_base = args.GetDouble("--router-gamma", o.router.gamma_base);
  o.router.eps = args.GetDouble("--router-eps", o.router.eps);
  o.router.alpha = args.GetDouble("--router-alpha", o.router.alpha);
  o.router.gamma_constant = args.Has("--router-gamma-constant");
  if (o.router.gamma_base < 0 || o.router.alpha < 0 || o.router.eps <= 0)
    throw std::invalid_argument("--router-gamma and --router-alpha must be >= 0, --router-eps > 0");
  o.tokenizer = args.Get("--tokenizer", "");
  o.context = args.GetInt("--context", 256);
  o.batch = args.GetInt("--batch", 4);
  o.accum = args.GetInt("--accum", 1);
  o.steps = args.GetInt("--steps", 1000);
  o.schedule.lr = args.GetDouble("--lr", 3e-3);
  o.router_lr = args.GetDouble("--router-lr", -1);  // -1: --lr's
  if (args.Has("--router-lr") && o.router_lr < 0)
    throw std::invalid_argument("--router-lr must be >= 0 (0 freezes the routers)");
  o.schedule.min_lr_ratio = args.GetDouble("--min-lr-ratio", 0.1);
  o.schedule.warmup_steps = args.GetInt("--warmup", std::min<long long>(100, std::max<long long>(1, o.steps / 10)));
  o.schedule.total_steps = o.steps;
  o.adamw.weight_decay = args.GetDouble("--weight-decay", 0.1);
  o.adamw.clip_norm = args.GetDouble("--clip", 1.0);
  o.matmul = ParseMatmulPrecision(args.Get("--matmul", "f32"));
  o.seed = uint64_t(args.GetInt("--seed", 1234));
  o.resume = args.Has("--resume");
  o.eval_every = args.GetInt("--eval-every", 100);
  o.eval_sequences = args.GetInt("--eval-seqs", 8);
  if (args.Has("--eval-bins")) o.eval_bins = ParseRecallBins(args.Get("--eval-bins", ""));
  o.context_schedule = ParseContextSchedule(args.Get("--context-schedule", ""));
  // Recall data says how likely a guess is right.
  const std::filesystem::path recall_json = !o.recall_task.empty()
                                                ? std::filesystem::path(o.recall_task)
                                                : std::filesystem::path(o.train_data).parent_path() / "recall.json";
  if (std::filesystem::exists(recall_json))
    o.recall_chance = nlohmann::json::parse(std::ifstream(recall_json)).value("chance", 0.0);
  o.checkpoint_every = args.GetInt("--checkpoint-every", 100);
  o.log_every = args.GetPositiveInt("--log-every", 1);
  o.time_limit_s = args.GetDouble("--time-limit", 0) * 60;
  o.quiet = args.Has("--quiet");
  o.debug_kill_after_step = args.GetInt("--debug-kill-after", 0);

  CheckTrainNumbers(o);
  // Under mpirun: this process's rank (MPI starts here); rank 0 writes.
  DataParallel& ranks = DataParallel::Get();
  // (Not over the settings of a run that a fresh start would refuse.)
  if (ranks.lead() && (o.resume || !std::filesystem::exists(std::filesystem::path(o.run_dir) / "checkpoint.bin")))
    StoreSettings(o.run_dir, settings);

  std::signal(SIGINT, OnSigint);
  TrainResult r;
  try {
    r = Train(o);
  } catch (const std::exception& e) {
    // The other ranks may wait in a collective for this one: end them all.
    if (ranks.size() > 1 && !ranks.finished()) {
      std::fprintf(stderr, "swan train rank %d: error: %s\n", ranks.rank(), e.what());
      ranks.AbortAll(1);
    }
    throw;
  }
  ranks.Finish();
  if (!ranks.lead()) return StopRequested().load() ? 130 : 0;
  char route[96] = "";
  if (r.last_full_ratio >= 0)
    std::snprintf(route, sizeof route, " | router %.3g, full attention %.1f%%", r.last_router_loss,
                  100 * r.last_full_ratio);
  const bool bf16 = o.matmul == MatmulPrecision::kBF16;
  char convert[64] = "";
  if (bf16) std::snprintf(convert, sizeof convert, " (+%.0f%% rounding inputs to bf16)", 100 * r.convert_share);
  std::printf(
      "%s at step %lld: loss %.6f%s%s | %.0f tokens/s | %s matmuls %.1f GFLOP/s, "
      "%.0f%% of the time%s; attention %.0f%%\n",
      r.interrupted ? "stopped" : "done", (long long)r.steps_done, r.last_loss,
      r.last_val_loss >= 0 ? (" | val " + std::to_string(r.last_val_loss)).c_str() : "", route, r.tokens_per_s,
      MatmulPrecisionName(o.matmul), r.gemm_gflops, 100 * r.gemm_share, convert, 100 * r.attention_share);
  if (r.empty_steps > 0)
    std::printf(
        "note: %lld steps held no token with a loss weight and changed nothing (is the "
        "context, or a --context-schedule stage, shorter than the data's distances?)\n",
        (long long)r.empty_steps);
  if (!r.last_recall.empty()) {
    std::printf("held-out recall by key->query distance:");
    for (size_t b = 0; b < r.last_recall.size(); ++b) {
      std::printf(" [%lld,%lld) ", (long long)r.recall_bins[b], (long long)r.recall_bins[b + 1]);
      if (r.last_recall[b] < 0)
        std::printf("-");
      else
        std::printf("%.1f%%", 100 * r.last_recall[b]);
    }
    std::printf("%s\n", o.recall_chance > 0
                            ? (" (chance " + std::to_string(100 * o.recall_chance).substr(0, 4) + "%)").c_str()
                            : "");
  }
  if (args.Has("--gemm-report")) {
    // The yardstick in the run's own precision, on the product it ran on.
    if (bf16) {
      const BF16GemmRate peak = MeasureBF16GemmGflops(1024, 1024, 1024);
      std::printf(
          "%s GEMM 1024^3 on this machine: %.1f GFLOP/s; the run's matmuls reached "
          "%.0f%%\n",
          BF16ProductName().c_str(), peak.gflops, 100 * r.gemm_gflops / peak.gflops);
    } else {
      const double peak = MeasureOneDnnGemmGflops(1024, 1024, 1024);
      std::printf(
          "oneDNN fp32 GEMM 1024^3 on this machine: %.1f GFLOP/s; the run's matmuls "
          "reached %.0f%%\n",
          peak, 100 * r.gemm_gflops / peak);
    }
  }
  std::printf("model written to %s (swan generate -m %s)\n", r.export_dir.c_str(), r.export_dir.c_str());
  // Ctrl-C: the conventional 130; a --time-limit stop is a normal end.
  return StopRequested().load() ? 130 : 0;
}

}  // namespace swan::cli
