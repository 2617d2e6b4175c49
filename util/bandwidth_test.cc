#include "util/bandwidth.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace swan {
namespace {

// A pass reads each span from its first 64-byte line, in whole 512-byte
// pieces a thread, and leaves out a span under 4 KiB a thread.
TEST(ReadBandwidth, PassReadsWholePiecesOfEachSpan) {
  alignas(64) static uint8_t buffer[1 << 20];  // [1 MiB]
  EXPECT_EQ(ProbeBytesPerPass({ByteSpan{buffer, sizeof(buffer)}}, 2), int64_t(sizeof(buffer)));
  // 3 bytes in: 61 to the next line, then 1048515 bytes, 524257 a thread: 1023 pieces
  EXPECT_EQ(ProbeBytesPerPass({ByteSpan{buffer + 3, sizeof(buffer) - 3}}, 2), 2 * 1023 * 512);
  EXPECT_EQ(ProbeBytesPerPass({ByteSpan{buffer, 8191}}, 2), 0);  // 4095 bytes a thread
  EXPECT_EQ(ProbeBytesPerPass({ByteSpan{buffer, 8192}}, 2), 8192);
  EXPECT_EQ(ProbeBytesPerPass({ByteSpan{buffer, 8192}, ByteSpan{buffer + 8192, 65536}}, 1), 8192 + 65536);
  EXPECT_EQ(ProbeBytesPerPass({}, 2), 0);
}

TEST(ReadBandwidth, MeasuresSpansAndNothingWithoutThem) {
  std::vector<uint64_t> data(size_t(1) << 18, 7);  // [256 Ki] 2 MiB
  const double gbs = MeasureReadBandwidthGBs({ByteSpan{data.data(), data.size() * sizeof(uint64_t)}}, 1);
  EXPECT_GT(gbs, 0.1);    // a 2 MiB read takes under 20 ms
  EXPECT_LT(gbs, 1.0e5);  // and over 20 ns
  EXPECT_EQ(MeasureReadBandwidthGBs(std::vector<ByteSpan>{ByteSpan{data.data(), 100}}, 1), 0.0);
}

// The sampler's figure comes from its passes since it was last taken, one
// layout a pass in turn, on the threads each pass is given; none: 0.
TEST(ReadBandwidth, SamplerTakesItsPassesSinceLastTime) {
  std::vector<uint64_t> data(size_t(1) << 18, 7);  // [256 Ki] 2 MiB
  ReadBandwidthSampler sampler({ByteSpan{data.data(), data.size() * sizeof(uint64_t)}});
  EXPECT_EQ(sampler.TakeGBs(), 0.0);
  for (int i = 0; i < kReadLayouts + 3; ++i) sampler.Pass(1 + i % 2);
  const double gbs = sampler.TakeGBs();
  EXPECT_GT(gbs, 0.1);                // a 2 MiB read takes under 20 ms
  EXPECT_LT(gbs, 1.0e5);              // and over 20 ns
  EXPECT_EQ(sampler.TakeGBs(), 0.0);  // started again
  sampler.Pass(2);
  EXPECT_GT(sampler.TakeGBs(), 0.1);
  ReadBandwidthSampler too_small({ByteSpan{data.data(), 100}});
  too_small.Pass(2);
  EXPECT_EQ(too_small.TakeGBs(), 0.0);
}

}  // namespace
}  // namespace swan
