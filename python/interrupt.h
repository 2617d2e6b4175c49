// Ctrl-C while swan computes: Python only raises KeyboardInterrupt when it
// runs, so long calls release the GIL and ask between steps whether a
// signal arrived.
#pragma once

namespace swan::python {

// Takes the GIL and runs Python's signal handlers; throws
// pybind11::error_already_set (KeyboardInterrupt) when one raised. Call
// with the GIL released.
void CheckInterrupt();

}  // namespace swan::python
