// model.tokenizer: encode, decode, special ids and the chat template.
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "python/bind.h"
#include "serve/chat_template.h"

namespace py = pybind11;

namespace swan::python {
namespace {

// The model's tokenizer, holding the model alive.
struct TokenizerRef {
  std::shared_ptr<Model> owner;
  const Tokenizer& get() const { return owner->tokenizer(); }
};

std::string ApplyChatTemplate(const TokenizerRef& t, const std::string& messages_json, bool add_generation_prompt) {
  const ChatTemplateOptions options{t.owner->path, ""};
  const ChatTemplate chat = ChatTemplate::Load(options, t.get());
  return chat.Apply(jinja::Json::parse(messages_json), add_generation_prompt);
}

}  // namespace

void BindText(py::module_& m) {
  py::class_<TokenizerRef>(m, "Tokenizer", "A model's tokenizer (tokenizer.json or GGUF metadata).")
      .def(py::init([](std::shared_ptr<Model> owner) {
             owner->tokenizer();  // raises now when the model has none
             return TokenizerRef{std::move(owner)};
           }),
           py::arg("model"))
      .def(
          "encode",
          [](const TokenizerRef& t, const std::string& text, bool add_special_tokens) {
            EncodeOptions options;
            options.add_special_tokens = add_special_tokens;
            return t.get().Encode(text, options);
          },
          py::arg("text"), py::arg("add_special_tokens") = true)
      .def(
          "decode",
          [](const TokenizerRef& t, const std::vector<int32_t>& ids, bool skip_special_tokens) {
            return t.get().Decode(ids, skip_special_tokens);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def("token_to_id",
           [](const TokenizerRef& t, const std::string& token) -> py::object {
             const int32_t id = t.get().TokenToId(token);
             return id < 0 ? py::object(py::none()) : py::object(py::int_(id));
           })
      .def("id_to_token", [](const TokenizerRef& t, int32_t id) { return t.get().IdToToken(id); })
      .def_property_readonly("vocab_size", [](const TokenizerRef& t) { return t.get().vocab_size(); })
      .def_property_readonly("bos_id", [](const TokenizerRef& t) { return t.get().bos_id(); })
      .def_property_readonly("eos_ids", [](const TokenizerRef& t) { return t.get().eos_ids(); })
      .def("_apply_chat_template", &ApplyChatTemplate, py::arg("messages_json"), py::arg("add_generation_prompt"));
}

}  // namespace swan::python
