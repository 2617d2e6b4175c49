// This process's resident memory, from /proc/self (Linux); 0 elsewhere.
#pragma once

#include <cstddef>

namespace swan {

size_t ResidentBytes();      // now (VmRSS: anonymous and file-backed pages)
size_t PeakResidentBytes();  // the most so far (VmHWM)
// Anonymous pages only (RssAnon): what the process allocated, without the
// code and mapped files it has touched (library code pages count in VmRSS
// and grow as new code paths run, which is not memory held).
size_t AnonymousResidentBytes();
// Lets the whole pages inside [data, data + bytes) of a file mapping leave
// the resident set (madvise DONTNEED; read again from the file if touched):
// for a tensor copied into another form as it loaded. Advice only.
void EvictMappedPages(const void* data, size_t bytes);
// Hands the allocator's free pages back to the system (glibc keeps freed
// memory in its heaps, and a long run of allocations of many sizes, as a
// prompt cache's evictions make, leaves much of it free); a no-op elsewhere.
void ReturnFreedMemory();
// The allocator's own count (glibc mallinfo2): bytes handed out and not
// freed, and bytes it holds free; zeros elsewhere.
struct AllocatorCounts {
  size_t in_use = 0, free = 0;
};
AllocatorCounts AllocatorBytes();

}  // namespace swan
