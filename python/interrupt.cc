#include "python/interrupt.h"

#include <pybind11/pybind11.h>

namespace swan::python {

void CheckInterrupt() {
  pybind11::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
}

}  // namespace swan::python
