// This process's resident memory, from /proc/self (Linux); 0 elsewhere.
#pragma once

#include <cstddef>

namespace swan {

size_t ResidentBytes();      // now (VmRSS: anonymous and file-backed pages)
size_t PeakResidentBytes();  // the most so far (VmHWM)

}  // namespace swan
