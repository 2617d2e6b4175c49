// libFuzzer target: an OpenAI request body (completions and chat) to a
// validated request, with the built-in chat template and stories260K's
// tokenizer. Bad bodies must throw ApiError or std::invalid_argument.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "serve/chat_template.h"
#include "serve/openai_api.h"
#include "tokenizer/tokenizer.h"
#include "util/test_paths.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const swan::Tokenizer tokenizer = swan::Tokenizer::Load(swan::test::Stories260K());
  static const swan::ChatTemplate chat_template(swan::kFallbackChatTemplate, "<s>", "</s>", "fuzz");
  const std::string body(reinterpret_cast<const char*>(data), size);
  const swan::ApiContext context{&tokenizer, &chat_template, 512, "stories260K", false};
  for (const bool chat : {false, true}) {
    try {
      (void)swan::ParseCompletionRequest(body, chat, context);
    } catch (const swan::ApiError&) {
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}
