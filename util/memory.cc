#include "util/memory.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace swan {
namespace {

// A "Name:   1234 kB" line of /proc/self/status, in bytes.
size_t StatusBytes(const std::string& name) {
  std::ifstream status("/proc/self/status");
  std::string key;
  size_t kib = 0;
  while (status >> key) {
    if (key == name + ":" && status >> kib) return kib * 1024;
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

size_t ResidentBytes() { return StatusBytes("VmRSS"); }
size_t PeakResidentBytes() { return StatusBytes("VmHWM"); }
size_t AnonymousResidentBytes() { return StatusBytes("RssAnon"); }

AllocatorCounts AllocatorBytes() {
  AllocatorCounts c;
#ifdef __GLIBC__
  const struct mallinfo2 m = mallinfo2();
  c.in_use = m.uordblks + m.hblkhd;
  c.free = m.fordblks;
#endif
  return c;
}

void EvictMappedPages(const void* data, size_t bytes) {
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  // When the kernel declines, the pages stay resident.
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void ReturnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace swan
