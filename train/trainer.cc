#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "model/config.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/data.h"
#include "ops/gemm.h"
#include "train/hf_io.h"
#include "train/layers.h"
#include "train/model.h"
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
  if (total >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", total / 3600, total / 60 % 60);
  else std::snprintf(buf, sizeof buf, "%lldm%02llds", total / 60, total % 60);
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

// The settings a resumed run must share with the run that wrote the checkpoint.
std::string Fingerprint(const TrainModel& model, const TrainOptions& o, uint64_t train_tokens) {
  const ModelShape& s = model.shape();
  nlohmann::json j;
  j["shape"] = {s.vocab, s.hidden, s.intermediate, s.n_layers, s.n_heads, s.n_kv_heads, s.head_dim};
  j["tied_embeddings"] = s.tied_embeddings;
  j["attention_plan"] = CanonicalPlanSpec(model.plan());
  j["context"] = o.context;
  j["batch"] = o.batch;
  j["accum"] = o.accum;
  j["steps"] = o.steps;
  j["seed"] = o.seed;
  j["train_tokens"] = train_tokens;
  j["synthetic_rate"] = o.synthetic_rate;
  // Only when not the default, so that checkpoints from before the option resume.
  if (o.matmul != MatmulPrecision::kF32) j["matmul"] = MatmulPrecisionName(o.matmul);
  return j.dump();
}

void CheckGradients(TrainModel& model, int64_t step) {
  const std::vector<float>& g = model.grads();
  for (const ParamTensor& t : model.tensors())
    for (int64_t i = t.offset; i < t.offset + t.numel; ++i)
      if (!std::isfinite(g[size_t(i)]))
        throw std::runtime_error("non-finite gradient at step " + std::to_string(step) + " in " +
                                 t.name + "; lower --lr or raise --clip");
}

}  // namespace

TrainResult Train(const TrainOptions& o) {
  if (o.run_dir.empty()) throw std::invalid_argument("a run directory (--out) is required");
  if (o.context <= 0 || o.batch <= 0 || o.accum <= 0 || o.steps <= 0)
    throw std::invalid_argument("--context, --batch, --accum and --steps must be positive");
  fs::create_directories(o.run_dir);
  const std::string ckpt_path = (fs::path(o.run_dir) / "checkpoint.bin").string();
  if (!o.resume && fs::exists(ckpt_path))
    throw std::runtime_error(o.run_dir + " already holds a checkpoint: pass --resume to continue it, "
                             "or choose another --out directory");

  DataOptions d;
  d.train_path = o.train_data;
  d.val_path = o.val_data;
  d.synthetic_path = o.synthetic_data;
  d.synthetic_rate = o.synthetic_rate;
  d.seq = o.context;
  d.seed = o.seed;
  DataLoader loader(d);

  // The model and its plan.
  ModelShape shape;
  AttentionPlan plan;
  ExportOptions export_options;
  export_options.tokenizer_json = TokenizerJson(o);
  if (!o.init_from.empty()) {
    const ModelConfig config = LoadModelConfig(o.init_from);
    shape = ShapeFromConfig(config);
    if (int64_t(loader.vocab_size()) > shape.vocab)
      throw std::runtime_error("the token files' vocabulary (" + std::to_string(loader.vocab_size()) +
                               ") is larger than the model's (" + std::to_string(shape.vocab) +
                               "); tokenize with the model's tokenizer");
    shape.max_position = std::max<int64_t>(shape.max_position, o.context);
    // A model swan trained keeps its own plan (routed layers included) in config.json.
    const bool own_plan = (o.attn.empty() || o.attn == "model") && !config.attention_plan.empty();
    plan = ResolvePlan(own_plan ? config.attention_plan : o.attn, AttentionDefaultsFor(config));
    export_options.bos_token_id = config.bos_token_id;
    if (!config.eos_token_ids.empty()) export_options.eos_token_id = config.eos_token_ids[0];
  } else {
    shape = PresetShape(o.preset, loader.vocab_size(), o.context);
    shape.rope.base = o.rope_base;
    ModelAttentionDefaults defaults;
    defaults.n_layers = shape.n_layers;
    defaults.rope = shape.rope;
    plan = ResolvePlan(o.attn, defaults);
    if (!export_options.tokenizer_json.empty())
      export_options.eos_token_id = AddedTokenId(export_options.tokenizer_json, "<|endoftext|>");
  }
  TrainModel model(shape, plan);
  model.set_router_regularizer(o.router);
  model.set_matmul(o.matmul);
  const bool routed = model.num_routed_layers() > 0;
  AdamW adam(o.adamw, model.num_params());
  // The routers' schedule: the same warmup + cosine shape at their own peak.
  ScheduleOptions router_schedule = o.schedule;
  if (o.router_lr >= 0) router_schedule.lr = o.router_lr;
  const bool own_router_lr = routed && router_schedule.lr != o.schedule.lr;
  if (o.router_lr >= 0 && !routed && !o.quiet)
    std::fprintf(stderr, "note: the plan has no routed layers; the router learning rate is unused\n");
  const std::string fingerprint = Fingerprint(model, o, loader.train_tokens());

  int64_t start_step = 0;
  if (o.resume) {
    CheckpointState s = LoadCheckpoint(ckpt_path);
    CheckFingerprint(ckpt_path, s.fingerprint, fingerprint);
    if (int64_t(s.params.size()) != model.num_params())
      throw std::runtime_error("checkpoint " + ckpt_path + " holds " + std::to_string(s.params.size()) +
                               " parameters, the model has " + std::to_string(model.num_params()));
    model.params() = std::move(s.params);
    adam.m() = std::move(s.m);
    adam.v() = std::move(s.v);
    adam.set_steps(s.adam_steps);
    start_step = s.step;
  } else if (!o.init_from.empty()) {
    const int32_t new_routers = LoadHfWeights(model, o.init_from);
    if (new_routers > 0 && !o.quiet)
      std::fprintf(stderr, "%d new routers (weight 0, bias +2): every token starts on full attention\n",
                   new_routers);
  } else {
    model.InitRandom(o.seed);
  }
  if (!o.quiet)
    std::fprintf(stderr,
                 "model: %.2fM parameters, %d layers, dim %lld, vocab %lld; plan %s; "
                 "%s matmuls%s\n",
                 double(model.num_params()) / 1e6, shape.n_layers, (long long)shape.hidden,
                 (long long)shape.vocab, CanonicalPlanSpec(plan).c_str(),
                 MatmulPrecisionName(o.matmul),
                 o.resume ? (", resumed at step " + std::to_string(start_step)).c_str() : "");

  auto save = [&](int64_t steps_done) {
    CheckpointState s;
    s.step = steps_done;
    s.sequences = steps_done * o.accum * o.batch;
    s.seed = o.seed;
    s.adam_steps = adam.steps();
    s.fingerprint = fingerprint;
    s.params = std::as_const(model).params();  // const: keeps the bf16 weights current
    s.m = adam.m();
    s.v = adam.v();
    SaveCheckpoint(ckpt_path, s);
  };

  RunLog log(o.run_dir, o.resume ? start_step : 0, routed);
  const int64_t T = o.context, B = o.batch, N = B * T;
  std::vector<int32_t> tokens(static_cast<size_t>(N)), targets(static_cast<size_t>(N));  // [B, T]

  // Held-out loss into row.val_loss, and for routed plans the held-out routing.
  auto evaluate = [&](LogRow& row) {
    const int64_t n = std::min(o.eval_sequences, loader.val_sequences());
    double total = 0;
    int64_t batches = 0;
    std::vector<int64_t> full(size_t(shape.n_layers), 0);  // [L] tokens on full attention
    for (int64_t first = 0; first < n; first += B, ++batches) {
      loader.ValBatch(first, B, tokens.data(), targets.data());
      total += model.Forward(tokens.data(), targets.data(), B, T);
      for (size_t l = 0; l < full.size(); ++l) full[l] += model.routing().full_tokens[l];
    }
    row.val_loss = batches ? total / double(batches) : -1.0;
    if (!routed || batches == 0) return;
    const double tokens_per_layer = double(batches * N);
    int64_t routed_full = 0;
    row.val_full_ratio_by_layer.clear();
    for (int32_t l = 0; l < shape.n_layers; ++l) {
      // Static layers: all (full) or none (window) of their tokens.
      const LayerKind kind = plan.layers[size_t(l)].kind;
      const double ratio = kind == LayerKind::kRouted ? double(full[size_t(l)]) / tokens_per_layer
                                                      : kind == LayerKind::kFull ? 1.0 : 0.0;
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
  for (int64_t step = start_step; step < o.steps; ++step) {
    const auto step_start = Clock::now();
    ThreadsForNextStep();  // the cores other programs leave idle
    model.ZeroGrads();
    double loss = 0, router_loss = 0, full_ratio = 0;  // means over the micro-batches
    for (int64_t micro = 0; micro < o.accum; ++micro) {
      loader.TrainBatch((step * o.accum + micro) * B, B, tokens.data(), targets.data());
      const double l = model.Forward(tokens.data(), targets.data(), B, T);
      if (!std::isfinite(l)) {
        log.Write();
        const std::string where = model.FirstNonFinite();
        throw std::runtime_error(
            "loss is " + std::to_string(l) + " at step " + std::to_string(step + 1) +
            " (first non-finite value: " + (where.empty() ? "the loss" : where) + "); " +
            (last_saved > 0 ? "the last good checkpoint (step " + std::to_string(last_saved) +
                                  ") is kept in " + ckpt_path
                            : std::string("no checkpoint was written yet")) +
            "; lower --lr, or resume with --resume");
      }
      loss += l / double(o.accum);
      router_loss += model.router_loss() / double(o.accum);
      full_ratio += model.full_ratio() / double(o.accum);
      model.Backward(1.0f / float(N * o.accum));
    }
    CheckGradients(model, step + 1);
    const double lr = LearningRate(o.schedule, step);
    const double router_lr = LearningRate(router_schedule, step);
    const double grad_norm = adam.Step(model, lr, router_lr);
    train_seconds += Since(step_start);
    const int64_t done = step + 1;

    LogRow row;
    row.step = done;
    row.tokens = done * o.accum * N;
    row.loss = loss;
    row.lr = lr;
    row.grad_norm = grad_norm;
    row.tokens_per_s = double((done - start_step) * o.accum * N) / train_seconds;
    row.router_loss = router_loss;
    row.full_ratio = full_ratio;
    if (o.eval_every > 0 && loader.has_val() && (done % o.eval_every == 0 || done == o.steps)) {
      evaluate(row);
      result.last_val_loss = row.val_loss;
      result.val_full_ratio_by_layer = row.val_full_ratio_by_layer;
    }
    row.elapsed_s = Since(run_start);
    result.last_loss = loss;
    if (routed) {
      result.last_router_loss = router_loss;
      result.last_full_ratio = full_ratio;
    }
    if (done % o.log_every == 0 || done == o.steps || row.val_loss >= 0) log.Add(row);
    if (!o.quiet && (done % o.log_every == 0 || done == o.steps)) {
      const double eta = train_seconds / double(done - start_step) * double(o.steps - done);
      char val[32] = "", route[64] = "", lrs[48];
      if (row.val_loss >= 0) std::snprintf(val, sizeof val, " | val %.4f", row.val_loss);
      if (routed)
        std::snprintf(route, sizeof route, " | router %.3g, full %.1f%%", router_loss, 100 * full_ratio);
      if (own_router_lr) std::snprintf(lrs, sizeof lrs, "%.2e (routers %.2e)", lr, router_lr);
      else std::snprintf(lrs, sizeof lrs, "%.2e", lr);
      std::fprintf(stderr, "%sstep %lld/%lld | loss %.4f%s%s | lr %s | %.0f tok/s | ETA %s   %s",
                   tty ? "\r" : "", (long long)done, (long long)o.steps, loss, val, route, lrs,
                   row.tokens_per_s, Duration(eta).c_str(), tty ? "" : "\n");
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
    if (o.debug_kill_after_step == done) std::raise(SIGKILL);

    const bool stop = StopRequested().load() || (o.time_limit_s > 0 && Since(run_start) > o.time_limit_s);
    if ((o.checkpoint_every > 0 && done % o.checkpoint_every == 0) || stop) {
      save(done);
      last_saved = done;
      log.Write();
    }
    if (stop) {
      result.interrupted = true;
      if (!o.quiet) std::fprintf(stderr, "\nstopped at step %lld; checkpoint written\n", (long long)done);
      break;
    }
  }
  if (!o.quiet && tty) std::fprintf(stderr, "\n");
  if (result.steps_done > last_saved) save(result.steps_done);
  log.Write();

  const GemmCounters g = GetGemmCounters();
  result.tokens_per_s = train_seconds > 0 ? double((result.steps_done - start_step) * o.accum * N) / train_seconds : 0;
  result.gemm_gflops = g.seconds > 0 ? g.flops / g.seconds * 1e-9 : 0;
  const double run_seconds = Since(run_start);
  result.gemm_share = run_seconds > 0 ? g.seconds / run_seconds : 0;
  result.convert_share = run_seconds > 0 ? g.convert_seconds / run_seconds : 0;
  result.attention_share = run_seconds > 0 ? AttentionSeconds() / run_seconds : 0;
  result.export_dir = (fs::path(o.run_dir) / "model").string();
  ExportHfDirectory(result.export_dir, model, export_options);
  return result;
}

}  // namespace swan
