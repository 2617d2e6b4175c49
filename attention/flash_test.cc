// The fast kernel against the reference on random inputs (fresh seeds).
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "util/seeded_test.h"
#include "attention/test_problem.h"

namespace swan {
namespace {

using testing::ForEachTarget;
using testing::MakePrefill;
using testing::Problem;
using testing::RelativeError;

using AttendTest = testing::SeededTest;

struct Result {
  std::vector<float> out, lse, max;  // max: each row's largest visible logit
};

Result RunFast(const Problem& p) {
  const AttentionArgs a = p.Args();
  Result r{std::vector<float>(p.q.size()), std::vector<float>(size_t(p.n_q() * p.shape.n_heads)),
           std::vector<float>(size_t(p.n_q() * p.shape.n_heads))};
  Attend(a, r.out.data(), r.lse.data(), r.max.data());
  return r;
}

Result RunReference(const Problem& p) {
  const AttentionArgs a = p.Args();
  Result r{std::vector<float>(p.q.size()), std::vector<float>(size_t(p.n_q() * p.shape.n_heads)),
           std::vector<float>(size_t(p.n_q() * p.shape.n_heads))};
  AttendReference(a, r.out.data(), r.lse.data(), r.max.data());
  return r;
}

void ExpectMatches(const Problem& p, const std::string& what, double tol = 1e-5) {
  const Result fast = RunFast(p), ref = RunReference(p);
  EXPECT_LE(RelativeError(fast.out, ref.out), tol) << what;
  EXPECT_LE(RelativeError(fast.lse, ref.lse), tol) << what;
  EXPECT_LE(RelativeError(fast.max, ref.max), tol) << what;
}

TEST_F(AttendTest, WindowsAroundTheBlockSize) {
  ForEachTarget([&] {
    const AttentionShape shape{4, 2, 32};
    for (int64_t n : {63, 64, 65, 200}) {
      for (int32_t w : {1, 2, 63, 64, 65, int32_t(n - 1), int32_t(n), 0}) {
        const Problem p = MakePrefill(rng, shape, Span{w, 0}, n, n);
        ExpectMatches(p, "n " + std::to_string(n) + " window " + std::to_string(w));
      }
    }
  });
}

TEST_F(AttendTest, SinksIncludingMoreThanTheWindow) {
  ForEachTarget([&] {
    const AttentionShape shape{2, 1, 64};
    for (int32_t sinks : {1, 4, 100})
      for (int32_t w : {1, 16, 70}) {
        const Problem p = MakePrefill(rng, shape, Span{w, sinks}, 257, 257);
        ExpectMatches(p, "window " + std::to_string(w) + " sinks " + std::to_string(sinks));
      }
  });
}

// Block windows (chunked, staggered): blocks smaller than, equal to and
// larger than the kernel's key block, at offsets that split it.
TEST_F(AttendTest, BlockWindowsAtEveryOffset) {
  ForEachTarget([&] {
    const AttentionShape shape{4, 2, 32};
    for (int32_t w : {1, 16, 64, 100})
      for (int32_t offset : {0, w / 4, w / 2, w - 1})
        for (int32_t sinks : {0, 3}) {
          const Problem p = MakePrefill(rng, shape, Span{w, sinks, true, offset}, 230, 230);
          ExpectMatches(p, Span{w, sinks, true, offset}.ToString());
        }
    const Problem tail = MakePrefill(rng, shape, Span{64, 0, true, 16}, 700, 37);
    ExpectMatches(tail, "37 queries after 663 keys, blocks of 64 from 16");
    // A block that starts well after key blocks its sliding twin would see whole.
    const Problem late = MakePrefill(rng, shape, Span{300, 2, true, 100}, 700, 3);
    ExpectMatches(late, "3 queries after 697 keys, blocks of 300 from 100");
  });
}

TEST_F(AttendTest, GqaRatios) {
  ForEachTarget([&] {
    for (int32_t ratio : {1, 2, 4, 8}) {
      const AttentionShape shape{2 * ratio, 2, 64};
      const Problem p = MakePrefill(rng, shape, Span{50, 2}, 150, 150);
      ExpectMatches(p, "gqa " + std::to_string(ratio));
    }
  });
}

TEST_F(AttendTest, EveryHeadDim) {
  ForEachTarget([&] {
    for (int32_t d : {1, 3, 8, 17, 32, 64, 80, 96, 128, 256}) {
      const Problem p = MakePrefill(rng, AttentionShape{4, 2, d}, Span{40, 1}, 130, 130);
      ExpectMatches(p, "head_dim " + std::to_string(d));
      const Problem full = MakePrefill(rng, AttentionShape{4, 2, d}, Span{}, 130, 130);
      ExpectMatches(full, "full, head_dim " + std::to_string(d));
    }
  });
}

TEST_F(AttendTest, LearnedSinks) {
  ForEachTarget([&] {
    for (Span span : {Span{}, Span{20, 0}, Span{20, 4}}) {
      const Problem p = MakePrefill(rng, AttentionShape{8, 2, 64}, span, 190, 190, true);
      ExpectMatches(p, "learned sinks, " + span.ToString());
    }
  });
}

TEST_F(AttendTest, BF16KeysAndValues) {
  ForEachTarget([&] {
    for (int32_t d : {8, 64, 128}) {
      const Problem p = MakePrefill(rng, AttentionShape{8, 2, d}, Span{70, 4}, 300, 300, false, KvType::kBF16);
      ExpectMatches(p, "bf16 head_dim " + std::to_string(d));
    }
  });
}

TEST_F(AttendTest, Q8_0KeysAndValues) {
  ForEachTarget([&] {
    for (int32_t d : {32, 64, 128})
      for (Span span : {Span{}, Span{70, 4}}) {
        const Problem p = MakePrefill(rng, AttentionShape{8, 2, d}, span, 300, 300, d == 64, KvType::kQ8_0);
        ExpectMatches(p, "q8_0 head_dim " + std::to_string(d) + " " + span.ToString());
      }
  });
}

TEST_F(AttendTest, ChunkOfQueriesAfterAPrefix) {
  ForEachTarget([&] {
    const Problem p = MakePrefill(rng, AttentionShape{4, 4, 64}, Span{100, 0}, 700, 37);
    ExpectMatches(p, "37 queries after 663 keys");
  });
}

TEST_F(AttendTest, DecodeOverShuffledRingWithEmptySlots) {
  ForEachTarget([&] {
    const int32_t window = 96, sinks = 4;
    for (int32_t n_q : {1, 3}) {
      // A ring of window + n_q slots plus 4 sink slots, filled with the last
      // positions in rotated order; some slots were never written.
      Problem p = MakePrefill(rng, AttentionShape{8, 2, 64}, Span{window, sinks}, 112, n_q);
      const int32_t last = 1000;
      for (int32_t i = 0; i < n_q; ++i) p.q_pos[size_t(i)] = last - n_q + 1 + i;
      std::vector<int32_t> pos;
      for (int32_t s = 0; s < sinks; ++s) pos.push_back(s);
      for (int32_t k = last - 105; k <= last; ++k) pos.push_back(k);
      std::shuffle(pos.begin(), pos.end(), rng);
      pos.resize(p.k_pos.size());
      for (size_t i = 0; i < pos.size(); i += 9) pos[i] = -1;  // unfilled slots
      p.k_pos = pos;
      ExpectMatches(p, "ring decode n_q " + std::to_string(n_q));
    }
  });
}

TEST_F(AttendTest, ChunkOverARingThatHoldsItsOwnKeys) {
  ForEachTarget([&] {
    const int32_t window = 64, chunk = 16;
    // Slots hold positions [200 - window - chunk + 1, 200], written round-robin.
    Problem p = MakePrefill(rng, AttentionShape{4, 2, 32}, Span{window, 0}, window + chunk, chunk);
    const int32_t last = 200;
    for (int32_t i = 0; i < chunk; ++i) p.q_pos[size_t(i)] = last - chunk + 1 + i;
    for (int32_t slot = 0; slot < window + chunk; ++slot) {
      const int32_t pos = last - (window + chunk - 1) + slot;
      p.k_pos[size_t(pos % (window + chunk))] = pos;
    }
    ExpectMatches(p, "chunk over ring");
  });
}

TEST_F(AttendTest, DecodeOverLongFullViewSplitsKeys) {
  ForEachTarget([&] {
    // One query over 3000 keys: the kernel splits key blocks across threads.
    const Problem p = MakePrefill(rng, AttentionShape{8, 2, 128}, Span{}, 3000, 1, true);
    ExpectMatches(p, "decode 3000 keys");
  });
}

TEST_F(AttendTest, DualWindowAndFullFromOnePass) {
  ForEachTarget([&] {
    for (Span span : {Span{1, 0}, Span{64, 0}, Span{65, 3}, Span{500, 0}}) {
      for (bool sinks : {false, true}) {
        Problem p = MakePrefill(rng, AttentionShape{4, 2, 64}, span, 260, 260, sinks);
        const AttentionArgs a = p.Args();
        const size_t n = p.q.size(), nl = size_t(p.n_q() * 4);
        std::vector<float> ow(n), of(n), lw(nl), lf(nl), rw(n), rf(n), rlw(nl), rlf(nl);
        AttendDual(a, DualOutput{ow.data(), lw.data(), of.data(), lf.data()});
        AttendReference(a, rw.data(), rlw.data());
        AttentionArgs full = a;
        full.span = Span{};
        AttendReference(full, rf.data(), rlf.data());
        const std::string what = span.ToString() + (sinks ? ", learned sinks" : "");
        EXPECT_LE(RelativeError(ow, rw), 1e-5) << what;
        EXPECT_LE(RelativeError(lw, rlw), 1e-5) << what;
        EXPECT_LE(RelativeError(of, rf), 1e-5) << what;
        EXPECT_LE(RelativeError(lf, rlf), 1e-5) << what;
      }
    }
  });
}

TEST_F(AttendTest, RejectsBadInput) {
  Problem p = MakePrefill(rng, AttentionShape{4, 2, 16}, Span{}, 10, 10);
  std::vector<float> out(p.q.size());
  AttentionArgs a = p.Args();
  a.shape.n_kv_heads = 3;
  EXPECT_THROW(Attend(a, out.data()), std::invalid_argument);
  a = p.Args();
  a.span.window = -1;
  EXPECT_THROW(Attend(a, out.data()), std::invalid_argument);
  a = p.Args();
  a.kv.row_stride = 8;  // shorter than 2 heads x 16
  EXPECT_THROW(Attend(a, out.data()), std::invalid_argument);
  a = p.Args();
  a.kv.k = nullptr;
  EXPECT_THROW(Attend(a, out.data()), std::invalid_argument);
  a = p.Args();
  a.span = Span{0, 4};
  EXPECT_THROW(Attend(a, out.data()), std::invalid_argument);
}

}  // namespace
}  // namespace swan
