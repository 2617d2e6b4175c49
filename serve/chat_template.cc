#include "serve/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "model/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace swan {

const char kFallbackChatTemplate[] =
    "{{ bos_token }}{% for message in messages %}{{ message['role'] + ': ' + message['content'] | trim }}\n"
    "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}";

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read chat template file '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A special token's text in tokenizer_config.json: a string or {"content": ...}.
std::string TokenText(const jinja::Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source, std::string bos_token, std::string eos_token, std::string origin)
    : template_(source),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)),
      origin_(std::move(origin)) {}

ChatTemplate ChatTemplate::Load(const ChatTemplateOptions& options, const Tokenizer& tokenizer) {
  std::string bos = tokenizer.bos_id() >= 0 ? tokenizer.IdToToken(tokenizer.bos_id()) : "";
  std::string eos = tokenizer.eos_id() >= 0 ? tokenizer.IdToToken(tokenizer.eos_id()) : "";
  std::string source, origin;
  const std::filesystem::path config_path = std::filesystem::path(options.model_dir) / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    const jinja::Json config = jinja::Json::parse(ReadFile(config_path.string()), nullptr, false);
    if (config.is_object()) {
      if (config.contains("bos_token") && !TokenText(config["bos_token"]).empty()) bos = TokenText(config["bos_token"]);
      if (config.contains("eos_token") && !TokenText(config["eos_token"]).empty()) eos = TokenText(config["eos_token"]);
      const jinja::Json t = config.value("chat_template", jinja::Json());
      if (t.is_string()) {
        source = t.get<std::string>();
      } else if (t.is_array()) {  // [{"name": "default", "template": ...}, ...]
        for (const jinja::Json& named : t)
          if (named.value("name", "") == "default") source = named.value("template", "");
      }
      if (!source.empty()) origin = config_path.string();
    }
  }
  if (IsGgufFile(options.model_dir)) {
    source = ReadGgufTokenizer(GgufFile(options.model_dir)).chat_template;
    if (!source.empty()) origin = options.model_dir + " (tokenizer.chat_template)";
  }
  if (!options.template_file.empty()) {
    source = ReadFile(options.template_file);
    origin = options.template_file;
  }
  if (source.empty()) {
    source = kFallbackChatTemplate;
    origin = "built-in fallback";
  }
  return ChatTemplate(source, bos, eos, origin);
}

std::string ChatTemplate::Apply(const jinja::Json& messages, bool add_generation_prompt,
                                const jinja::Json& tools) const {
  jinja::Json context = {{"messages", messages},
                         {"add_generation_prompt", add_generation_prompt},
                         {"bos_token", bos_token_},
                         {"eos_token", eos_token_}};
  if (!tools.is_null()) context["tools"] = tools;
  return template_.Render(context);
}

}  // namespace swan
