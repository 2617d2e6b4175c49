// The decode path of the fast kernel (a few rows per KV head: decode and
// short speculative chunks) against the reference on random inputs, on
// every SIMD target, and how FlashPlan cuts decode into tasks.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "attention/flash_decode_bf16.h"
#include "attention/flash_plan.h"
#include "util/threads.h"
#include "util/seeded_test.h"
#include "attention/test_problem.h"
#include "kv/kv_cache.h"
#include "util/simd_target.h"

namespace swan {
namespace {

using testing::BF16ProbabilitiesBound;
using testing::BF16Queries;
using testing::ForEachTarget;
using testing::MakePrefill;
using testing::MaxAbsDifference;
using testing::Problem;
using testing::RelativeError;

using DecodeTest = testing::SeededTest;

struct Result {
  std::vector<float> out, lse, max;  // [n_q, n_heads, head_dim], [n_q, n_heads], [n_q, n_heads]
};

Result Run(const AttentionArgs& a, bool reference) {
  Result r{std::vector<float>(size_t(a.n_q * a.shape.n_heads * a.shape.head_dim)),
           std::vector<float>(size_t(a.n_q * a.shape.n_heads)), std::vector<float>(size_t(a.n_q * a.shape.n_heads))};
  if (reference)
    AttendReference(a, r.out.data(), r.lse.data(), r.max.data());
  else
    Attend(a, r.out.data(), r.lse.data(), r.max.data());
  return r;
}

// A call of the fast kernel and the reference call it must match.
struct Case {
  AttentionArgs fast, reference;
  std::string name;
};

// The reference's result for a call whose queries are first rounded to
// bf16, as the bf16 dot-product kernel (flash_decode_bf16.h) multiplies them.
Result RunWithBF16Queries(AttentionArgs a) {
  const std::vector<float> q = BF16Queries(a);  // [n_q, heads, head_dim]
  a.q = q.data();
  return Run(a, true);
}

// Compares every case on every SIMD target (the reference runs once).
void ExpectMatchesOnEveryTarget(const std::vector<Case>& cases) {
  std::vector<Result> expected, expected_bf16_q;  // [cases]
  for (const Case& c : cases) {
    expected.push_back(Run(c.reference, true));
    expected_bf16_q.push_back(RunWithBF16Queries(c.reference));
  }
  ForEachTarget([&] {
    for (size_t i = 0; i < cases.size(); ++i) {
      const Result fast = Run(cases[i].fast, false);
      if (DecodeRunsBf16Dot(cases[i].fast)) {
        const Result& e = expected_bf16_q[i];
        EXPECT_LE(MaxAbsDifference(fast.out, e.out), 1.001 * BF16ProbabilitiesBound(cases[i].fast) + 1e-6)
            << cases[i].name << ", bf16 dots";
        EXPECT_LE(RelativeError(fast.lse, e.lse), 1e-5) << cases[i].name << ", bf16 dots";
        EXPECT_LE(RelativeError(fast.max, e.max), 1e-5) << cases[i].name << ", bf16 dots";
        continue;
      }
      EXPECT_LE(RelativeError(fast.out, expected[i].out), 1e-5) << cases[i].name;
      EXPECT_LE(RelativeError(fast.lse, expected[i].lse), 1e-5) << cases[i].name;
      EXPECT_LE(RelativeError(fast.max, expected[i].max), 1e-5) << cases[i].name;
    }
  });
}

std::string Name(const Problem& p) {
  return std::to_string(p.shape.n_heads) + "/" + std::to_string(p.shape.n_kv_heads) + " heads d " +
         std::to_string(p.shape.head_dim) + " " + KvTypeName(p.type) + " " + std::to_string(p.n_rows()) + " keys " +
         std::to_string(p.n_q()) + " queries " + p.span.ToString() + (p.sinks.empty() ? "" : " learned sinks");
}

// The cases of problems that outlive them.
std::vector<Case> CasesOf(const std::vector<Problem>& problems) {
  std::vector<Case> cases;
  for (const Problem& p : problems) cases.push_back(Case{p.Args(), p.Args(), Name(p)});
  return cases;
}

// Runs `body` with swan's thread limit at `threads` (the plan splits keys
// and KV heads by it), then restores the limit.
template <class F>
void WithThreads(int threads, const F& body) {
  const int before = ThreadLimit();
  SetThreadLimit(threads);
  body();
  SetThreadLimit(before);
}

TEST_F(DecodeTest, GroupsHeadDimsTypesAndSpans) {
  std::vector<Problem> problems;
  for (int32_t group : {1, 2, 4, 8})
    for (int32_t d : {64, 80, 128})
      for (KvType type : {KvType::kF32, KvType::kBF16})
        for (Span span : {Span{}, Span{100, 0}, Span{100, 4}, Span{100, 4, true, 25}, Span{200, 0, true, 50}}) {
          const bool learned_sinks = std::bernoulli_distribution(0.5)(rng);
          // 300 keys: a last block of 44 keys; the window ends inside blocks
          // (the block window of 200 starts at 250, after whole key blocks
          // its sliding twin would see).
          problems.push_back(MakePrefill(rng, AttentionShape{2 * group, 2, d}, span, 300, 1, learned_sinks, type));
        }
  ExpectMatchesOnEveryTarget(CasesOf(problems));
}

TEST_F(DecodeTest, EveryHeadDim) {
  std::vector<Problem> problems;
  for (int32_t d : {1, 2, 3, 8, 17, 31, 33, 48, 96, 112, 256})
    for (KvType type : {KvType::kF32, KvType::kBF16}) {
      problems.push_back(MakePrefill(rng, AttentionShape{4, 1, d}, Span{70, 2}, 200, 1, false, type));
    }
  ExpectMatchesOnEveryTarget(CasesOf(problems));
}

TEST_F(DecodeTest, OddGroupsAndSpeculativeQueries) {
  std::vector<Problem> problems;
  // Rows per KV head = queries x G, up to kDecodeMaxRows; more rows take
  // the tiled path.
  for (auto [group, n_q] : std::vector<std::pair<int32_t, int64_t>>{
           {3, 1}, {5, 1}, {7, 1}, {16, 1}, {2, 3}, {4, 2}, {4, 3}, {4, 4}, {1, 9}, {6, 2}, {32, 1}})
    for (KvType type : {KvType::kF32, KvType::kBF16}) {
      problems.push_back(MakePrefill(rng, AttentionShape{group, 1, 64}, Span{90, 3}, 400, n_q, true, type));
    }
  ExpectMatchesOnEveryTarget(CasesOf(problems));
}

TEST_F(DecodeTest, LongViewsSplitAcrossThreads) {
  std::vector<Problem> problems;
  for (KvType type : {KvType::kF32, KvType::kBF16})
    // Llama 3.2 1B's shape (G = 4, d = 64) and 8/2 heads of d = 128.
    for (AttentionShape shape : {AttentionShape{32, 8, 64}, AttentionShape{8, 2, 128}}) {
      problems.push_back(MakePrefill(rng, shape, Span{}, 2500, 1, false, type));
      // A short window over the same view: few blocks, so the plan splits
      // the KV heads too.
      problems.push_back(problems.back());
      problems.back().span = Span{200, 4};
    }
  for (int threads : {1, 2, 3, 8}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    WithThreads(threads, [&] { ExpectMatchesOnEveryTarget(CasesOf(problems)); });
  }
}

TEST_F(DecodeTest, RingWithEmptySlotsAndRowStride) {
  std::vector<Problem> problems;
  for (KvType type : {KvType::kF32, KvType::kBF16}) {
    const int32_t window = 150, sinks = 4, last = 5000;
    Problem p = MakePrefill(rng, AttentionShape{8, 2, 80}, Span{window, sinks}, window + sinks + 6, 1, true, type);
    p.q_pos[0] = last;
    std::vector<int32_t> pos;  // [n_rows] sinks, the window, then never-written slots
    for (int32_t s = 0; s < sinks; ++s) pos.push_back(s);
    for (int32_t k = last - window + 1; k <= last; ++k) pos.push_back(k);
    while (pos.size() < p.k_pos.size()) pos.push_back(-1);
    std::shuffle(pos.begin(), pos.end(), rng);
    p.k_pos = pos;
    problems.push_back(p);
  }
  // The same views with 24 unused elements after each row.
  std::vector<Problem> strided = problems;
  std::vector<Case> cases = CasesOf(problems);
  for (size_t i = 0; i < problems.size(); ++i) {
    const Problem& p = problems[i];
    Problem& q = strided[i];
    const int64_t row = int64_t(p.shape.n_kv_heads) * p.shape.head_dim, stride = row + 24;
    q.k.assign(size_t(p.n_rows() * stride), 0.0f);  // [n_rows, stride]
    q.v = q.k;
    q.k16.assign(q.k.size(), 0);
    q.v16 = q.k16;
    for (int64_t j = 0; j < p.n_rows(); ++j)
      for (int64_t c = 0; c < row; ++c) {
        const size_t src = size_t(j * row + c), dst = size_t(j * stride + c);
        q.k[dst] = p.k[src];
        q.v[dst] = p.v[src];
        if (p.type == KvType::kBF16) {
          q.k16[dst] = p.k16[src];
          q.v16[dst] = p.v16[src];
        }
      }
    AttentionArgs a = q.Args();
    a.kv.row_stride = stride;
    cases.push_back(Case{a, p.Args(), Name(p) + ", row stride " + std::to_string(stride)});
  }
  ExpectMatchesOnEveryTarget(cases);
}

// The bf16 dot-product kernel takes decode calls over bf16 views whose
// head_dim is a multiple of 32 where the CPU has AVX-512 BF16 and the
// dispatch is AVX-512, and nothing else (the comparisons above hold it to
// its bound wherever it runs).
TEST_F(DecodeTest, BF16DotsRunOnlyWhereTheyCan) {
  const Problem bf16 = MakePrefill(rng, AttentionShape{8, 2, 64}, Span{}, 300, 1, false, KvType::kBF16);
  const Problem f32 = MakePrefill(rng, AttentionShape{8, 2, 64}, Span{}, 300, 1, false, KvType::kF32);
  const Problem d80 = MakePrefill(rng, AttentionShape{8, 2, 80}, Span{}, 300, 1, false, KvType::kBF16);
  const Problem rows32 = MakePrefill(rng, AttentionShape{32, 1, 64}, Span{}, 300, 1, false, KvType::kBF16);
  __builtin_cpu_init();
  const bool cpu =
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  ForEachTarget([&] {
    const int64_t target = DispatchedSimdTargetBit();
    EXPECT_EQ(DecodeRunsBf16Dot(bf16.Args()), cpu && (target == HWY_AVX3 || target == HWY_AVX3_DL));
    EXPECT_FALSE(DecodeRunsBf16Dot(f32.Args()));
    EXPECT_FALSE(DecodeRunsBf16Dot(d80.Args()));
    EXPECT_FALSE(DecodeRunsBf16Dot(rows32.Args()));  // the tiled kernel's
  });
}

TEST_F(DecodeTest, Q8_0KeysAndValues) {
  std::vector<Problem> problems;
  for (int32_t group : {1, 4, 8})
    for (int32_t d : {32, 64, 128})
      for (Span span : {Span{}, Span{100, 0}, Span{100, 4}}) {
        const bool learned_sinks = std::bernoulli_distribution(0.5)(rng);
        problems.push_back(
            MakePrefill(rng, AttentionShape{2 * group, 2, d}, span, 300, 1, learned_sinks, KvType::kQ8_0));
      }
  // Speculative queries, and a long view that the plan splits across threads.
  problems.push_back(MakePrefill(rng, AttentionShape{8, 2, 64}, Span{90, 3}, 400, 3, true, KvType::kQ8_0));
  problems.push_back(MakePrefill(rng, AttentionShape{32, 8, 64}, Span{}, 2500, 1, false, KvType::kQ8_0));
  for (int threads : {1, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    WithThreads(threads, [&] { ExpectMatchesOnEveryTarget(CasesOf(problems)); });
  }
}

TEST_F(DecodeTest, Q8_0NeedsWholeBlocksPerHead) {
  Problem p = MakePrefill(rng, AttentionShape{4, 2, 64}, Span{}, 40, 1);
  AttentionArgs a = p.Args();
  a.shape.head_dim = 48;  // a head would start inside a block
  a.kv.type = KvType::kQ8_0;
  std::vector<float> out(size_t(4 * 64));
  try {
    Attend(a, out.data());
    ADD_FAILURE() << "head_dim 48 with q8_0 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("multiples of 32"), std::string::npos) << e.what();
  }
}

TEST_F(DecodeTest, NothingVisibleGivesZerosOrTheSink) {
  std::vector<Problem> problems;
  for (bool learned_sinks : {false, true}) {
    problems.push_back(MakePrefill(rng, AttentionShape{4, 2, 64}, Span{}, 130, 1, learned_sinks, KvType::kBF16));
    std::fill(problems.back().k_pos.begin(), problems.back().k_pos.end(), -1);
  }
  ExpectMatchesOnEveryTarget(CasesOf(problems));
}

// One query at position n - 1 over a bf16 view of n keys at positions
// 0 .. n-1 (the values are never read: only the plan is made).
struct DecodeProblem {
  DecodeProblem(const AttentionShape& shape, int64_t n, Span span)
      : q(size_t(shape.n_heads * shape.head_dim)), out(q.size()), pos(static_cast<size_t>(n)), q_pos(int32_t(n - 1)) {
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(i);
    args.shape = shape;
    args.q = q.data();
    args.q_pos = &q_pos;
    args.n_q = 1;
    args.kv = KvView{q.data(), q.data(), pos.data(), n, 0, KvType::kBF16};
    args.span = span;
  }
  FlashPlan Plan() { return FlashPlan(args, DualOutput{out.data()}, false); }

  std::vector<float> q, out;  // [n_heads, head_dim]
  std::vector<int32_t> pos;   // [n]
  int32_t q_pos;
  AttentionArgs args;
};

// The split follows the thread limit, not the threads a call runs on: a
// server runs one sequence on 1 or 2 threads as its load changes, and the
// split decides the rounding (batch invariance).
TEST(DecodePlan, TheSplitDoesNotDependOnTheThreadsOfTheCall) {
  DecodeProblem problem(AttentionShape{32, 8, 64}, 5000, Span{});
  WithThreads(4, [&] {
    const int before = omp_get_max_threads();
    std::vector<int64_t> tasks;
    for (int call_threads : {1, 2, 4}) {
      omp_set_num_threads(call_threads);
      tasks.push_back(problem.Plan().n_tasks());
    }
    omp_set_num_threads(before);
    EXPECT_GT(tasks[0], 1);
    EXPECT_EQ(tasks[0], tasks[1]);
    EXPECT_EQ(tasks[0], tasks[2]);
  });
}

// Every decode task reads one contiguous run of key blocks over a range of
// KV heads; together the tasks cover each (visible block, KV head) once.
TEST(DecodePlan, TasksAreContiguousRunsCoveringEveryBlockOnce) {
  const AttentionShape shape{32, 8, 64};
  for (int threads : {1, 2, 4})
    WithThreads(threads, [&] {
      for (int64_t n : {100, 700, 5000, 40000})
        for (Span span : {Span{}, Span{300, 4}}) {
          DecodeProblem problem(shape, n, span);
          const FlashPlan plan = problem.Plan();
          ASSERT_TRUE(plan.decode);
          const std::string what =
              std::to_string(n) + " keys " + span.ToString() + ", threads " + std::to_string(threads);
          if (threads == 1) {
            EXPECT_EQ(plan.n_tasks(), 1) << what;
          }
          std::multiset<std::pair<int64_t, int32_t>> seen;  // (block, kv head)
          for (int64_t task = 0; task < plan.n_tasks(); ++task) {
            const FlashTask t = plan.Task(task);
            const std::vector<BlockVisit> visits = plan.VisitsFor(t);
            for (size_t i = 1; i < visits.size() && span.sinks == 0; ++i) {
              EXPECT_EQ(visits[i].block, visits[i - 1].block + 1) << what;
            }
            for (const BlockVisit& v : visits)
              for (int32_t h = t.kv_head; h < t.kv_head_end; ++h) seen.insert({v.block, h});
          }
          std::set<int64_t> blocks;  // visible blocks
          for (int64_t b = 0; b < (n + kBlockKeys - 1) / kBlockKeys; ++b) {
            const int64_t first = b * kBlockKeys, last = std::min(n, first + kBlockKeys) - 1;
            for (int64_t k = first; k <= last; ++k)
              if (Sees(span, problem.q_pos, k)) blocks.insert(b);
          }
          EXPECT_EQ(seen.size(), blocks.size() * size_t(shape.n_kv_heads)) << what;
          for (int64_t b : blocks)
            for (int32_t h = 0; h < shape.n_kv_heads; ++h) {
              EXPECT_EQ(seen.count({b, h}), 1u) << what << " block " << b << " head " << h;
            }
        }
    });
}

}  // namespace
}  // namespace swan
