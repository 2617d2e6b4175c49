// `_swan`: the compiled part of the Python package `swan` (python/swan/).
#include <pybind11/pybind11.h>

#include "python/bind.h"
#include "util/simd_target.h"

PYBIND11_MODULE(_swan, m) {
  m.doc() = "swan's engine: models under attention plans (use the package `swan`)";
  // SWAN_SIMD_TARGET caps the kernels here as it does in the swan program.
  swan::ApplySimdTargetCap();
  swan::python::BindText(m);
  swan::python::BindModel(m);
  swan::python::BindGenerate(m);
  swan::python::BindCompare(m);
}
