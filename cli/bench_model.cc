// `swan bench -m DIR | --synthetic NAME`: prefill and decode speed of a
// whole model under several attention plans and depths, like llama-bench,
// with the decode roofline (bytes a token reads / measured read bandwidth)
// and the matrix products' rate against the GEMM rate (oneDNN fp32; bf16:
// oneDNN or, where the CPU has no bf16 hardware, swan's own), both measured in
// the same run. Routed plans (Switch Attention) run with their learned
// routers, or with a forced full ratio (--route-ratio) on any model.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/args.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "eval/cost.h"
#include "gpu/vulkan_device.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "model/synthetic.h"
#include "model/weight_source.h"
#include "ops/cpu_report.h"
#include "ops/gemm_rate.h"
#include "ops/linear.h"
#include "util/bandwidth.h"
#include "util/memory.h"
#include "util/threads.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options("usage: swan bench (-m DIR | --synthetic NAME) [options]\n");
  options.Add(ModelOption())
      .Add({{"--synthetic"},
            "NAME",
            "random weights in a real model's shape: llama3.2-1b, qwen2.5-0.5b, gemma3-1b, mistral-7b "
            "(Llama-family compute, see model/synthetic.h)"})
      .Add(PlanListOption(" (default: the model's own), e.g. 'full;swa:1024;hybrid:3:1,window:1024;routed:1024'"))
      .Add({{"--route-ratio"},
            "R",
            "routed layers ignore their routers and send each token to full attention with probability R (a "
            "seeded draw): the cost of a full ratio on a model without routers (default: the learned routers "
            "decide)"})
      .Add({{"-p"}, "N", "prompt tokens timed as prefill (default 512; 0 = skip)"})
      .Add({{"-n"},
            "N",
            "tokens timed as decode, from the depth in a cache of its own, as llama-bench's tg (default 16)"})
      .Add({{"-d"}, "LIST", "depths: tokens already in the cache (default 0)"})
      .Add({{"--fill"},
            "MODE",
            "how depth is filled: random (random K/V rows, seconds even at 128K; default) or prefill (a real "
            "prefill of random tokens)"})
      .Add(KvOption("bf16; f32 with --device", /*decodes=*/true))
      .Add(DeviceOption())
      .Add({{"--bandwidth"},
            "GBS",
            "the read bandwidth in GB/s the decode roofline divides (default: measured on the CPU; on a device "
            "none, so no roofline, unless given: bench/gpu_check.sh measures the GPU's)"})
      .Add(WeightsOption(
          ": the synthetic model's (default bf16), or a checkpoint's, converted as it loads (default: as stored)"))
      .Add(PrefillChunkOption(512))
      .Add({{"-r"},
            "N",
            "repeats, after a warm-up (default 3, like llama-bench): each figure is the median, with the spread "
            "(max - min) / median"})
      .Add(JsonOption("the figures", " (with the runs, the command line, the CPU, threads and repeats)"))
      .Add(ThreadsOption())
      .Text(
          "Decode roofline: a token reads every weight once plus the K/V rows each layer\n"
          "attends to; roofline tok/s = read bandwidth / those bytes. A routed layer reads\n"
          "r * (all keys) + (1 - r) * (window keys) for its full ratio r: the forced one, or\n"
          "the share its router chose during the timed decode (column full%); a per-head layer\n"
          "reads all keys for its full KV heads and its window's for the others, a linear layer its\n"
          "state (KV heads x P x (head dim + 1) floats). The read bandwidth is a plain read\n"
          "of the weights themselves, one pass after each decode token (outside its time),\n"
          "12 layouts in turn (1-8 streams a thread, asked for 0-8 KiB ahead); a run's is the\n"
          "layout that read fastest over its passes in that run. So each run is set against\n"
          "the memory of its own seconds (on a machine shared with other programs the\n"
          "bandwidth moves from one second to the next), and a model that fits in a cache\n"
          "gets that cache's rate. %roof is the median of the runs' shares. The last line\n"
          "gives the peak RSS (JSON: peak_rss_bytes).\n");
  return options;
}

// K and V bytes one decode step at position `pos` reads in layer spans; a
// routed layer reads all keys with its full ratio, else its window's.
//   full_ratio [n_layers], used on routed layers
double KvBytesPerToken(const AttentionPlan& plan, const std::vector<double>& full_ratio, const KvShape& shape,
                       int64_t pos, KvType kv_type) {
  double bytes = 0;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerPlan& l = plan.layers[i];
    const double all_keys = double(pos + 1);
    if (l.kind == LayerKind::kLinear) {  // the state, S and z, in float32; a hybrid's window too
      bytes += double(shape.n_kv_heads) * shape.linear_phi_dim * (shape.head_dim + 1) * sizeof(float);
      if (l.span.window > 0)
        bytes += std::min(all_keys, double(l.span.window)) * 2.0 *
                 double(KvBytes(kv_type, int64_t(shape.n_kv_heads) * shape.head_dim));
      continue;
    }
    double keys = all_keys;
    if (l.span.window > 0) keys = std::min(all_keys, double(l.span.window) + l.span.sinks);
    if (l.kind == LayerKind::kRouted) keys = full_ratio[i] * all_keys + (1.0 - full_ratio[i]) * keys;
    if (l.kind == LayerKind::kPerHead) {  // its full KV heads read every key
      const double f = double(l.full_heads.size()) / shape.n_kv_heads;
      keys = f * all_keys + (1.0 - f) * keys;
    }
    bytes += keys * 2.0 * double(KvBytes(kv_type, int64_t(shape.n_kv_heads) * shape.head_dim));
  }
  return bytes;
}

struct Row {
  std::string plan;
  int64_t depth;
  std::vector<double> prefill_runs, decode_runs;       // [repeats] tokens/s of each run
  double prefill_tps = 0, decode_tps = 0, kv_mib = 0;  // medians
  double prefill_spread = 0, decode_spread = 0;
  double decode_bytes = 0;               // what a token reads, weights and K/V, at the decode's middle position
  std::vector<double> decode_bandwidth;  // [repeats + 1] GB/s of the plain read after the warm-up, then each run
  double decode_roofline_tps = 0;        // the median of the runs' rooflines
  double decode_share = 0;               // of the roofline: the median of the runs' (decode / its roofline)
  double linear_gflops = 0;
  // The prefill's products against the GEMM rates on the same mix of f32
  // and bf16 products: (time at the GEMM rates) / (time taken).
  double linear_vs_gemm = 0;
  double full_ratio = -1;  // routed plans: share of the decode's routed token-layer pairs that used full
};

// The row's roofline: from --bandwidth when given, else each decode run's
// from the read bandwidth measured between its own tokens.
void SetRoofline(Row& row, double given_bandwidth) {
  if (given_bandwidth > 0) {
    row.decode_roofline_tps = given_bandwidth * 1e9 / row.decode_bytes;
    row.decode_share = row.decode_tps / row.decode_roofline_tps;
    return;
  }
  const std::vector<double>& bandwidth = row.decode_bandwidth;  // the warm-up's, then each run's
  if (bandwidth.size() != row.decode_runs.size() + 1) return;   // none measured (a device): no roofline
  std::vector<double> rooflines, shares;                        // [repeats]
  for (size_t i = 0; i < row.decode_runs.size(); ++i) {
    if (bandwidth[i + 1] <= 0) return;  // nothing read (spans too small): no roofline
    rooflines.push_back(bandwidth[i + 1] * 1e9 / row.decode_bytes);
    shares.push_back(row.decode_runs[i] / rooflines.back());
  }
  row.decode_roofline_tps = MedianAndSpread(rooflines).first;
  row.decode_share = MedianAndSpread(shares).first;
}

}  // namespace

int RunBenchModel(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  ApplyThreadsOption(args);
  const bool json = args.Has("--json");
  if (args.Has("-m") == args.Has("--synthetic"))
    throw std::invalid_argument("give exactly one of -m DIR and --synthetic NAME\n" + flags.Help());
  const int64_t prompt = args.GetInt("-p", 512), gen = args.GetInt("-n", 16);
  const int64_t batch = args.GetInt("--batch", 512);
  const int64_t repeats = args.GetInt("-r", 3);
  if (repeats < 1) throw std::invalid_argument("-r: repeats must be >= 1");
  const auto depths = args.GetIntList("-d", {0});
  // On a Vulkan device the cache lives in device memory (random rows are
  // written there), and the CPU's bandwidth and GEMM rates do not apply.
  const int device = args.Has("--device") ? VulkanDeviceOf(args.Get("--device", "cpu")) : -1;
  const std::string fill = args.Get("--fill", "random");
  const double given_bandwidth = args.Has("--bandwidth") ? std::stod(args.Get("--bandwidth", "0")) : 0.0;
  if (args.Has("--bandwidth") && !(given_bandwidth > 0))
    throw std::invalid_argument("--bandwidth: a read bandwidth in GB/s above 0");
  const std::string kv_name = args.Get("--kv", device >= 0 ? "f32" : "bf16"), w_name = args.Get("--weights", "bf16");
  if (prompt < 0 || gen < 1 || batch < 1) throw std::invalid_argument("-p >= 0, -n >= 1, --batch >= 1");
  if (fill != "random" && fill != "prefill") throw std::invalid_argument("--fill: random or prefill");
  for (long long d : depths)
    if (d < 0) throw std::invalid_argument("-d: depths must be >= 0");
  const KvType kv_type = KvTypeFromString(kv_name);
  RequireDeviceKv(args, kv_type);
  const double route_ratio = args.Has("--route-ratio") ? args.GetDouble("--route-ratio", 0) : -1;
  if (args.Has("--route-ratio") && (route_ratio < 0 || route_ratio > 1))
    throw std::invalid_argument("--route-ratio must be between 0 and 1");

  auto log = [&](const std::string& line) {
    if (!json) std::fprintf(stderr, "%s\n", line.c_str());
  };
  const std::string source = args.Has("-m") ? args.Get("-m", "") : "synthetic " + args.Get("--synthetic", "");
  // The GEMM probes first, their buffers freed before the weights load, so
  // that the peak memory is the model's (weights resident once), not both.
  const WeightType weight_type = ParseWeightType(w_name, "--weights");
  const LoadOptions load = LoadOptionsFrom(args);
  double gemm = 0, gemm_bf16 = 0;  // the CPU's; 0 = not measured (a device run)
  BF16GemmRate bf16_rate;
  if (device < 0) {
    log("measuring the GEMM rates ...");
    gemm = MeasureOneDnnGemmGflops(2048, 2048, 2048);
    bf16_rate = MeasureBF16GemmGflops(2048, 2048, 2048);
    gemm_bf16 = bf16_rate.gflops;
  }
  // The probes' freed buffers can stay in the heap (glibc raises its mmap
  // threshold after a large free): hand them back before the weights load.
  ReturnFreedMemory();
  log("loading " + source + " ...");
  std::unique_ptr<LanguageModel> model = args.Has("-m") ? LoadModel(args.Get("-m", ""), load)
                                                        : LoadSyntheticModel(args.Get("--synthetic", ""), weight_type,
                                                                             /*seed=*/1, device);
  const std::vector<std::string> specs = SplitPlanList(args.Get("--attn", "model"));
  std::string device_name = "cpu";  // "vulkan:0 NVIDIA H100 80GB HBM3"
  if (device >= 0) device_name = "vulkan:" + std::to_string(device) + " " + ListVulkanDevices().at(size_t(device)).name;
  const double weight_bytes = double(model->WeightBytes());

  CostOptions cost;
  cost.depths.assign(depths.begin(), depths.end());
  cost.prompt_tokens = prompt;
  cost.decode_tokens = int32_t(gen);
  cost.decode_after_prompt = false;  // decode from the depth, as llama-bench's tg does
  cost.repeats = int32_t(repeats);
  cost.random_fill = fill == "random";
  cost.forced_full_ratio = route_ratio;
  cost.seed = 11;
  cost.kv.type = kv_type;
  cost.kv.max_chunk = int32_t(batch);
  // The roofline's read bandwidth: the weights themselves read plainly
  // between the decode's tokens, so that each run is set against the
  // bandwidth of its own seconds. Read just before and after each run (the
  // best pass of 12 layouts), it took the best moment of a machine whose
  // bandwidth moved within seconds: in one such minute the 1B Q8_0 file's
  // decode came out at 56% of that roofline and at 81% of this one, while
  // in a quiet minute both gave 66-68% (docs/performance.md). No extra
  // memory is held; a model that fits in a cache gets the cache's rate.
  std::optional<ReadBandwidthSampler> weight_reads;
  if (device < 0 && given_bandwidth <= 0) {
    std::vector<ByteSpan> weight_spans = model->WeightSpans();
    if (!weight_spans.empty()) {
      weight_reads.emplace(std::move(weight_spans));
      // on the threads the token ran on (ThreadsForNextStep)
      cost.between_tokens = [&] { weight_reads->Pass(omp_get_max_threads()); };
      cost.read_bandwidth = [&] { return weight_reads->TakeGBs(); };
    }
  }
  std::vector<Row> rows;
  for (const std::string& spec : specs) {
    const AttentionPlan plan = model->ResolvePlan(spec);
    log("  " + spec + " ...");
    for (const CostPoint& point : MeasureCost(*model, plan, cost)) {
      Row row;
      row.plan = spec;
      row.depth = point.depth;
      row.prefill_runs = point.prefill_runs;
      row.decode_runs = point.decode_runs;
      row.prefill_tps = point.prefill_tokens_per_s;
      row.prefill_spread = point.prefill_spread;
      row.decode_tps = point.decode_tokens_per_s;
      row.decode_spread = point.decode_spread;
      row.full_ratio = point.routed_full_ratio;
      row.kv_mib = point.kv_bytes / (1 << 20);
      if (point.linear_seconds > 0 && device < 0) {
        row.linear_gflops = point.linear_flops / point.linear_seconds * 1e-9;
        // The same mix of f32 and bf16 products at the GEMM rates, against the time taken.
        const double gemm_seconds =
            ((point.linear_flops - point.linear_bf16_flops) / gemm + point.linear_bf16_flops / gemm_bf16) * 1e-9;
        row.linear_vs_gemm = gemm_seconds / point.linear_seconds;
      }
      row.decode_bytes = weight_bytes + KvBytesPerToken(plan, point.full_ratio, model->kv_shape(),
                                                        point.decode_start + gen / 2, kv_type);
      row.decode_bandwidth = point.decode_read_bandwidth;
      SetRoofline(row, given_bandwidth);
      rows.push_back(row);
    }
  }
  std::vector<double> probes;  // every timed run's read bandwidth, GB/s (not the warm-ups')
  for (const Row& row : rows)
    for (size_t i = 1; i < row.decode_bandwidth.size(); ++i)  // [0]: the warm-up's
      if (row.decode_bandwidth[i] > 0) probes.push_back(row.decode_bandwidth[i]);
  const double bandwidth = given_bandwidth > 0 ? given_bandwidth : MedianAndSpread(probes).first;

  if (json) {
    nlohmann::json j;
    j["model"] = source;
    j["read_bandwidth_gbs"] = bandwidth;  // the median of the runs' (or --bandwidth); 0: none
    j["gemm_fp32_gflops"] = gemm;
    j["gemm_bf16_gflops"] = gemm_bf16;
    j["gemm_bf16_product"] = bf16_rate.onednn ? "onednn" : "swan";
    j["weight_bytes"] = weight_bytes;
    j["prompt_tokens"] = prompt;
    j["decode_tokens"] = gen;
    j["kv_type"] = kv_name;
    j["repeats"] = repeats;
    j["peak_rss_bytes"] = PeakResidentBytes();
    j["threads"] = ThreadLimit();
    j["command"] = "swan bench " + args.CommandLine();
    j["swan"] = std::string("built ") + __DATE__;
    j["cpu"] = CpuReport();
    j["device"] = device_name;
    if (route_ratio >= 0) j["forced_route_ratio"] = route_ratio;
    for (const Row& r : rows)
      j["rows"].push_back(
          {{"plan", r.plan},
           {"decode_full_route_ratio", r.full_ratio >= 0 ? nlohmann::json(r.full_ratio) : nlohmann::json(nullptr)},
           {"depth", r.depth},
           {"prefill_tokens_per_s", r.prefill_tps},
           {"prefill_runs", r.prefill_runs},
           {"prefill_spread", r.prefill_spread},
           {"decode_runs", r.decode_runs},
           {"decode_spread", r.decode_spread},
           {"prefill_matmul_gflops", r.linear_gflops},
           {"prefill_matmul_fraction_of_gemm", r.linear_vs_gemm},
           {"decode_tokens_per_s", r.decode_tps},
           {"decode_roofline_tokens_per_s", r.decode_roofline_tps},
           {"decode_read_bandwidth_gbs", r.decode_bandwidth},
           {"decode_fraction_of_roofline", r.decode_share},
           {"kv_mib", r.kv_mib}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  char measured[160] = "";  // " (the weights read plainly between the decode's tokens: median of 4 runs, 52.0-58.3)"
  if (!probes.empty())
    std::snprintf(measured, sizeof(measured),
                  " (the weights read plainly between the decode's tokens: median of %zu runs, %.1f-%.1f)",
                  probes.size(), *std::min_element(probes.begin(), probes.end()),
                  *std::max_element(probes.begin(), probes.end()));
  else if (given_bandwidth > 0)
    std::snprintf(measured, sizeof(measured), " (--bandwidth)");
  if (device < 0)
    std::printf(
        "%s: %.0f MiB of weights read per token; read bandwidth %.1f GB/s%s; "
        "GEMM 2048^3: oneDNN fp32 %.0f GFLOP/s, %s %.0f GFLOP/s; KV %s\n",
        source.c_str(), weight_bytes / (1 << 20), bandwidth, measured, gemm, BF16ProductName().c_str(), gemm_bf16,
        kv_name.c_str());
  else if (bandwidth > 0)
    std::printf("%s on %s: %.0f MiB of weights read per token; read bandwidth %.1f GB/s (--bandwidth); KV %s\n",
                source.c_str(), device_name.c_str(), weight_bytes / (1 << 20), bandwidth, kv_name.c_str());
  else
    std::printf(
        "%s on %s: %.0f MiB of weights on the device; KV %s; no roofline (the CPU's bandwidth does not apply: "
        "--bandwidth GBS gives the device's)\n",
        source.c_str(), device_name.c_str(), weight_bytes / (1 << 20), kv_name.c_str());
  std::printf("%-28s %8s %11s %6s %9s %11s %6s %11s %7s %9s %6s\n", "plan", "depth", "pp tok/s", "±", "mm %GEMM",
              "tg tok/s", "±", "roofline", "%roof", "KV MiB", "full%");
  for (const Row& r : rows) {
    char full[16] = "-";
    if (r.full_ratio >= 0) std::snprintf(full, sizeof(full), "%.0f%%", 100.0 * r.full_ratio);
    char roof[2][16] = {"-", "-"};  // on a device: no roofline
    if (r.decode_roofline_tps > 0) {
      std::snprintf(roof[0], sizeof(roof[0]), "%.2f", r.decode_roofline_tps);
      std::snprintf(roof[1], sizeof(roof[1]), "%.0f%%", 100.0 * r.decode_share);
    }
    char pp[3][16] = {"-", "-", "-"};  // no prompt (-p 0): no prefill figures
    if (prompt > 0) {
      std::snprintf(pp[0], sizeof(pp[0]), "%.1f", r.prefill_tps);
      std::snprintf(pp[1], sizeof(pp[1]), "%.0f%%", 100.0 * r.prefill_spread);
      if (device < 0) std::snprintf(pp[2], sizeof(pp[2]), "%.0f%%", 100.0 * r.linear_vs_gemm);
    }
    std::printf("%-28s %8lld %11s %6s %9s %11.2f %5.0f%% %11s %7s %9.1f %6s\n", r.plan.c_str(), (long long)r.depth,
                pp[0], pp[1], pp[2], r.decode_tps, 100.0 * r.decode_spread, roof[0], roof[1], r.kv_mib, full);
  }
  std::printf(
      "pp: prefill of %lld tokens; mm %%GEMM: the matrix products' speed in it against "
      "the 2048^3 GEMM in the type they multiply in (fp32 or bf16); tg: decode of %lld tokens from the depth; "
      "medians of %lld runs after a warm-up, ±: (max - min) / median; peak RSS %.1f MiB\n",
      (long long)prompt, (long long)gen, (long long)repeats, double(PeakResidentBytes()) / (1 << 20));
  for (const Row& r : rows)
    if (r.full_ratio >= 0) {
      std::printf("full%%: share of the decode's routed token-layer pairs that used full attention (%s)\n",
                  route_ratio >= 0 ? "forced: --route-ratio" : "the learned routers");
      break;
    }
  return 0;
}

}  // namespace swan::cli
