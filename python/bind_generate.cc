// model.generate: one token per step, sampled on the host from the last
// logits, its text through serve/'s TextStream (UTF-8 safe, stop strings
// held back until they cannot match).
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/sampler.h"
#include "python/bind.h"
#include "serve/text_stream.h"

namespace py = pybind11;

namespace swan::python {
namespace {

struct GenerateOptions {
  int64_t max_tokens = 16;
  SamplerOptions sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  std::optional<int64_t> context;
};

class Generator {
 public:
  Generator(std::shared_ptr<Model> model, std::vector<int32_t> prompt, const GenerateOptions& options, bool with_text)
      : model_(std::move(model)),
        prompt_(std::move(prompt)),
        options_(options),
        sampler_(options.sampling),
        logits_(size_t(model_->model->config().vocab_size)) {
    if (options.max_tokens < 0) throw std::invalid_argument("max_tokens must be >= 0");
    if (prompt_.empty()) throw std::invalid_argument("the prompt encodes to no tokens");
    if (with_text) stream_.emplace(model_->tokenizer(), options.stop);
    eos_ = model_->model->config().eos_token_ids;
    if (with_text)
      for (int32_t id : model_->tokenizer().eos_ids())
        if (std::find(eos_.begin(), eos_.end(), id) == eos_.end()) eos_.push_back(id);
    const int64_t trained = model_->model->config().max_position_embeddings;
    const int64_t context = options.context.value_or(trained > 0 ? trained : int64_t(1) << 20);
    if (int64_t(prompt_.size()) > context)
      throw std::invalid_argument("the prompt is " + std::to_string(prompt_.size()) +
                                  " tokens, longer than the context of " + std::to_string(context) + " positions");
    cache_ = std::make_shared<Cache>();
    cache_->owner = model_;
    cache_->context = context;
    KvCacheOptions kv = model_->kv;
    kv.max_context = context;
    cache_->session = model_->model->NewSession(model_->plan, kv);
    finished_ = options.max_tokens == 0;
    if (finished_) finish_reason_ = "length";
  }

  // (token, text, finished) for the next token, or None after the last.
  py::object Step() {
    if (finished_) return py::none();
    const int32_t vocab = int32_t(logits_.size());
    if (cache_->n_pos == 0) {
      ForwardInto(*cache_, prompt_, logits_.data(), false);
    } else {
      ForwardInto(*cache_, {last_}, logits_.data(), false);
    }
    last_ = sampler_.Sample(logits_.data(), vocab);
    ++generated_;
    std::string text;
    const bool eos = !options_.ignore_eos && std::find(eos_.begin(), eos_.end(), last_) != eos_.end();
    if (eos) {
      Finish("stop", &text);
    } else {
      if (stream_) text = stream_->Add(last_);
      if (stream_ && stream_->stopped()) {
        finished_ = true;
        finish_reason_ = "stop";
      } else if (generated_ == options_.max_tokens) {
        Finish("length", &text);
      } else if (cache_->n_pos >= cache_->context) {
        Finish("context", &text);
      }
    }
    return py::make_tuple(last_, text, finished_);
  }

  const std::string& finish_reason() const { return finish_reason_; }
  const std::vector<int32_t>& prompt() const { return prompt_; }

 private:
  void Finish(const char* reason, std::string* text) {
    finished_ = true;
    finish_reason_ = reason;
    if (stream_) *text += stream_->Finish();
  }

  std::shared_ptr<Model> model_;
  std::vector<int32_t> prompt_;
  GenerateOptions options_;
  Sampler sampler_;
  std::optional<TextStream> stream_;
  std::vector<int32_t> eos_;
  std::shared_ptr<Cache> cache_;
  std::vector<float> logits_;  // [vocab] of the newest position
  int32_t last_ = -1;
  int64_t generated_ = 0;
  bool finished_ = false;
  std::string finish_reason_;  // "stop" (EOS or a stop string), "length" or "context"
};

std::unique_ptr<Generator> MakeGenerator(const std::shared_ptr<Model>& model, const py::object& prompt,
                                         int64_t max_tokens, const py::object& temperature, const py::object& top_k,
                                         const py::object& top_p, const py::object& min_p, uint64_t seed,
                                         const std::vector<std::string>& stop, bool ignore_eos,
                                         std::optional<int64_t> context) {
  GenerateOptions options;
  options.max_tokens = max_tokens;
  // Unset sampling options: generation_config.json's when it samples, else greedy (as `swan generate`).
  const GenerationDefaults& gen = model->model->config().generation;
  options.sampling.temperature =
      temperature.is_none() ? (gen.do_sample ? gen.temperature : 0.0) : temperature.cast<double>();
  options.sampling.top_k = top_k.is_none() ? (gen.do_sample ? gen.top_k : 0) : top_k.cast<int32_t>();
  options.sampling.top_p = top_p.is_none() ? (gen.do_sample ? gen.top_p : 1.0) : top_p.cast<double>();
  options.sampling.min_p = min_p.is_none() ? (gen.do_sample ? gen.min_p : 0.0) : min_p.cast<double>();
  options.sampling.seed = seed;
  options.stop = stop;
  options.ignore_eos = ignore_eos;
  options.context = context;
  const bool text = py::isinstance<py::str>(prompt);
  std::vector<int32_t> ids;
  if (text) {
    ids = model->tokenizer().Encode(prompt.cast<std::string>());
  } else {
    ids = prompt.cast<std::vector<int32_t>>();
    CheckTokenIds(ids, model->model->config().vocab_size);
  }
  if (!text && !stop.empty()) throw std::invalid_argument("stop strings need a text prompt");
  return std::make_unique<Generator>(model, std::move(ids), options, text);
}

}  // namespace

void BindGenerate(py::module_& m) {
  py::class_<Generator>(m, "Generator")
      .def(py::init(&MakeGenerator), py::arg("model"), py::arg("prompt"), py::arg("max_tokens"), py::arg("temperature"),
           py::arg("top_k"), py::arg("top_p"), py::arg("min_p"), py::arg("seed"), py::arg("stop"),
           py::arg("ignore_eos"), py::arg("context"))
      .def("step", &Generator::Step)
      .def_property_readonly("finish_reason", &Generator::finish_reason)
      .def_property_readonly("prompt", &Generator::prompt);
}

}  // namespace swan::python
