// A small Jinja2 subset, enough for the chat templates that models ship in
// tokenizer_config.json (Llama 3, Qwen 2.5, Mistral, Gemma 3 and their
// kin), rendered as transformers' apply_chat_template renders them
// (trim_blocks and lstrip_blocks on).
//
// Supported: {{ }}, {% if/elif/else %}, {% for x in xs [if cond] %} with
// `loop` and {% else %}, {% set x = ... %} (also ns.attr, namespace()),
// {# #}, whitespace control (-, +); expressions with literals, lists,
// dicts, attribute / index / slice access, arithmetic, ~, comparisons,
// in, and/or/not, `a if c else b`, filters (trim, tojson, length, list,
// first, last, upper, lower, default, string, join, selectattr,
// rejectattr, map, items, replace, capitalize, int), tests (defined, none,
// string, number, iterable, mapping, sequence, boolean, equalto, odd,
// even), string and dict methods (strip, split, startswith, endswith,
// items, keys, values, get, ...), raise_exception() and range().
// Not supported: macros, includes, blocks/inheritance, filters blocks.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace swan::jinja {

using Json = nlohmann::ordered_json;

// A syntax error, an unsupported construct, or raise_exception() in the
// template; the message says which and where.
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Program;

class Template {
 public:
  // Parses `source`; throws TemplateError on syntax it does not support.
  explicit Template(std::string_view source);
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // Renders with the variables of `context` (a JSON object).
  std::string Render(const Json& context) const;

 private:
  std::unique_ptr<Program> program_;
};

}  // namespace swan::jinja
