// `swan bench attention`: the attention kernel table. Prefill time and
// useful GFLOP/s of full causal, SWA and SWA + sinks at several lengths,
// decode over a full view, over a ring and over per-head caches, and
// oneDNN's fp32 GEMM rate
// measured in the same run as the yardstick.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "attention/head_groups.h"
#include "attention/routed.h"
#include "attention/test_problem.h"
#include "cli/args.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "kv/kv_cache.h"
#include "ops/gemm_rate.h"

namespace swan::cli {
namespace {

// Query-key pairs a causal prefill of n tokens visits under `span`.
double VisiblePairs(int64_t n, Span span) {
  double pairs = 0;
  for (int64_t q = 0; q < n; ++q) {
    const int64_t seen = q + 1;
    if (span.window == 0 || seen <= span.window) {
      pairs += double(seen);
    } else {
      pairs += double(span.window) + double(std::min<int64_t>(span.sinks, seen - span.window));
    }
  }
  return pairs;
}

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

template <class F>
double BestSeconds(int repeats, F&& f) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// Decode over per-head caches (attention/head_groups.h): for each share, the
// first ceil(share * kv_heads) KV heads keep all `depth` keys and the others
// a ring, against a cache whose every head keeps them, filled with the same
// rows and timed in alternation.
struct PerHeadRow {
  int32_t full_heads = 0;        // of kv_heads
  double us = 0, full_us = 0;    // per token: per-head cache, all-full cache
  double mib = 0, full_mib = 0;  // cache bytes
};

std::vector<PerHeadRow> PerHeadDecode(std::mt19937& rng, const AttentionShape& shape, int64_t depth, Span window,
                                      const std::vector<double>& shares, int decode_steps) {
  KvCacheOptions options;
  options.type = KvType::kBF16;
  options.max_context = depth;
  std::vector<LayerKvCache> caches;  // [1 + rows] the all-full cache first
  std::vector<PerHeadRow> rows;      // one per distinct count of full heads
  caches.emplace_back(Span{}, KvShape{shape.n_kv_heads, shape.head_dim}, options);
  for (const double share : shares) {
    PerHeadRow row;
    row.full_heads = std::min(shape.n_kv_heads, int32_t(std::ceil(share * shape.n_kv_heads - 1e-9)));
    if (std::any_of(rows.begin(), rows.end(), [&](const PerHeadRow& r) { return r.full_heads == row.full_heads; }))
      continue;  // a share that rounds to heads already timed
    std::vector<int32_t> full(size_t(row.full_heads));
    for (int32_t h = 0; h < row.full_heads; ++h) full[size_t(h)] = h;
    caches.emplace_back(window, full, KvShape{shape.n_kv_heads, shape.head_dim}, options);
    rows.push_back(row);
  }
  const int64_t chunk = options.max_chunk, row = int64_t(shape.n_kv_heads) * shape.head_dim;
  std::normal_distribution<float> normal;
  std::vector<float> k(size_t(chunk * row)), v(k.size());  // [chunk, kv_heads, head_dim]
  std::vector<int32_t> pos(static_cast<size_t>(chunk));    // [chunk]
  for (int64_t start = 0; start < depth; start += chunk) {
    const int64_t n = std::min(chunk, depth - start);
    for (auto& x : k) x = normal(rng);
    for (auto& x : v) x = normal(rng);
    for (int64_t t = 0; t < n; ++t) pos[size_t(t)] = int32_t(start + t);
    for (LayerKvCache& c : caches) c.Write(k.data(), v.data(), pos.data(), n);
  }
  std::vector<float> q(size_t(shape.n_heads) * shape.head_dim), out(q.size());  // [1, heads, head_dim]
  for (auto& x : q) x = normal(rng);
  const int32_t q_pos = int32_t(depth - 1);
  AttentionArgs args;
  args.shape = shape;
  args.q = q.data();
  args.q_pos = &q_pos;
  args.n_q = 1;
  std::vector<double> best(caches.size(), 1e30);  // seconds per token
  for (int round = 0; round < 3; ++round)
    for (size_t c = 0; c < caches.size(); ++c) {
      const std::vector<HeadGroup> groups = caches[c].Groups();
      best[c] = std::min(best[c], BestSeconds(1, [&] {
                                    for (int step = 0; step < decode_steps; ++step)
                                      AttendHeadGroups(args, groups, out.data());
                                  }) / decode_steps);
    }
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].us = best[i + 1] * 1e6;
    rows[i].full_us = best[0] * 1e6;
    rows[i].mib = double(caches[i + 1].Bytes()) / (1 << 20);
    rows[i].full_mib = double(caches[0].Bytes()) / (1 << 20);
  }
  return rows;
}

struct PrefillRow {
  int64_t n;
  int32_t head_dim;
  std::string plan;
  double seconds, gflops;
  double gemm_gflops;  // oneDNN's rate measured right before this row
};

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options("usage: swan bench attention [options]\n");
  options.Add({{"--n"}, "LIST", "prefill lengths (default 1024,2048,4096,8192,16384,32768)"})
      .Add({{"--head-dims"}, "LIST", "head dims (default 64,128)"})
      .Add({{"--heads"}, "H", "query heads (default 8)"})
      .Add({{"--kv-heads"}, "K", "KV heads (default 2)"})
      .Add({{"--window"}, "W", "SWA window (default 1024)"})
      .Add({{"--sinks"}, "S", "sink tokens (default 4)"})
      .Add({{"--decode-depth"},
            "D",
            "keys of the full view for decode (default 32768); decode over it is also timed with f32, bf16 and "
            "q8_0 K/V (the same values)"})
      .Add({{"--plans"}, "LIST", "any of full,swa,sinks (default all three)"})
      .Add({{"--repeats"}, "R", "best of R runs (default 3; 1 above 8K tokens)"})
      .Add({{"--route-ratio"},
            "r",
            "routed decode: each step full with probability r, else the window (default 0.13, the SwiAttn "
            "paper's average)"})
      .Add({{"--head-shares"},
            "LIST",
            "per-head decode: shares of KV heads that keep every key, the others window + sinks (default "
            "0.25,0.5; rounded up to whole heads), timed against a cache whose every head keeps them"})
      .Add(JsonOption("the figures"))
      .Add(ThreadsOption());
  return options;
}

}  // namespace

int RunBenchAttention(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  ApplyThreadsOption(args);
  const auto lengths = args.GetIntList("--n", {1024, 2048, 4096, 8192, 16384, 32768});
  const auto head_dims = args.GetIntList("--head-dims", {64, 128});
  const int32_t heads = int32_t(args.GetInt("--heads", 8));
  const int32_t kv_heads = int32_t(args.GetInt("--kv-heads", 2));
  const int32_t window = int32_t(args.GetInt("--window", 1024));
  const int32_t sinks = int32_t(args.GetInt("--sinks", 4));
  const int64_t decode_depth = args.GetInt("--decode-depth", 32768);
  const int repeats = int(args.GetInt("--repeats", 3));
  const bool json = args.Has("--json");
  const double route_ratio = args.GetDouble("--route-ratio", 0.13);
  if (!(route_ratio >= 0.0 && route_ratio <= 1.0)) throw std::invalid_argument("--route-ratio must be in [0, 1]");
  if (window <= 0) throw std::invalid_argument("--window must be positive");
  std::vector<double> head_shares;
  for (const std::string& x : SplitList(args.Get("--head-shares", "0.25,0.5"), ',')) {
    char* end = nullptr;
    head_shares.push_back(std::strtod(x.c_str(), &end));
    if (x.empty() || *end != '\0' || !(head_shares.back() >= 0 && head_shares.back() <= 1))
      throw std::invalid_argument("--head-shares: each share is a number in [0, 1], got '" + x + "'");
  }
  ValidateSpan(Span{window, sinks});

  std::mt19937 rng(1234);
  auto log = [&](const char* fmt, auto... xs) {
    if (!json) {
      std::fprintf(stderr, fmt, xs...);
      std::fflush(stderr);
    }
  };

  log("measuring oneDNN fp32 GEMM 2048^3 ...\n");
  const double gemm = MeasureOneDnnGemmGflops(2048, 2048, 2048);
  if (!json) std::printf("oneDNN fp32 GEMM 2048^3: %.1f GFLOP/s at the start\n\n", gemm);

  std::vector<Span> plans;
  for (const std::string& name : SplitList(args.Get("--plans", "full,swa,sinks"), ',')) {
    if (name == "full")
      plans.push_back(Span{});
    else if (name == "swa")
      plans.push_back(Span{window, 0});
    else if (name == "sinks")
      plans.push_back(Span{window, sinks});
    else
      throw std::invalid_argument("--plans: unknown plan '" + name + "' (full, swa, sinks)");
  }
  std::vector<PrefillRow> rows;
  double peak_full_mib = 0;
  if (!json)
    std::printf(
        "prefill, %d query heads on %d KV heads, fp32 (GEMM: oneDNN 2048^3 measured "
        "before each row):\n%7s %4s %-24s %10s %9s %9s %7s\n",
        heads, kv_heads, "N", "d", "plan", "time(ms)", "GFLOP/s", "GEMM", "%GEMM");
  for (long long hd : head_dims) {
    for (long long n : lengths) {
      const AttentionShape shape{heads, kv_heads, int32_t(hd)};
      const testing::Problem p = testing::MakePrefill(rng, shape, Span{}, n, n);
      std::vector<float> out(p.q.size());  // [n, heads, head_dim]
      const int reps = n > 8192 ? 1 : repeats;
      for (const Span& span : plans) {
        log("  N=%lld d=%lld %s ...\r", n, hd, span.ToString().c_str());
        AttentionArgs a = p.Args();
        a.span = span;
        // The yardstick is measured next to each row: on a shared machine
        // the rate drifts during a long table, the ratio holds.
        const double gemm_now = MeasureOneDnnGemmGflops(2048, 2048, 2048, 2);
        const double s = BestSeconds(reps, [&] { Attend(a, out.data()); });
        const double flops = 4.0 * double(hd) * heads * VisiblePairs(n, span);
        rows.push_back({n, int32_t(hd), span.ToString(), s, flops / s * 1e-9, gemm_now});
        if (!json)
          std::printf("%7lld %4lld %-24s %10.2f %9.1f %9.1f %6.1f%%\n", n, hd, span.ToString().c_str(), s * 1e3,
                      rows.back().gflops, gemm_now, 100.0 * rows.back().gflops / gemm_now);
      }
      if (!json && plans.size() == 3) {
        const PrefillRow& full = rows[rows.size() - 3];
        const PrefillRow& swa = rows[rows.size() - 2];
        std::printf("%7s %4s full/SWA time ratio %.2f (key-pair ratio %.2f)\n", "", "", full.seconds / swa.seconds,
                    VisiblePairs(n, Span{}) / VisiblePairs(n, Span{window, 0}));
      }
    }
  }

  peak_full_mib = PeakRssMiB();

  // Decode: one new query at position decode_depth over (a) every earlier
  // key and (b) a ring of `window` slots plus `sinks` pinned slots, bf16
  // K/V as a cache stores them.
  const int32_t decode_dim = int32_t(head_dims.back());
  const AttentionShape shape{heads, kv_heads, decode_dim};
  const testing::Problem full_view = testing::MakePrefill(rng, shape, Span{}, decode_depth, 1, false, KvType::kBF16);
  testing::Problem ring =
      testing::MakePrefill(rng, shape, Span{window, sinks}, window + sinks, 1, false, KvType::kBF16);
  ring.q_pos[0] = int32_t(decode_depth - 1);
  for (int32_t s = 0; s < sinks; ++s) ring.k_pos[size_t(s)] = s;
  for (int32_t i = 0; i < window; ++i) {
    const int32_t pos = int32_t(decode_depth) - window + i;
    ring.k_pos[size_t(sinks + pos % window)] = pos;  // ring order, as a cache writes it
  }
  std::vector<float> out(size_t(heads * decode_dim));  // [1, heads, head_dim]
  const int decode_steps = 200;
  log("  decode ...                          \r");
  const AttentionArgs full_args = full_view.Args(), ring_args = ring.Args();
  const double full_s = BestSeconds(3,
                                    [&] {
                                      for (int i = 0; i < decode_steps; ++i) Attend(full_args, out.data());
                                    }) /
                        decode_steps;
  const double ring_s = BestSeconds(3,
                                    [&] {
                                      for (int i = 0; i < decode_steps; ++i) Attend(ring_args, out.data());
                                    }) /
                        decode_steps;
  // Routed decode over the same full view: each step's gate is drawn with
  // probability r (cost alone; a trained router decides in a real model).
  AttentionArgs window_args = full_args;
  window_args.span = Span{window, sinks};
  const double window_s = BestSeconds(3,
                                      [&] {
                                        for (int i = 0; i < decode_steps; ++i) Attend(window_args, out.data());
                                      }) /
                          decode_steps;
  std::vector<uint8_t> gates(decode_steps);  // [steps] 1 = full attention
  std::bernoulli_distribution draw(route_ratio);
  for (auto& g : gates) g = draw(rng);
  const double routed_s = BestSeconds(3,
                                      [&] {
                                        for (int i = 0; i < decode_steps; ++i)
                                          AttendRouted(window_args, &gates[size_t(i)], out.data());
                                      }) /
                          decode_steps;
  double drawn = 0;
  for (uint8_t g : gates) drawn += g;
  drawn /= decode_steps;

  // The full view stored as each KV type (the same values), timed in
  // alternation so that a noisy machine moves all three alike: the cost of
  // reading fewer bytes per key against widening them.
  const KvType kv_types[] = {KvType::kF32, KvType::kBF16, KvType::kQ8_0};
  std::vector<testing::Problem> typed_views;
  for (KvType type : kv_types) {
    std::mt19937 same(99);  // the same values for every type
    typed_views.push_back(testing::MakePrefill(same, shape, Span{}, decode_depth, 1, false, type));
  }
  double typed_s[3] = {1e30, 1e30, 1e30};  // best seconds per token, per type
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < 3; ++i) {
      const AttentionArgs a = typed_views[i].Args();
      typed_s[i] = std::min(typed_s[i], BestSeconds(1, [&] {
                                          for (int step = 0; step < decode_steps; ++step) Attend(a, out.data());
                                        }) / decode_steps);
    }

  log("  per-head decode ...                 \r");
  const std::vector<PerHeadRow> per_head =
      PerHeadDecode(rng, shape, decode_depth, Span{window, sinks}, head_shares, decode_steps);

  if (json) {
    nlohmann::json j;
    j["gemm_fp32_gflops"] = gemm;
    j["heads"] = heads;
    j["kv_heads"] = kv_heads;
    j["window"] = window;
    j["sinks"] = sinks;
    for (const PrefillRow& r : rows)
      j["prefill"].push_back({{"n", r.n},
                              {"head_dim", r.head_dim},
                              {"plan", r.plan},
                              {"seconds", r.seconds},
                              {"gflops", r.gflops},
                              {"gemm_gflops", r.gemm_gflops},
                              {"fraction_of_gemm", r.gflops / r.gemm_gflops}});
    j["peak_rss_mib_prefill"] = peak_full_mib;
    j["decode"] = {{"head_dim", decode_dim},
                   {"kv_type", "bf16"},
                   {"depth", decode_depth},
                   {"full_us", full_s * 1e6},
                   {"ring_slots", window + sinks},
                   {"ring_us", ring_s * 1e6},
                   {"full_over_ring", full_s / ring_s},
                   {"window_in_full_view_us", window_s * 1e6},
                   {"route_ratio", route_ratio},
                   {"route_ratio_drawn", drawn},
                   {"routed_us", routed_s * 1e6},
                   {"routed_expected_us", (drawn * full_s + (1 - drawn) * window_s) * 1e6},
                   {"full_over_routed", full_s / routed_s}};
    for (size_t i = 0; i < 3; ++i)
      j["decode_full_view_by_kv_type"].push_back(
          {{"kv_type", KvTypeName(kv_types[i])},
           {"us", typed_s[i] * 1e6},
           {"kv_bytes_per_key", 2 * KvBytes(kv_types[i], int64_t(kv_heads) * decode_dim)}});
    for (const PerHeadRow& r : per_head)
      j["decode_per_head"].push_back({{"full_kv_heads", r.full_heads},
                                      {"kv_heads", kv_heads},
                                      {"us", r.us},
                                      {"all_full_us", r.full_us},
                                      {"all_full_over_per_head", r.full_us / r.us},
                                      {"cache_mib", r.mib},
                                      {"all_full_cache_mib", r.full_mib}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf(
      "\npeak resident memory of the prefill runs: %.0f MiB "
      "(a dense %lldx%lld float mask alone would be %.0f MiB)\n",
      peak_full_mib, lengths.back(), lengths.back(), double(lengths.back()) * double(lengths.back()) * 4 / (1 << 20));
  std::printf("\ndecode, 1 query, d=%d, bf16 K/V:\n", decode_dim);
  std::printf("  full view of %lld keys:       %9.1f us/token\n", (long long)decode_depth, full_s * 1e6);
  std::printf("  ring of %d + %d sink slots:  %9.1f us/token\n", window, sinks, ring_s * 1e6);
  std::printf("  full / ring: %.1fx (key ratio %.1fx)\n", full_s / ring_s,
              double(decode_depth) / double(window + sinks));
  std::printf(
      "  routed, full with probability %.2f (drawn %.3f): %9.1f us/token; expected "
      "r*full + (1-r)*window = %.1f us (window over the same view: %.1f us); "
      "full / routed: %.1fx\n",
      route_ratio, drawn, routed_s * 1e6, (drawn * full_s + (1 - drawn) * window_s) * 1e6, window_s * 1e6,
      full_s / routed_s);
  std::printf("  full view by KV type (the same values, alternated):");
  for (size_t i = 0; i < 3; ++i) std::printf(" %s %.1f us", KvTypeName(kv_types[i]), typed_s[i] * 1e6);
  std::printf("; q8_0 %.2fx bf16's speed, %.2fx f32's\n", typed_s[1] / typed_s[2], typed_s[0] / typed_s[2]);
  std::printf(
      "  per-head caches (full KV heads keep %lld keys, the others %d + %d sinks), alternated "
      "with a cache whose every head keeps them:\n",
      (long long)decode_depth, window, sinks);
  for (const PerHeadRow& r : per_head) {
    const double f = double(r.full_heads) / kv_heads;
    const double keys = f * double(decode_depth) + (1 - f) * double(std::min<int64_t>(decode_depth, window + sinks));
    std::printf(
        "    %d of %d KV heads full: %9.1f us/token, all full %.1f us: %.2fx faster (key ratio %.2fx); "
        "cache %.1f MiB vs %.1f MiB (%.1f%%)\n",
        r.full_heads, kv_heads, r.us, r.full_us, r.full_us / r.us, double(decode_depth) / keys, r.mib, r.full_mib,
        100.0 * r.mib / r.full_mib);
  }
  return 0;
}

}  // namespace swan::cli
