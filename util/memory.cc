#include "util/memory.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

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

void ReturnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace swan
