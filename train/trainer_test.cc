// The training loop end to end on a tiny model: learning, exact resume,
// checkpoint errors, export that model/ loads with the same logits, data
// order and synthetic documents.
#include "train/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "model/config.h"
#include "model/model.h"
#include "model/test_files.h"
#include "train/checkpoint.h"
#include "train/data.h"
#include "train/hf_io.h"
#include "train/model.h"
#include "train/run_log.h"
#include "train/synthetic.h"
#include "tokenizer/token_file.h"

namespace swan {
namespace {

namespace fs = std::filesystem;

// A fresh directory, removed when the test program exits.
std::string TempDir(const std::string& name) { return test::TempDir("train_" + name).string(); }

// Tokens with structure to learn: short repeating phrases over vocab 32.
std::string WriteTokens(const std::string& dir, const std::string& name, int64_t count, uint64_t seed) {
  const std::string path = dir + "/" + name;
  TokenFileWriter w(path, 32);
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids;
  while (int64_t(ids.size()) < count) {
    const int32_t start = int32_t(rng() % 8);
    for (int32_t i = 0; i < 6; ++i) ids.push_back((start + 3 * i) % 31);
    ids.push_back(31);  // end of document
  }
  ids.resize(size_t(count));
  w.Append(ids);
  w.Close();
  return path;
}

TrainOptions TinyRun(const std::string& dir, const std::string& data) {
  TrainOptions o;
  o.run_dir = dir + "/run";
  o.train_data = data;
  o.preset = "tiny";
  o.attn = "hybrid:1:1,window:8,sinks:2,nope:full";
  o.context = 16;
  o.batch = 2;
  o.accum = 2;
  o.steps = 8;
  o.schedule.lr = 1e-2;
  o.schedule.warmup_steps = 2;
  o.schedule.total_steps = o.steps;
  o.eval_every = 4;
  o.checkpoint_every = 3;
  o.quiet = true;
  return o;
}

std::vector<double> Losses(const std::string& run_dir) {
  std::vector<double> out;
  const RunLog log(run_dir, 1 << 30);
  for (const LogRow& r : log.rows()) out.push_back(r.loss);
  return out;
}

TEST(Trainer, LearnsAndResumesExactly) {
  const std::string dir = TempDir("resume");
  const std::string data = WriteTokens(dir, "train.bin", 4000, 1);
  TrainOptions o = TinyRun(dir, data);
  o.val_data = WriteTokens(dir, "val.bin", 400, 2);
  const TrainResult full = Train(o);
  const std::vector<double> reference = Losses(o.run_dir);
  ASSERT_EQ(reference.size(), 8u);
  EXPECT_LT(reference.back(), reference.front());
  EXPECT_GE(full.last_val_loss, 0);

  // A run stopped after its first step (time limit: checkpoint, then stop),
  // then resumed to the end. (cli/train_resume_test.sh kills one with SIGKILL.)
  TrainOptions part = o;
  part.run_dir = dir + "/run2";
  {
    TrainOptions first = part;
    first.time_limit_s = 1e-9;
    EXPECT_TRUE(Train(first).interrupted);
  }
  part.resume = true;
  Train(part);
  const std::vector<double> resumed = Losses(part.run_dir);
  ASSERT_EQ(resumed.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) EXPECT_NEAR(resumed[i], reference[i], 1e-6) << "step " << i + 1;
}

// --matmul bf16: 20 steps learn as the float32 run does, within bf16's
// rounding; a resume is exact (the bf16 copy of the weights is rebuilt from
// the checkpoint's float32 ones), and one with float32 products is refused.
TEST(Trainer, Bf16MatmulsLearnLikeFloat32AndResumeExactly) {
  const std::string dir = TempDir("bf16");
  TrainOptions o = TinyRun(dir, WriteTokens(dir, "train.bin", 4000, 6));
  o.steps = o.schedule.total_steps = 20;
  o.eval_every = 0;
  o.checkpoint_every = 0;
  Train(o);
  const std::vector<double> f32 = Losses(o.run_dir);

  TrainOptions b = o;
  b.run_dir = dir + "/bf16";
  b.matmul = MatmulPrecision::kBF16;
  Train(b);
  const std::vector<double> bf16 = Losses(b.run_dir);
  ASSERT_EQ(bf16.size(), 20u);
  ASSERT_EQ(f32.size(), 20u);
  std::printf("  loss after 20 steps: f32 %.4f, bf16 %.4f (step 1: %.4f)\n", f32.back(), bf16.back(), bf16.front());
  EXPECT_LT(bf16.back(), 0.8 * bf16.front());
  EXPECT_NEAR(bf16.back(), f32.back(), 0.03 * f32.back());
  EXPECT_NE(bf16.back(), f32.back());  // the products did run in bf16

  TrainOptions part = b;
  part.run_dir = dir + "/bf16_resumed";
  {
    TrainOptions first = part;
    first.time_limit_s = 1e-9;  // checkpoint after step 1, stop
    EXPECT_TRUE(Train(first).interrupted);
  }
  part.resume = true;
  TrainOptions other = part;
  other.matmul = MatmulPrecision::kF32;
  try {
    Train(other);
    FAIL() << "expected a mismatch error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
  }
  Train(part);
  const std::vector<double> resumed = Losses(part.run_dir);
  ASSERT_EQ(resumed.size(), bf16.size());
  for (size_t i = 0; i < bf16.size(); ++i) EXPECT_EQ(resumed[i], bf16[i]) << "step " << i + 1;
}

// Switch Attention from scratch: routing in the log and the progress,
// exact resume (routers are ordinary parameters), export of the routed
// plan, and continual pretraining from that export keeping its routers.
TEST(Trainer, RoutedRunLogsRoutingResumesAndExports) {
  const std::string dir = TempDir("routed");
  const std::string data = WriteTokens(dir, "train.bin", 4000, 11);
  TrainOptions o = TinyRun(dir, data);
  o.attn = "routed:4,sinks:2";
  o.router_lr = 5e-2;  // resumes exactly with its own rate too
  o.val_data = WriteTokens(dir, "val.bin", 400, 12);
  const TrainResult r = Train(o);
  EXPECT_GT(r.last_router_loss, 0);
  EXPECT_GE(r.last_full_ratio, 0);
  EXPECT_LE(r.last_full_ratio, 1);
  EXPECT_EQ(r.val_full_ratio_by_layer.size(), 2u);

  const RunLog log(o.run_dir, 1 << 30, true);
  ASSERT_EQ(log.rows().size(), 8u);
  EXPECT_EQ(log.rows()[0].full_ratio, 1.0);  // new routers: every token on full attention
  EXPECT_GT(log.rows()[0].router_loss, 0);
  EXPECT_GE(log.rows()[3].val_full_ratio, 0);  // evaluated at step 4
  EXPECT_EQ(log.rows()[3].val_full_ratio_by_layer.size(), 2u);
  EXPECT_TRUE(log.rows()[2].val_full_ratio_by_layer.empty());
  {
    std::ifstream csv(o.run_dir + "/train_log.csv");
    std::string header;
    std::getline(csv, header);
    EXPECT_NE(header.find("router_loss,full_ratio"), std::string::npos) << header;
    std::ifstream json(o.run_dir + "/train_log.json");
    const nlohmann::json j = nlohmann::json::parse(json);
    EXPECT_TRUE(j[0].contains("full_ratio"));
    EXPECT_TRUE(j[3].contains("val_full_ratio_by_layer"));
  }

  TrainOptions part = o;
  part.run_dir = dir + "/run2";
  {
    TrainOptions first = part;
    first.time_limit_s = 1e-9;
    EXPECT_TRUE(Train(first).interrupted);
  }
  part.resume = true;
  Train(part);
  const RunLog resumed(part.run_dir, 1 << 30, true);
  ASSERT_EQ(resumed.rows().size(), log.rows().size());
  for (size_t i = 0; i < log.rows().size(); ++i) {
    EXPECT_NEAR(resumed.rows()[i].loss, log.rows()[i].loss, 1e-6) << "step " << i + 1;
    EXPECT_NEAR(resumed.rows()[i].router_loss, log.rows()[i].router_loss, 1e-9) << "step " << i + 1;
    EXPECT_EQ(resumed.rows()[i].full_ratio, log.rows()[i].full_ratio) << "step " << i + 1;
  }

  const ModelConfig config = LoadModelConfig(r.export_dir);
  EXPECT_EQ(config.attention_plan, "full,layer0:routed:4,layer1:routed:4,sinks:2");
  TrainOptions cpt = TinyRun(dir, data);
  cpt.run_dir = dir + "/cpt";
  cpt.init_from = r.export_dir;
  cpt.attn = "model";  // the stored plan, routers and all
  cpt.steps = 1;
  const TrainResult c = Train(cpt);
  EXPECT_EQ(LoadModelConfig(c.export_dir).attention_plan, config.attention_plan);
  EXPECT_GE(c.last_full_ratio, 0);
}

// --router-lr: routers move at their own rate on the schedule's shape. On
// AdamW's first step every parameter with a gradient moves by lr (m̂ = g,
// v̂ = g²), so with no weight decay, half-way through a 2-step warmup the
// router tensors move by router_lr / 2 and the others by lr / 2.
TEST(Trainer, RoutersLearnAtTheirOwnRate) {
  const std::string dir = TempDir("router_lr");
  TrainOptions o = TinyRun(dir, WriteTokens(dir, "train.bin", 2000, 14));
  o.attn = "routed:4,sinks:2";
  o.steps = 1;
  o.schedule.warmup_steps = 2;
  o.schedule.lr = 1e-3;
  o.router_lr = 1e-2;
  o.adamw.weight_decay = 0;
  o.eval_every = 0;
  Train(o);

  // The initial parameters, as Train makes them from scratch.
  ModelConfig shape = PresetConfig(o.preset, 32, o.context);
  shape.rope.base = o.rope_base;
  ModelAttentionDefaults defaults;
  defaults.n_layers = shape.n_layers;
  defaults.rope = shape.rope;
  TrainModel model(shape, ResolvePlan(o.attn, defaults));
  model.InitRandom(o.seed);
  const std::vector<float> after = LoadCheckpoint(o.run_dir + "/checkpoint.bin").params;
  ASSERT_EQ(after.size(), model.params().size());

  int routers = 0;
  for (const ParamTensor& t : model.tensors()) {
    const double rate = (IsRouterTensor(t) ? o.router_lr : o.schedule.lr) / 2;
    double most = 0;
    for (int64_t i = t.offset; i < t.offset + t.numel; ++i)
      most = std::max(most, std::abs(double(after[size_t(i)]) - model.params()[size_t(i)]));
    EXPECT_LE(most, rate * 1.001) << t.name;
    if (IsRouterTensor(t)) {
      ++routers;
      EXPECT_GT(most, rate * 0.999) << t.name;
    }
    if (t.name == "model.layers.0.self_attn.q_proj.weight") {
      EXPECT_GT(most, rate * 0.999) << t.name;
    }
  }
  EXPECT_EQ(routers, 4);  // 2 layers' weight and bias
}

// Continual pretraining of a full-attention model into a routed plan: the
// first step runs every token on full attention.
TEST(Trainer, RoutedContinualPretrainingStartsOnFullAttention) {
  const std::string dir = TempDir("routed_cpt");
  const std::string data = WriteTokens(dir, "train.bin", 2000, 13);
  TrainOptions o = TinyRun(dir, data);
  o.attn = "full";
  o.steps = 2;
  const TrainResult base = Train(o);
  TrainOptions cpt = TinyRun(dir, data);
  cpt.run_dir = dir + "/cpt";
  cpt.init_from = base.export_dir;
  cpt.attn = "routed:4";
  cpt.router.gamma_constant = true;
  cpt.steps = 2;
  Train(cpt);
  const RunLog log(cpt.run_dir, 1 << 30, true);
  ASSERT_EQ(log.rows().size(), 2u);
  EXPECT_EQ(log.rows()[0].full_ratio, 1.0);
}

TEST(Trainer, ExportLoadsWithTheSameLogits) {
  const std::string dir = TempDir("export");
  TrainOptions o = TinyRun(dir, WriteTokens(dir, "train.bin", 2000, 3));
  o.attn = "hybrid:1:1,window:8,sinks:2,nope:full";
  o.steps = 3;
  const TrainResult r = Train(o);
  auto loaded = LoadModel(r.export_dir);
  const AttentionPlan plan = loaded->ResolvePlan("");
  EXPECT_EQ(plan.layers[0].span, (Span{8, 2}));
  EXPECT_TRUE(plan.layers[1].span.full());
  EXPECT_TRUE(plan.layers[0].rope.enabled);
  EXPECT_FALSE(plan.layers[1].rope.enabled);

  TrainModel model(PresetConfig("tiny", 32, 16), plan);
  LoadHfWeights(model, r.export_dir);
  const std::vector<int32_t> tokens = {1, 4, 7, 10, 13, 16, 31, 2, 5, 8, 11, 14, 17, 20, 23, 26};
  std::vector<int32_t> targets(tokens.size(), 0);
  model.Forward(tokens.data(), targets.data(), 1, int64_t(tokens.size()));
  std::vector<int32_t> pos(tokens.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  auto session = loaded->NewSession(plan);
  std::vector<float> logits(tokens.size() * 32);
  loaded->Forward(logits.data(), Batch{tokens.data(), pos.data(), int64_t(tokens.size()), true}, *session);
  double worst = 0;
  for (size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, double(std::abs(logits[i] - model.logits()[i])));
  EXPECT_LT(worst, 1e-4);
}

// The routed contract between training and inference: the router reads the
// normed attention input, logit > 0 sends a token to full attention. An
// export with routers set to split the tokens runs in the inference model
// with the training forward's logits.
TEST(Trainer, RoutedExportLoadsWithTheSameLogits) {
  const std::string dir = TempDir("routed_export");
  const AttentionPlan plan = [] {
    ModelAttentionDefaults d;
    d.n_layers = 2;
    d.rope.base = 10000;
    return ResolvePlan("routed:4,sinks:1,nope:window", d);
  }();
  ModelConfig shape = PresetConfig("tiny", 32, 32);
  TrainModel model(shape, plan);
  model.InitRandom(21);
  std::mt19937_64 rng(22);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  for (const ParamTensor& t : model.tensors())
    if (t.name.find("router") != std::string::npos)
      for (int64_t i = 0; i < t.numel; ++i) model.params()[size_t(t.offset + i)] = noise(rng);
  ExportHfDirectory(dir + "/model", model, ExportOptions{});
  auto loaded = LoadModel(dir + "/model");
  const AttentionPlan again = loaded->ResolvePlan("");
  ASSERT_EQ(again.layers[1].kind, LayerKind::kRouted);

  std::vector<int32_t> tokens(24), targets(24, 0), pos(24);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(rng() % 32), pos[i] = int32_t(i);
  model.Forward(tokens.data(), targets.data(), 1, int64_t(tokens.size()));
  ASSERT_GT(model.full_ratio(), 0.0);
  ASSERT_LT(model.full_ratio(), 1.0);
  auto session = loaded->NewSession(again);
  std::vector<float> logits(tokens.size() * 32);
  loaded->Forward(logits.data(), Batch{tokens.data(), pos.data(), int64_t(tokens.size()), true}, *session);
  double worst = 0;
  for (size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, double(std::abs(logits[i] - model.logits()[i])));
  EXPECT_LT(worst, 1e-4);
}

// Qwen2 trains: a model with q/k/v biases exports as Qwen2ForCausalLM with
// every bias, runs in the inference model with the training forward's
// logits, and loads back into the trainer (--init) with the same parameters.
TEST(Trainer, Qwen2ExportKeepsTheBiasesAndTheLogits) {
  const std::string dir = TempDir("qwen2_export");
  ModelConfig shape = PresetConfig("tiny", 32, 40, "Qwen2ForCausalLM");
  const AttentionPlan plan = [] {
    ModelAttentionDefaults d;
    d.n_layers = 2;
    d.rope.base = 10000;
    return ResolvePlan("full,layer0:swa:5", d);
  }();
  TrainModel model(shape, plan);
  model.InitRandom(41);
  EXPECT_EQ(model.params()[size_t(model.tensor("model.layers.1.self_attn.k_proj.bias").offset)], 0.0f);
  std::mt19937_64 rng(42);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (float& p : model.params()) p += noise(rng);
  ExportHfDirectory(dir, model, ExportOptions{});
  const ModelConfig c = LoadModelConfig(dir);
  EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(TrainModel(c, plan).spec().qkv_bias);
  TrainModel back(c, ResolvePlan(c.attention_plan, AttentionDefaultsFor(c)));
  EXPECT_EQ(LoadHfWeights(back, dir), 0);
  EXPECT_EQ(back.params(), model.params());

  auto loaded = LoadModel(dir);
  const int64_t T = 24;
  std::vector<int32_t> tokens(T), targets(T, 0), pos(T);
  for (int64_t i = 0; i < T; ++i) tokens[size_t(i)] = int32_t(rng() % 32), pos[size_t(i)] = int32_t(i);
  model.Forward(tokens.data(), targets.data(), 1, T);
  auto session = loaded->NewSession(loaded->ResolvePlan(""));
  std::vector<float> logits(size_t(T) * 32);
  loaded->Forward(logits.data(), Batch{tokens.data(), pos.data(), T, true}, *session);
  double worst = 0;
  for (size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, double(std::abs(logits[i] - model.logits()[i])));
  EXPECT_LT(worst, 1e-4);
  // A trainer laid out without the biases refuses the directory rather than drop them.
  ModelConfig plain = shape;
  plain.architecture = "LlamaForCausalLM";
  TrainModel llama(plain, plan);
  EXPECT_THROW(LoadHfWeights(llama, dir), std::runtime_error);
}

// The linear contract: an export with a linear layer and a linear + window
// one (LoLCATs' hybrid) runs in the inference model with the training
// forward's logits, whole, in chunks and one token at a time; the linear
// layer's cache is its state, whose size does not grow, the hybrid's the
// state, a ring and the pending tokens; a model without feature maps is
// refused under a linear plan.
TEST(Trainer, LinearExportLoadsWithTheSameLogits) {
  const std::string dir = TempDir("linear_export");
  const AttentionPlan plan = [] {
    ModelAttentionDefaults d;
    d.n_layers = 2;
    d.rope.base = 10000;
    return ResolvePlan("full,layer0:linear,layer1:linear:5", d);
  }();
  ModelConfig shape = PresetConfig("tiny", 32, 40);
  shape.n_heads = 4;
  shape.n_kv_heads = 2;
  TrainModel model(shape, plan);
  model.InitRandom(31);
  std::mt19937_64 rng(32);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (float& p : model.params()) p += noise(rng);
  ExportHfDirectory(dir + "/model", model, ExportOptions{});
  auto loaded = LoadModel(dir + "/model");
  const AttentionPlan again = loaded->ResolvePlan("");
  ASSERT_EQ(again.layers[0].kind, LayerKind::kLinear);
  ASSERT_EQ(again.layers[1].span.window, 5);

  const int64_t T = 40;
  std::vector<int32_t> tokens(T), targets(T, 0), pos(T);
  for (int64_t i = 0; i < T; ++i) tokens[size_t(i)] = int32_t(rng() % 32), pos[size_t(i)] = int32_t(i);
  model.Forward(tokens.data(), targets.data(), 1, T);
  for (const int64_t piece : {T, int64_t(7), int64_t(1)}) {
    KvCacheOptions kv;
    kv.max_chunk = 16;  // the whole prompt runs in chunks of 16
    auto session = loaded->NewSession(again, kv);
    const size_t empty_bytes = session->cache.layer(0).Bytes();
    std::vector<float> logits(size_t(T) * 32);
    for (int64_t at = 0; at < T; at += piece) {
      const int64_t n = std::min(piece, T - at);
      loaded->Forward(logits.data() + at * 32, Batch{tokens.data() + at, pos.data() + at, n, true}, *session);
    }
    EXPECT_EQ(session->cache.layer(0).Bytes(), empty_bytes);
    EXPECT_EQ(empty_bytes, size_t(2 * 8 * (8 + 1) * 4));  // KV 2, P 8, head dim 8
    EXPECT_EQ(PlanLayerKvBytesAt(again.layers[0], loaded->kv_shape(), kv, 1 << 20), empty_bytes);
    EXPECT_EQ(PlanLayerKvBytesAt(again.layers[1], loaded->kv_shape(), kv, T), session->cache.layer(1).Bytes());
    double worst = 0;
    for (size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, double(std::abs(logits[i] - model.logits()[i])));
    EXPECT_LT(worst, 1e-4) << "pieces of " << piece;
  }
  // Out of order positions cannot join a state.
  auto session = loaded->NewSession(again);
  std::vector<float> one(32);
  loaded->Forward(one.data(), Batch{tokens.data(), pos.data(), 4, false}, *session);
  EXPECT_THROW(loaded->Forward(one.data(), Batch{tokens.data(), pos.data() + 6, 1, false}, *session),
               std::invalid_argument);
  // A softmax model under a linear plan: refused, naming the fix.
  TrainModel softmax(shape, [] {
    ModelAttentionDefaults d;
    d.n_layers = 2;
    d.rope.base = 10000;
    return ResolvePlan("full", d);
  }());
  softmax.InitRandom(5);
  ExportHfDirectory(dir + "/softmax", softmax, ExportOptions{});
  auto plain = LoadModel(dir + "/softmax");
  auto linear_session = plain->NewSession(plain->ResolvePlan("linear"));
  try {
    plain->Forward(one.data(), Batch{tokens.data(), pos.data(), 4, false}, *linear_session);
    ADD_FAILURE() << "a model without feature maps ran a linear plan";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--attention-transfer"), std::string::npos) << e.what();
  }
}

TEST(Trainer, CheckpointErrorsAreClear) {
  const std::string dir = TempDir("ckpt");
  TrainOptions o = TinyRun(dir, WriteTokens(dir, "train.bin", 2000, 4));
  o.steps = 2;
  Train(o);
  // Mismatched settings.
  TrainOptions other = o;
  other.resume = true;
  other.attn = "full";
  try {
    Train(other);
    FAIL() << "expected a mismatch error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_plan"), std::string::npos) << e.what();
  }
  // Starting again over an existing checkpoint without --resume.
  EXPECT_THROW(Train(o), std::runtime_error);
  // A flipped byte.
  const std::string ckpt = o.run_dir + "/checkpoint.bin";
  {
    std::fstream f(ckpt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x55');
  }
  try {
    LoadCheckpoint(ckpt);
    FAIL() << "expected a corruption error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
  }
  fs::resize_file(ckpt, 20);
  EXPECT_THROW(LoadCheckpoint(ckpt), std::runtime_error);
}

TEST(Trainer, NonFiniteLossNamesStepAndLayer) {
  const std::string dir = TempDir("nan");
  TrainOptions o = TinyRun(dir, WriteTokens(dir, "train.bin", 2000, 5));
  o.schedule.lr = 1e30;  // explodes after the first update
  o.adamw.clip_norm = 0;
  o.checkpoint_every = 1;
  try {
    Train(o);
    FAIL() << "expected a non-finite loss";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("at step 2"), std::string::npos) << m;
    EXPECT_NE(m.find("first non-finite value"), std::string::npos) << m;
    EXPECT_NE(m.find("checkpoint (step 1)"), std::string::npos) << m;
  }
  EXPECT_EQ(LoadCheckpoint(o.run_dir + "/checkpoint.bin").step, 1);
}

TEST(Data, OrderIsAFunctionOfSeedAndIndex) {
  const std::string dir = TempDir("data");
  DataOptions d;
  d.train_path = WriteTokens(dir, "train.bin", 1000, 6);
  d.synthetic_path = WriteTokens(dir, "synth.bin", 500, 7);
  d.synthetic_rate = 0.5;
  d.seq = 16;
  d.seed = 9;
  DataLoader a(d), b(d);
  std::vector<int32_t> t1(16 * 8), y1(16 * 8), t2(16 * 8), y2(16 * 8);
  a.TrainBatch(100, 8, t1.data(), y1.data());
  b.TrainBatch(0, 3, t2.data(), y2.data());  // another position first
  b.TrainBatch(100, 8, t2.data(), y2.data());
  EXPECT_EQ(t1, t2);
  for (size_t i = 0; i + 1 < 16; ++i) EXPECT_EQ(y1[i], t1[i + 1]);  // targets are the next tokens
}

TEST(Data, LongSyntheticDocumentsEndInsideTheSequence) {
  const std::string dir = TempDir("synthdocs");
  DataOptions d;
  d.train_path = WriteTokens(dir, "train.bin", 1000, 8);
  d.synthetic_path = dir + "/synth.bin";
  {
    TokenFileWriter w(d.synthetic_path, 32);
    std::vector<int32_t> ids;
    for (int doc = 0; doc < 5; ++doc) {
      for (int i = 0; i < 40; ++i) ids.push_back((doc + i) % 30);
      ids.push_back(31);  // end of document: the file's last id
    }
    w.Append(ids);
  }
  d.synthetic_rate = 1.0;
  d.seq = 16;
  DataLoader loader(d);
  std::vector<int32_t> tokens(16 * 6), targets(16 * 6);
  loader.TrainBatch(0, 6, tokens.data(), targets.data());
  for (int s = 0; s < 6; ++s) EXPECT_EQ(targets[size_t(s * 16 + 15)], 31) << "sequence " << s;
}

TEST(Synthetic, DocumentsCarryTheirAnswerFarFromTheFact) {
  for (SyntheticKind kind : ParseSyntheticKinds("passkey,kv,code")) {
    const SyntheticDoc doc = MakeSyntheticDoc(kind, 4000, 1, 2);
    EXPECT_GE(doc.text.size(), 3800u);
    const size_t first = doc.text.find(doc.answer);
    const size_t last = doc.text.rfind(doc.answer);
    ASSERT_NE(first, std::string::npos) << SyntheticKindName(kind);
    EXPECT_GT(last - first, 1500u) << SyntheticKindName(kind);
    EXPECT_EQ(doc.text, MakeSyntheticDoc(kind, 4000, 1, 2).text);
  }
  EXPECT_THROW(ParseSyntheticKinds("passkey,nope"), std::invalid_argument);
}

TEST(Schedule, WarmupThenCosine) {
  ScheduleOptions s;
  s.lr = 1.0;
  s.min_lr_ratio = 0.1;
  s.warmup_steps = 10;
  s.total_steps = 110;
  EXPECT_NEAR(LearningRate(s, 0), 0.1, 1e-12);
  EXPECT_NEAR(LearningRate(s, 9), 1.0, 1e-12);
  EXPECT_NEAR(LearningRate(s, 60), 0.55, 1e-12);
  EXPECT_NEAR(LearningRate(s, 110), 0.1, 1e-12);
}

TEST(HfIo, CanonicalSpecResolvesToThePlan) {
  ModelAttentionDefaults d;
  d.n_layers = 6;
  for (const char* spec : {"hybrid:3:1,window:64,sinks:4,nope:full", "full", "swa:32,nope:all",
                           "hybrid:1:1,window:16,layer0:full", "routed:16,sinks:2",
                           "hybrid:1:1,window:16,layer3:routed:8,sinks:1,nope:full", "routed:8,layer2:swa,nope:window",
                           "hybrid:3:1,window:64,staggered", "swa:16,sinks:2,chunked", "full,layer3:swa:8,staggered"}) {
    const AttentionPlan plan = ResolvePlan(spec, d);
    const AttentionPlan again = ResolvePlan(CanonicalPlanSpec(plan), d);
    for (size_t i = 0; i < plan.layers.size(); ++i) {
      EXPECT_EQ(plan.layers[i].kind, again.layers[i].kind) << spec;
      EXPECT_EQ(plan.layers[i].span, again.layers[i].span) << spec;
      EXPECT_EQ(plan.layers[i].rope.enabled, again.layers[i].rope.enabled) << spec;
    }
  }
  // Block offsets that no spec word gives are refused, not exported wrong.
  AttentionPlan odd = ResolvePlan("swa:64,staggered", d);
  odd.layers[2].span.offset = 5;
  EXPECT_THROW(CanonicalPlanSpec(odd), std::invalid_argument);
}

}  // namespace
}  // namespace swan
