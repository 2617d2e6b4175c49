// libFuzzer target: the chat-template (Jinja) parser and renderer. The
// input is a template; it renders a fixed two-message conversation. Bad
// templates must throw jinja::TemplateError, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  static const swan::jinja::Json messages = swan::jinja::Json::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi {{x}} <s>"}])");
  try {
    const swan::ChatTemplate t(source, "<s>", "</s>", "fuzz");
    (void)t.Apply(messages, true);
  } catch (const swan::jinja::TemplateError&) {
  }
  return 0;
}
