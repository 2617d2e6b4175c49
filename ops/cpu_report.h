// What swan found on this machine and which paths it runs, for `swan
// --version` and bug reports: the CPU and its SIMD features, the Highway
// target the kernels dispatch to, oneDNN's ISA and whether it has bf16
// products (else swan's own run them), and the threads.
#pragma once

#include <string>

namespace swan {

// Several lines, each "name: value".
std::string CpuReport();

}  // namespace swan
