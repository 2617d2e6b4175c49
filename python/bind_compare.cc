// swan.compare: `swan compare --json` on a loaded model, from the same
// flags, so the figures are the command's.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "cli/compare.h"
#include "python/bind.h"
#include "python/interrupt.h"

namespace py = pybind11;

namespace swan::python {
namespace {

// The report as JSON text. progress: called with each progress line (may
// be None); Ctrl-C is checked at each line.
std::string CompareJson(const std::shared_ptr<Model>& model, const std::vector<std::string>& flags,
                        const py::object& progress) {
  std::vector<std::string> words = {"-m", model->path, "--kv", KvTypeName(model->kv.type)};
  words.insert(words.end(), flags.begin(), flags.end());
  auto log = [&progress](const std::string& line) {
    CheckInterrupt();
    if (!progress.is_none()) {
      py::gil_scoped_acquire gil;
      progress(line);
    }
  };
  py::gil_scoped_release released;
  model->UseThreads();
  return cli::ComparePlans(words, *model->model, log).json.dump();
}

}  // namespace

void BindCompare(py::module_& m) {
  m.def("compare_json", &CompareJson, py::arg("model"), py::arg("flags"), py::arg("progress") = py::none());
}

}  // namespace swan::python
