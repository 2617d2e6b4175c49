#include "train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <utility>

#include "model/config.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/data.h"
#include "train/data_parallel.h"
#include "ops/gemm.h"
#include "train/hf_io.h"
#include "train/grow.h"
#include "train/layers.h"
#include "train/model.h"
#include "train/recall_eval.h"
#include "train/recall_log.h"
#include "train/run_log.h"
#include "util/threads.h"

namespace swan {

std::atomic<bool>& StopRequested() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string Duration(double s) {
  char buf[32];
  const long long total = (long long)(s + 0.5);
  if (total >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", total / 3600, total / 60 % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldm%02llds", total / 60, total % 60);
  return buf;
}

std::string TokenizerJson(const TrainOptions& o) {
  std::string t = o.tokenizer;
  if (t.empty() && !o.init_from.empty()) t = o.init_from;
  if (t.empty()) return "";
  if (fs::is_directory(t)) t = (fs::path(t) / "tokenizer.json").string();
  if (!fs::exists(t)) {
    if (o.tokenizer.empty()) return "";  // the source model ships none
    throw std::runtime_error("tokenizer " + t + " does not exist");
  }
  return t;
}

// Sequences per optimizer step, all ranks together: ranks x batch x accum.
int64_t GlobalBatch(const TrainOptions& o) { return int64_t(DataParallel::Get().size()) * o.batch * o.accum; }

// The settings a resumed run must share with the run that wrote the
// checkpoint. The batch is the global one, so that a run may resume on
// another number of ranks that keeps it.
std::string Fingerprint(const TrainModel& model, const TrainOptions& o, uint64_t train_tokens, int64_t schedule_steps) {
  const ModelConfig& s = model.config();
  nlohmann::json j;
  j["shape"] = {s.vocab_size, s.hidden_size, s.intermediate_size, s.n_layers, s.n_heads, s.n_kv_heads, s.head_dim};
  j["tied_embeddings"] = s.tie_word_embeddings;
  // Only for other families, so that Llama checkpoints from before resume.
  if (model.spec().architecture != "LlamaForCausalLM") j["architecture"] = model.spec().architecture;
  j["attention_plan"] = CanonicalPlanSpec(model.plan());
  j["context"] = o.context;
  j["global_batch"] = GlobalBatch(o);
  j["steps"] = schedule_steps;
  j["seed"] = o.seed;
  j["train_tokens"] = train_tokens;
  j["synthetic_rate"] = o.synthetic_rate;
  // Only when not the default, so that checkpoints from before the option resume.
  if (o.matmul != MatmulPrecision::kF32) j["matmul"] = MatmulPrecisionName(o.matmul);
  if (!o.context_schedule.empty()) j["context_schedule"] = o.context_schedule;
  if (!o.recall_task.empty()) j["recall_task"] = ReadRecallJson(o.recall_task).dump();
  if (o.attention_transfer) j["attention_transfer"] = true;
  if (s.linear_feature_dim > 0) j["feature_dim"] = s.linear_feature_dim;
  return j.dump();
}

// A checkpoint's fingerprint with its global batch: those written before
// data-parallel training held batch and accum of one process instead.
nlohmann::json SavedFingerprint(const std::string& saved) {
  nlohmann::json j = nlohmann::json::parse(saved, nullptr, false);
  if (j.is_object() && !j.contains("global_batch") && j.contains("batch") && j.contains("accum")) {
    j["global_batch"] = j["batch"].get<int64_t>() * j["accum"].get<int64_t>();
    j.erase("batch");
    j.erase("accum");
  }
  return j;
}

// What every rank of a data-parallel run must be started with: the
// fingerprint's settings and those a resume may change.
std::string RankSettings(const TrainOptions& o, const std::string& fingerprint) {
  nlohmann::json j = nlohmann::json::parse(fingerprint);
  j["batch"] = o.batch;
  j["accum"] = o.accum;
  j["data"] = o.train_data;
  j["val"] = o.val_data;
  j["synthetic"] = o.synthetic_data;
  j["init"] = o.init_from;
  j["out"] = o.run_dir;
  j["resume"] = o.resume;
  j["lr"] = {o.schedule.lr, o.schedule.min_lr_ratio, double(o.schedule.warmup_steps), o.router_lr};
  j["adamw"] = {o.adamw.beta1, o.adamw.beta2, o.adamw.eps, o.adamw.weight_decay, o.adamw.clip_norm};
  j["router"] = {o.router.gamma_base, o.router.eps, o.router.alpha, double(o.router.gamma_constant)};
  j["eval_every"] = o.eval_every;
  j["checkpoint_every"] = o.checkpoint_every;
  return j.dump();
}

// The context step `step` (0-based) trains at.
int64_t ContextAt(const TrainOptions& o, int64_t step) {
  for (const auto& [until, context] : o.context_schedule)
    if (step < until) return context;
  return o.context;
}

void CheckSchedule(const TrainOptions& o) {
  int64_t last_until = 0;
  for (const auto& [until, context] : o.context_schedule) {
    if (until <= last_until || context < 1 || context > o.context)
      throw std::invalid_argument("--context-schedule: steps must increase and contexts lie in 1.." +
                                  std::to_string(o.context) + " (--context)");
    last_until = until;
  }
}

void CheckGradients(TrainModel& model, int64_t step) {
  const std::vector<float>& g = model.grads();
  for (const ParamTensor& t : model.tensors())
    for (int64_t i = t.offset; i < t.offset + t.numel; ++i)
      if (!std::isfinite(g[size_t(i)]))
        throw std::runtime_error("non-finite gradient at step " + std::to_string(step) + " in " + t.name +
                                 "; lower --lr or raise --clip");
}

}  // namespace

TrainResult Train(const TrainOptions& o) {
  DataParallel& ranks = DataParallel::Get();
  const int64_t R = ranks.size(), rank = ranks.rank();
  const bool lead = ranks.lead();  // only rank 0 prints, logs, checkpoints and exports
  const bool quiet = o.quiet || !lead;
  if (o.run_dir.empty()) throw std::invalid_argument("a run directory (--out) is required");
  if (o.context <= 0 || o.batch <= 0 || o.accum <= 0 || o.steps <= 0)
    throw std::invalid_argument("--context, --batch, --accum and --steps must be positive");
  CheckSchedule(o);
  fs::create_directories(o.run_dir);
  const std::string ckpt_path = (fs::path(o.run_dir) / "checkpoint.bin").string();
  if (!o.resume && fs::exists(ckpt_path))
    throw std::runtime_error(o.run_dir +
                             " already holds a checkpoint: pass --resume to continue it, "
                             "or choose another --out directory");

  DataOptions d;
  d.recall_task = o.recall_task;
  d.train_path = o.train_data;
  d.val_path = o.val_data;
  d.synthetic_path = o.synthetic_data;
  d.synthetic_rate = o.synthetic_rate;
  d.seq = o.context;
  d.seed = o.seed;
  DataLoader loader(d);

  // The model and its plan.
  ModelConfig config;
  AttentionPlan plan;
  std::vector<int32_t> layer_sources;  // [layers] growing: the --init layer each copies, -1 = new
  ExportOptions export_options;
  export_options.tokenizer_json = TokenizerJson(o);
  if (!o.init_from.empty()) {
    config = LoadModelConfig(o.init_from);
    if (int64_t(loader.vocab_size()) > config.vocab_size)
      throw std::runtime_error("the token files' vocabulary (" + std::to_string(loader.vocab_size()) +
                               ") is larger than the model's (" + std::to_string(config.vocab_size) +
                               "); tokenize with the model's tokenizer");
    config.max_position_embeddings = std::max<int64_t>(config.max_position_embeddings, o.context);
    if (o.feature_dim > 0) config.linear_feature_dim = o.feature_dim;
    if (o.grow_layers > 0) {
      if (o.attn.empty() || o.attn == "model")
        throw std::invalid_argument("--grow needs --attn: the plan of the " + std::to_string(o.grow_layers) +
                                    "-layer model");
      layer_sources = GrownLayerSources(config.n_layers, o.grow_layers);
      config.n_layers = o.grow_layers;
      config.layer_types.clear();  // per layer of the smaller model; the plan says what each layer is
    }
    // A model swan trained keeps its own plan (routed layers included) in config.json.
    const bool own_plan = (o.attn.empty() || o.attn == "model") && !config.attention_plan.empty();
    plan = ResolvePlan(own_plan ? config.attention_plan : o.attn, AttentionDefaultsFor(config));
    export_options.bos_token_id = config.bos_token_id;
    if (!config.eos_token_ids.empty()) export_options.eos_token_id = config.eos_token_ids[0];
  } else {
    config = PresetConfig(o.preset, loader.vocab_size(), o.context, o.architecture);
    const TrainOptions::ShapeOverrides& so = o.shape_overrides;
    if (so.layers > 0) config.n_layers = so.layers;
    if (so.heads > 0) config.n_heads = so.heads;
    if (so.kv_heads > 0) config.n_kv_heads = so.kv_heads;
    if (so.head_dim > 0) config.head_dim = so.head_dim;
    if (so.hidden > 0) config.hidden_size = so.hidden;
    if (so.intermediate > 0) config.intermediate_size = so.intermediate;
    if (so.heads > 0 && so.kv_heads == 0) config.n_kv_heads = so.heads;  // no grouping unless asked
    if (so.head_dim > 0 && config.query_pre_attn_scalar > 0) config.query_pre_attn_scalar = so.head_dim;
    // Gemma's global layers keep their own base; the others take --rope-base.
    if (config.rope_local_base_freq > 0)
      config.rope_local_base_freq = o.rope_base;
    else
      config.rope.base = o.rope_base;
    config.linear_feature_dim = o.feature_dim;
    ModelAttentionDefaults defaults = AttentionDefaultsFor(config);
    plan = ResolvePlan(o.attn, defaults);
    if (!export_options.tokenizer_json.empty())
      export_options.eos_token_id = AddedTokenId(export_options.tokenizer_json, "<|endoftext|>");
  }
  // Ids from one tokenizer are nonsense to a model (or an export) of another.
  auto file_bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  if (!export_options.tokenizer_json.empty() && loader.tokenizer_fingerprint() != 0 &&
      loader.tokenizer_fingerprint() != TokenizerFingerprint(file_bytes(export_options.tokenizer_json)))
    throw std::runtime_error(o.train_data + " was tokenized with another tokenizer than " +
                             (o.tokenizer.empty() ? o.init_from : o.tokenizer) +
                             "'s; tokenize the text with it (swan tokenize -t " +
                             (o.tokenizer.empty() ? o.init_from : o.tokenizer) + " ...)");
  TrainModel model(config, plan);
  model.set_router_regularizer(o.router);
  model.set_matmul(o.matmul);
  if (o.attention_transfer) model.set_attention_transfer(true);
  const bool routed = model.num_routed_layers() > 0;
  AdamW adam(o.adamw, model.num_params());
  // The routers' schedule: the same warmup + cosine shape at their own peak.
  ScheduleOptions router_schedule = o.schedule;
  if (o.router_lr >= 0) router_schedule.lr = o.router_lr;
  const bool own_router_lr = routed && router_schedule.lr != o.schedule.lr;
  if (o.router_lr >= 0 && !routed && !quiet)
    std::fprintf(stderr, "note: the plan has no routed layers; the router learning rate is unused\n");
  // The steps the learning-rate schedule spans: --steps, or on --resume
  // with a larger --steps the checkpoint's (the added steps run at the
  // schedule's final rate, and the checkpoint stays the same run's).
  std::optional<CheckpointState> resumed;
  if (o.resume) resumed = LoadCheckpoint(ckpt_path);
  int64_t schedule_steps = o.steps;
  if (resumed) {
    const nlohmann::json saved = nlohmann::json::parse(resumed->fingerprint, nullptr, false);
    const int64_t saved_steps = saved.is_object() ? saved.value("steps", o.steps) : o.steps;
    if (o.steps > saved_steps) {
      schedule_steps = saved_steps;
      if (!quiet)
        std::fprintf(stderr, "extending the run from %lld to %lld steps: the added steps at the final rate\n",
                     (long long)saved_steps, (long long)o.steps);
    }
  }
  ScheduleOptions schedule = o.schedule;
  schedule.total_steps = schedule_steps;
  router_schedule.total_steps = schedule_steps;
  const std::string fingerprint = Fingerprint(model, o, loader.train_tokens(), schedule_steps);
  ranks.CheckSettingsAgree(RankSettings(o, fingerprint));

  int64_t start_step = 0;
  if (resumed) {
    CheckpointState s = std::move(*resumed);
    const nlohmann::json saved = SavedFingerprint(s.fingerprint);
    if (saved.is_object() && saved.contains("global_batch") && saved["global_batch"] != GlobalBatch(o))
      throw std::runtime_error(ckpt_path + " was written with a global batch of " + saved["global_batch"].dump() +
                               " sequences per step; this run has " + std::to_string(R) + " rank(s) x --batch " +
                               std::to_string(o.batch) + " x --accum " + std::to_string(o.accum) + " = " +
                               std::to_string(GlobalBatch(o)) +
                               ", which would change the data order and the optimization; choose --batch and "
                               "--accum so that ranks x batch x accum is the same");
    CheckFingerprint(ckpt_path, saved.is_object() ? saved.dump() : s.fingerprint, fingerprint);
    if (int64_t(s.params.size()) != model.num_params())
      throw std::runtime_error("checkpoint " + ckpt_path + " holds " + std::to_string(s.params.size()) +
                               " parameters, the model has " + std::to_string(model.num_params()));
    model.params() = std::move(s.params);
    adam.m() = std::move(s.m);
    adam.v() = std::move(s.v);
    adam.set_steps(s.adam_steps);
    start_step = s.step;
  } else if (!o.init_from.empty()) {
    int32_t new_maps = 0;
    if (!layer_sources.empty()) model.InitRandom(o.seed);  // the new layers' weights
    const int32_t new_routers = LoadHfWeights(model, o.init_from, &new_maps, layer_sources);
    if (!layer_sources.empty() && !quiet) {
      std::string map;  // e.g. "0,new,new,1"
      for (int32_t source : layer_sources)
        map += (map.empty() ? "" : ",") + (source < 0 ? "new" : std::to_string(source));
      std::fprintf(stderr, "grown from %s: its layers at %s; new layers start as the identity\n", o.init_from.c_str(),
                   map.c_str());
    }
    if (new_routers > 0 && !quiet)
      std::fprintf(stderr, "%d new routers (weight 0, bias +2): every token starts on full attention\n", new_routers);
    if (new_maps > 0 && !quiet)
      std::fprintf(stderr, "%d new linear layers: Hedgehog feature maps (F = %d) from the identity start\n", new_maps,
                   LinearPhiDim(config) / 2);
  } else {
    model.InitRandom(o.seed);
  }
  if (!quiet)
    std::fprintf(stderr,
                 "model: %s, %.2fM parameters, %d layers, dim %lld, vocab %lld; plan %s; "
                 "%s matmuls%s\n",
                 config.architecture.c_str(), double(model.num_params()) / 1e6, config.n_layers,
                 (long long)config.hidden_size, (long long)config.vocab_size, CanonicalPlanSpec(plan).c_str(),
                 MatmulPrecisionName(o.matmul),
                 o.resume ? (", resumed at step " + std::to_string(start_step)).c_str() : "");
  if (!quiet && R > 1)
    std::fprintf(stderr,
                 "data-parallel: %lld ranks x batch %lld x accum %lld = %lld sequences per step; "
                 "%.1f MiB of gradients summed per step\n",
                 (long long)R, (long long)o.batch, (long long)o.accum, (long long)GlobalBatch(o),
                 double(model.num_params()) * sizeof(float) / (1 << 20));
  auto save = [&](int64_t steps_done) {
    CheckpointState s;
    s.step = steps_done;
    s.sequences = steps_done * GlobalBatch(o);
    s.seed = o.seed;
    s.adam_steps = adam.steps();
    s.fingerprint = fingerprint;
    s.params = std::as_const(model).params();  // const: keeps the bf16 weights current
    s.m = adam.m();
    s.v = adam.v();
    SaveCheckpoint(ckpt_path, s);
  };

  RunLog log(o.run_dir, o.resume ? start_step : 0, routed, /*data_parallel=*/R > 1);
  const int64_t T_max = o.context, B = o.batch, N_max = B * T_max;
  // One buffer set per micro-batch, so a step's whole loss weight is known
  // before its first backward.   each [accum][B, T]
  const size_t step_size = size_t(o.accum * N_max);
  std::vector<int32_t> tokens(step_size), targets(step_size);
  std::vector<float> weights(step_size);
  std::vector<uint16_t> distances(step_size);
  auto micro = [&](int64_t m) {
    const size_t at = size_t(m * N_max);
    return BatchBuffers{&tokens[at], &targets[at], &weights[at], &distances[at]};
  };
  const bool weighted = loader.has_labels();

  // Recall by distance on labelled held-out data.
  // Under attention transfer the logits are the softmax model's: nothing to score.
  const bool recall = loader.has_val_labels() && !o.attention_transfer;
  const std::vector<int64_t> recall_edges = !o.eval_bins.empty() ? o.eval_bins : DefaultRecallBins(plan, o.context);
  RecallLog recall_log(o.run_dir, recall ? recall_edges : std::vector<int64_t>{1, 2}, o.resume ? start_step : 0,
                       o.recall_chance);

  // Held-out loss into row.val_loss, recall accuracy into the tally, and for
  // routed plans the held-out routing. At the full context.
  auto evaluate = [&](LogRow& row, RecallTally& tally) {
    const int64_t train_context = loader.context();
    loader.set_context(T_max);
    const int64_t n = std::min(o.eval_sequences, loader.val_sequences());
    double total = 0, total_weight = 0;
    int64_t batches = 0;
    std::vector<int64_t> full(size_t(config.n_layers), 0);  // [L] tokens on full attention
    const BatchBuffers buf = micro(0);
    for (int64_t first = 0; first < n; first += B, ++batches) {
      loader.ValBatch(first, B, buf);
      const double loss =
          model.Forward(buf.tokens, buf.targets, B, T_max, loader.has_val_labels() ? buf.weights : nullptr);
      total += loss * model.counted_weight();
      total_weight += model.counted_weight();
      if (recall) tally.Add(model.logits().data(), buf.targets, buf.distances, B, T_max, config.vocab_size);
      for (size_t l = 0; l < full.size(); ++l) full[l] += model.routing().full_tokens[l];
    }
    loader.set_context(train_context);
    row.val_loss = total_weight > 0 ? total / total_weight : -1.0;
    if (!routed || batches == 0) return;
    const double tokens_per_layer = double(batches * N_max);
    int64_t routed_full = 0;
    row.val_full_ratio_by_layer.clear();
    for (int32_t l = 0; l < config.n_layers; ++l) {
      // Static layers: all (full) or none (window) of their tokens.
      const LayerKind kind = plan.layers[size_t(l)].kind;
      const double ratio = kind == LayerKind::kRouted ? double(full[size_t(l)]) / tokens_per_layer
                           : kind == LayerKind::kFull ? 1.0
                                                      : 0.0;
      row.val_full_ratio_by_layer.push_back(ratio);
      if (kind == LayerKind::kRouted) routed_full += full[size_t(l)];
    }
    row.val_full_ratio = double(routed_full) / (tokens_per_layer * model.num_routed_layers());
  };

  TrainResult result;
  result.steps_done = start_step;
  ResetGemmCounters();
  ResetAttentionSeconds();
  const auto run_start = Clock::now();
  double train_seconds = 0;
  int64_t last_saved = start_step;
  const bool tty = isatty(2);
  // Tokens trained before this run's first step (a curriculum changes the
  // context, so this is a sum, not steps * N).
  int64_t tokens_before = 0;
  const int64_t G = GlobalBatch(o);
  for (int64_t step = 0; step < start_step; ++step) tokens_before += G * ContextAt(o, step);
  int64_t tokens_done = tokens_before;
  for (int64_t step = start_step; step < o.steps; ++step) {
    const auto step_start = Clock::now();
    ThreadsForNextStep();  // the cores other programs leave idle
    const int64_t T = ContextAt(o, step);
    loader.set_context(T);
    model.ZeroGrads();
    double step_weight = 0;
    for (int64_t m = 0; m < o.accum; ++m) {
      const BatchBuffers buf = micro(m);
      // The step's G sequences in order: micro-batch m of rank r holds
      // [(m R + r) B, +B), so the data order depends on the global step only.
      loader.TrainBatch(step * G + (m * R + rank) * B, B, buf);
      for (int64_t i = 0; i < B * T; ++i) step_weight += weighted ? buf.weights[i] : 1.0;
    }
    ranks.SumDoubles(&step_weight, 1);
    // A step whose sequences hold no weighted token (a curriculum's short
    // context may cut every answer off) has nothing to learn: no update.
    const bool empty = step_weight <= 0;
    if (empty) ++result.empty_steps;
    double loss = 0, router_loss = 0, full_ratio = 0;  // means over the micro-batches
    for (int64_t m = 0; m < o.accum && !empty; ++m) {
      const BatchBuffers buf = micro(m);
      const double l = model.Forward(buf.tokens, buf.targets, B, T, weighted ? buf.weights : nullptr);
      if (!std::isfinite(l)) {
        log.Write();
        const std::string where = model.FirstNonFinite();
        throw std::runtime_error("loss is " + std::to_string(l) + " at step " + std::to_string(step + 1) +
                                 " (first non-finite value: " + (where.empty() ? "the loss" : where) + "); " +
                                 (last_saved > 0 ? "the last good checkpoint (step " + std::to_string(last_saved) +
                                                       ") is kept in " + ckpt_path
                                                 : std::string("no checkpoint was written yet")) +
                                 "; lower --lr, or resume with --resume");
      }
      loss += l * model.counted_weight() / step_weight;
      router_loss += model.router_loss() / double(o.accum);
      full_ratio += model.full_ratio() / double(o.accum);
      // The last micro-batch's backward finalizes the gradients layer by
      // layer: each layer's sum across ranks starts as soon as it is done.
      if (R > 1 && m == o.accum - 1)
        model.set_grads_ready([&](int64_t offset, int64_t count) {
          ranks.StartSum(model.grads().data() + offset, count);
          ranks.Progress();
        });
      model.Backward(float(1.0 / step_weight));
      model.set_grads_ready(nullptr);
    }
    ranks.FinishSums();
    if (R > 1) {
      double means[3] = {loss, router_loss / double(R), full_ratio / double(R)};
      ranks.SumDoubles(means, 3);
      loss = means[0], router_loss = means[1], full_ratio = means[2];
    }
    const double lr = LearningRate(schedule, step);
    const double router_lr = LearningRate(router_schedule, step);
    double grad_norm = 0;
    if (!empty) {
      CheckGradients(model, step + 1);
      grad_norm = adam.Step(model, lr, router_lr);
    }
    train_seconds += Since(step_start);
    const int64_t done = step + 1;
    // The ranks agree on stopping (SIGINT or the time limit on any of them);
    // each one's communication is logged, the slowest one's is what the
    // step waited for.
    const double mine[2] = {
        StopRequested().load() || (o.time_limit_s > 0 && Since(run_start) > o.time_limit_s) ? 1.0 : 0.0,
        ranks.TakeCommSeconds()};
    const std::vector<double> all = ranks.GatherDoubles(mine, 2);  // [R][stop, comm]
    bool stop = false;
    double comm_max = 0;
    std::vector<double> comm_by_rank;
    for (int64_t r = 0; r < R; ++r) {
      stop = stop || all[size_t(2 * r)] > 0;
      comm_max = std::max(comm_max, all[size_t(2 * r + 1)]);
      comm_by_rank.push_back(all[size_t(2 * r + 1)]);
    }
    tokens_done += G * T;

    LogRow row;
    row.step = done;
    row.tokens = tokens_done;
    row.loss = loss;
    row.lr = lr;
    row.grad_norm = grad_norm;
    row.tokens_per_s = double(tokens_done - tokens_before) / train_seconds;
    row.router_loss = router_loss;
    row.full_ratio = full_ratio;
    row.comm_s = comm_max;
    if (R > 1) row.comm_s_by_rank = std::move(comm_by_rank);
    std::string recall_text;  // " | recall 97/88/40%" for the progress line
    if (lead && o.eval_every > 0 && loader.has_val() && (done % o.eval_every == 0 || done == o.steps)) {
      RecallTally tally(recall ? recall_edges : std::vector<int64_t>{1, 2});
      evaluate(row, tally);
      result.last_val_loss = row.val_loss;
      result.val_full_ratio_by_layer = row.val_full_ratio_by_layer;
      if (recall) {
        recall_log.Add(done, tokens_done, tally);
        result.recall_bins = recall_edges;
        result.last_recall.clear();
        recall_text = " | recall";
        for (size_t b = 0; b < tally.bins(); ++b) {
          result.last_recall.push_back(tally.Accuracy(b));
          recall_text += (b ? "/" : " ") + (tally.items(b) ? std::to_string(int(std::lround(100 * tally.Accuracy(b))))
                                                           : std::string("-"));
        }
        recall_text += "%";
      }
    }
    row.elapsed_s = Since(run_start);
    result.last_loss = loss;
    if (routed) {
      result.last_router_loss = router_loss;
      result.last_full_ratio = full_ratio;
    }
    if (lead && (done % o.log_every == 0 || done == o.steps || row.val_loss >= 0)) log.Add(row);
    if (!quiet && (done % o.log_every == 0 || done == o.steps)) {
      const double eta = train_seconds / double(done - start_step) * double(o.steps - done);
      char val[32] = "", route[64] = "", lrs[48], comm[32] = "";
      if (R > 1) std::snprintf(comm, sizeof comm, " | comm %.1f ms", 1e3 * row.comm_s);
      if (row.val_loss >= 0) std::snprintf(val, sizeof val, " | val %.4f", row.val_loss);
      if (routed) std::snprintf(route, sizeof route, " | router %.3g, full %.1f%%", router_loss, 100 * full_ratio);
      if (own_router_lr)
        std::snprintf(lrs, sizeof lrs, "%.2e (routers %.2e)", lr, router_lr);
      else
        std::snprintf(lrs, sizeof lrs, "%.2e", lr);
      std::fprintf(stderr, "%sstep %lld/%lld | loss %.4f%s%s%s | lr %s | grad %.3g | %.0f tok/s%s | ETA %s   %s",
                   tty ? "\r" : "", (long long)done, (long long)o.steps, loss, val, recall_text.c_str(), route, lrs,
                   grad_norm, row.tokens_per_s, comm, Duration(eta).c_str(), tty ? "" : "\n");
      if (!row.val_full_ratio_by_layer.empty()) {
        std::string by_layer;
        char buf[16];
        for (double r : row.val_full_ratio_by_layer) {
          std::snprintf(buf, sizeof buf, " %.1f%%", 100 * r);
          by_layer += buf;
        }
        std::fprintf(stderr, "%sheld-out full attention by layer:%s\n", tty ? "\n" : "", by_layer.c_str());
      }
    }
    result.steps_done = done;
    // (Data-parallel: the last rank dies, so that a test sees one rank of several go.)
    if (o.debug_kill_after_step == done && rank == R - 1) std::raise(SIGKILL);

    if (lead && ((o.checkpoint_every > 0 && done % o.checkpoint_every == 0) || stop)) {
      save(done);
      last_saved = done;
      log.Write();
      if (recall) recall_log.Write();
    }
    if (stop) {
      result.interrupted = true;
      if (!quiet) std::fprintf(stderr, "\nstopped at step %lld; checkpoint written\n", (long long)done);
      break;
    }
  }
  if (!quiet && tty) std::fprintf(stderr, "\n");
  if (lead) {
    if (result.steps_done > last_saved) save(result.steps_done);
    log.Write();
    if (recall) recall_log.Write();
  }

  const GemmCounters g = GetGemmCounters();
  result.tokens_per_s = train_seconds > 0 ? double(tokens_done - tokens_before) / train_seconds : 0;
  result.gemm_gflops = g.seconds > 0 ? g.flops / g.seconds * 1e-9 : 0;
  const double run_seconds = Since(run_start);
  result.gemm_share = run_seconds > 0 ? g.seconds / run_seconds : 0;
  result.convert_share = run_seconds > 0 ? g.convert_seconds / run_seconds : 0;
  result.attention_share = run_seconds > 0 ? AttentionSeconds() / run_seconds : 0;
  result.export_dir = (fs::path(o.run_dir) / "model").string();
  if (!lead) return result;
  ExportHfDirectory(result.export_dir, model, export_options);
  // A model trained on recall data keeps its task, so that `swan compare`
  // can test it on the same task.
  const fs::path recall_task =
      !o.recall_task.empty() ? fs::path(o.recall_task) : fs::path(o.train_data).parent_path() / "recall.json";
  if (fs::exists(recall_task))
    fs::copy_file(recall_task, fs::path(result.export_dir) / "recall.json", fs::copy_options::overwrite_existing);
  return result;
}

}  // namespace swan
