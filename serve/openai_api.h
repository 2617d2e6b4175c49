// The OpenAI HTTP API's request and response shapes for /v1/completions
// and /v1/chat/completions: strict parsing (unknown fields and bad values
// are 400s with an OpenAI-style error body) and the JSON of responses and
// server-sent-event chunks.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "serve/chat_template.h"
#include "serve/engine.h"
#include "serve/jinja.h"
#include "serve/tool_calls.h"

namespace swan {

using Json = jinja::Json;

// An error for the client: HTTP status and the fields of OpenAI's
// {"error": {"message", "type", "param", "code"}}.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string param = {}, std::string code = {})
      : std::runtime_error(message), status(status), param(std::move(param)), code(std::move(code)) {}
  int status;
  std::string param, code;
};

Json ErrorBody(int status, const std::string& message, const std::string& param = {}, const std::string& code = {});

struct ApiContext {
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat_template = nullptr;
  int64_t context_length = 0;
  std::string model_name;
  // false: a request naming another model gets 404 model_not_found (as
  // OpenAI and vLLM answer); true: any name is served by this model.
  bool accept_any_model = false;
};

// A parsed request.
struct CompletionCall {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;    // stream_options.include_usage
  bool echo = false;             // completions: the prompt's text before the completion
  std::string prompt_text;       // with echo
  GenerationRequest generation;  // generation.logprobs >= 0: the response carries logprobs
  // Chat with tools (and tool_choice not "none"): the reply is read for
  // calls of these functions (serve/tool_calls.h).
  std::vector<std::string> tool_names;
  // tool_choice "required" or a named function: the reply's first text,
  // put at the end of the prompt (ForcedCallStart); the model writes the
  // rest, and the response shows the whole reply.
  std::string reply_start;
};

// Parses a request body. Throws ApiError (400) naming the field.
CompletionCall ParseCompletionRequest(const std::string& body, bool chat, const ApiContext& context);

// Response identity shared by all chunks of one response.
struct ResponseMeta {
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

Json UsageJson(const Usage& usage);
// The response's "logprobs": completions' {tokens, token_logprobs,
// top_logprobs, text_offset} (the prompt's first when echoed), chat's
// {content: [{token, logprob, bytes, top_logprobs}]}; null without them.
Json LogprobsJson(const CompletionCall& call, const GenerationEvent& done, const Tokenizer& tokenizer);
// A whole (non-streamed) response.
Json CompletionResponse(const CompletionCall& call, const ResponseMeta& meta, const std::string& text,
                        const GenerationEvent& done, const Tokenizer& tokenizer);
// One streamed chunk: a text piece (no finish), the first chat chunk
// (role only), the last (finish set), or, with include_usage, the usage
// after it (usage set, choices emptied by the caller).
Json StreamChunk(const CompletionCall& call, const ResponseMeta& meta, const std::string& text,
                 std::optional<FinishReason> finish = {}, const Usage* usage = nullptr, bool role = false);
// The "tool_calls" of a chat message or delta, ids "call_<response id>_<i>".
Json ToolCallsJson(const ResponseMeta& meta, const std::vector<ToolCall>& calls, bool delta);
// Sets a choice's "finish_reason" to one of OpenAI's values: a request the
// server cancelled (shutdown) reports "stop", and says so in the swan field
// "swan_finish_reason": "cancelled".
void SetFinishReason(Json* choice, FinishReason reason);

}  // namespace swan
