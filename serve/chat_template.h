// A model's chat template: the Jinja template in tokenizer_config.json
// ("chat_template", a string or a list of named templates) or in a GGUF
// file's tokenizer.chat_template, a file given
// with --chat-template, or a plain built-in fallback for models that ship
// none ("role: content" lines, then "assistant:").
#pragma once

#include <string>

#include "serve/jinja.h"

namespace swan {

class Tokenizer;

struct ChatTemplateOptions {
  std::string model_dir;      // reads model_dir/tokenizer_config.json, or a GGUF file's metadata
  std::string template_file;  // overrides the model's template when set
};

class ChatTemplate {
 public:
  // Throws std::runtime_error when the file is unreadable and
  // jinja::TemplateError when the template does not parse.
  static ChatTemplate Load(const ChatTemplateOptions& options, const Tokenizer& tokenizer);
  // For tests: a template text with the given special tokens.
  ChatTemplate(const std::string& source, std::string bos_token, std::string eos_token, std::string origin);

  // The prompt text for `messages` (OpenAI shape: [{"role", "content"}]).
  // Throws jinja::TemplateError (e.g. the template's raise_exception()).
  std::string Apply(const jinja::Json& messages, bool add_generation_prompt = true,
                    const jinja::Json& tools = jinja::Json()) const;

  // "tokenizer_config.json", the file name, or "built-in fallback".
  const std::string& origin() const { return origin_; }

 private:
  jinja::Template template_;
  std::string bos_token_, eos_token_, origin_;
};

// The fallback used when a model has no template.
extern const char kFallbackChatTemplate[];

}  // namespace swan
