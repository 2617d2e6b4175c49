// Tool calls in a model's reply, in the shapes chat templates ask for:
//   * Hermes / Qwen2.5 / Qwen3: one or more
//       <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
//     blocks; the text around them is the reply's content;
//   * Llama 3.1+: the whole reply one JSON object {"name": ..., "parameters"
//     (or "arguments"): {...}}, after an optional <|python_tag|>.
// (llama.cpp's server reads the same shapes: common/chat.cpp.)
#pragma once

#include <string>
#include <vector>

namespace swan {

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text, as OpenAI sends it
};

struct ParsedReply {
  std::string content;          // the text that is not a call
  std::vector<ToolCall> calls;  // empty: the reply is all content
};

// Calls of functions named in `names` only; a block whose JSON does not
// parse, or names another function, stays content.
ParsedReply ParseToolCalls(const std::string& reply, const std::vector<std::string>& names);

// How much of a reply streamed so far may be sent as content: everything
// before where a call starts or may start (a "<tool_call>" or a prefix of
// it at the end; a reply whose first non-space character is "{" or that
// starts with <|python_tag|> is held whole).
size_t ContentPrefix(const std::string& reply);

// The start of a reply that calls a tool, for tool_choice "required"
// (`name` empty: the model names one of the tools) or one function named:
// the Hermes block's opening where the rendered prompt shows the model
// "<tool_call>", else Llama's JSON object. The model's reply continues
// from it; without a grammar, what it writes next is not forced, so a
// reply that does not finish a valid call is content after all.
std::string ForcedCallStart(const std::string& rendered_prompt, const std::string& name);

}  // namespace swan
