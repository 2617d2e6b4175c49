#include "kv/reserved_buffer.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

namespace swan {
namespace {

// How many of the first `pages` pages of b are backed by memory (mincore).
size_t ResidentPages(ReservedBuffer& b, size_t pages) {
  std::vector<unsigned char> in(pages);  // [pages] bit 0: resident
  EXPECT_EQ(::mincore(b.data(), pages * size_t(::sysconf(_SC_PAGESIZE)), in.data()), 0);
  size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

// Whether this kernel backs pages on request (Linux 5.14 and later).
bool KernelPopulates() {
#ifdef MADV_POPULATE_WRITE
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  void* p = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const bool ok = p != MAP_FAILED && ::madvise(p, page, MADV_POPULATE_WRITE) == 0;
  if (p != MAP_FAILED) ::munmap(p, page);
  return ok;
#else
  return false;
#endif
}

TEST(ReservedBuffer, CommitBacksThePagesAskedForAndReleaseGivesThemBack) {
  if (!KernelPopulates()) GTEST_SKIP() << "no MADV_POPULATE_WRITE here: pages fault in as written";
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  ReservedBuffer b(16 * page);
  EXPECT_EQ(ResidentPages(b, 16), 0u);
  b.Commit(3 * page + 1);  // part of a fourth page: four pages
  EXPECT_EQ(ResidentPages(b, 16), 4u);
  for (size_t i = 0; i < 4 * page; ++i) ASSERT_EQ(b.data()[i], 0) << i;
  b.data()[5] = 7;
  b.Commit(2 * page);  // already backed: nothing changes
  EXPECT_EQ(b.data()[5], 7);
  EXPECT_EQ(ResidentPages(b, 16), 4u);
  b.Commit(100 * page);  // past the reservation: up to its end
  EXPECT_EQ(ResidentPages(b, 16), 16u);
  b.Release(page);
  EXPECT_EQ(ResidentPages(b, 16), 1u);
  EXPECT_EQ(b.data()[5], 7);
  b.Commit(2 * page);  // the released pages are backed again, as zeros
  EXPECT_EQ(ResidentPages(b, 16), 2u);
  for (size_t i = page; i < 2 * page; ++i) ASSERT_EQ(b.data()[i], 0) << i;
}

TEST(ReservedBuffer, MovedBufferKeepsWhatItCommitted) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  ReservedBuffer a(4 * page);
  a.Commit(page);
  a.data()[0] = 3;
  ReservedBuffer b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data()[0], 3);
  b.Commit(4 * page);
  for (size_t i = 1; i < 4 * page; ++i) ASSERT_EQ(b.data()[i], 0) << i;
  ReservedBuffer empty;
  empty.Commit(page);  // no reservation: nothing to back
  EXPECT_EQ(empty.data(), nullptr);
}

}  // namespace
}  // namespace swan
