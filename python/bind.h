// The Python module's view of a loaded model (python/module.cc registers
// the classes; each bind_*.cc adds one part of the API).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace swan::python {

// A model as `swan.load` returns it: the weights, the plan it runs under,
// the KV cache settings of its caches, and its tokenizer (read when first
// asked for: recall models have none).
struct Model {
  std::string path;
  std::unique_ptr<LanguageModel> model;
  AttentionPlan plan;
  KvCacheOptions kv;  // type and prefill chunk; max_context per cache
  int threads = 0;    // 0 = swan's default (ThreadLimit())

  // Throws std::runtime_error with the loader's message when the model has
  // no tokenizer.
  const Tokenizer& tokenizer();
  // Sets the thread count for the calling thread's next computation.
  void UseThreads() const;

 private:
  std::optional<Tokenizer> tokenizer_;
};

// One sequence's state: a session (plan + KV cache) and how many positions
// it holds.
struct Cache {
  std::shared_ptr<Model> owner;
  std::unique_ptr<Session> session;
  int64_t context = 0;  // the most positions it may hold
  int64_t n_pos = 0;    // positions [0, n_pos) are in it
};

// Throws std::invalid_argument naming the first id outside [0, vocab).
void CheckTokenIds(const std::vector<int32_t>& ids, int64_t vocab);

// Runs ids at positions cache.n_pos... through the model with the GIL
// released, one prefill chunk at a time, checking for Ctrl-C between
// chunks. logits: [n, vocab] when all_logits, else [1, vocab]. Throws
// std::invalid_argument for ids outside the vocabulary or past the
// cache's context.
void ForwardInto(Cache& cache, const std::vector<int32_t>& ids, float* logits, bool all_logits);

void BindModel(pybind11::module_& m);
void BindGenerate(pybind11::module_& m);
void BindText(pybind11::module_& m);
void BindCompare(pybind11::module_& m);

}  // namespace swan::python
