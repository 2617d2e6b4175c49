#include "serve/openai_api.h"

#include <algorithm>
#include <optional>
#include <random>
#include <set>

#include "util/json_integer.h"

namespace swan {
namespace {

const std::set<std::string> kCommonFields = {"model", "max_tokens", "temperature", "top_p", "n", "stream",
                                             "stream_options", "stop", "presence_penalty", "frequency_penalty",
                                             "logit_bias", "logprobs", "user", "seed",
                                             // extensions, as llama.cpp and vLLM accept them
                                             "top_k", "min_p", "ignore_eos"};
const std::set<std::string> kCompletionFields = {"prompt", "echo", "best_of", "suffix"};
const std::set<std::string> kChatFields = {"messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice",
                                           "response_format", "parallel_tool_calls",
                                           // OpenAI's other chat fields: what they mean here is in ChatOnlyFields.
                                           "store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier",
                                           "reasoning_effort", "verbosity", "prediction", "modalities", "audio",
                                           "web_search_options", "functions", "function_call"};

[[noreturn]] void Bad(const std::string& message, const std::string& param) {
  throw ApiError(400, message, param, "invalid_value");
}

double Number(const Json& body, const char* name, double fallback, double lo, double hi) {
  if (!body.contains(name) || body[name].is_null()) return fallback;
  const Json& v = body[name];
  if (!v.is_number()) Bad(std::string(name) + " must be a number", name);
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi))
    Bad(std::string(name) + " must be between " + std::to_string(lo).substr(0, 4) + " and " +
            std::to_string(hi).substr(0, 4) + ", got " + v.dump(),
        name);
  return x;
}

bool Integer(const Json& body, const char* name, int64_t* out) {
  if (!body.contains(name) || body[name].is_null()) return false;
  const Json& v = body[name];
  const std::optional<int64_t> i = JsonInteger<int64_t>(v);
  if (!i) Bad(std::string(name) + " must be an integer, got " + v.dump(), name);
  *out = *i;
  return true;
}

// Known fields we do not implement: accepted only at their default.
void RejectUnsupported(const Json& body) {
  auto is_default = [&](const char* name, const Json& dflt) {
    return !body.contains(name) || body[name].is_null() || body[name] == dflt;
  };
  if (!is_default("n", 1)) Bad("n must be 1 (one choice per request)", "n");
  if (!is_default("best_of", 1)) Bad("best_of must be 1", "best_of");
  if (!is_default("presence_penalty", 0)) Bad("presence_penalty is not supported (use 0)", "presence_penalty");
  if (!is_default("frequency_penalty", 0)) Bad("frequency_penalty is not supported (use 0)", "frequency_penalty");
  if (!is_default("logit_bias", Json::object())) Bad("logit_bias is not supported", "logit_bias");
  if (!is_default("suffix", "")) Bad("suffix is not supported", "suffix");
  if (body.contains("response_format") && !body["response_format"].is_null() &&
      body["response_format"].value("type", "text") != "text")
    Bad("only response_format {\"type\": \"text\"} is supported", "response_format");
}

// OpenAI's tool schema: [{"type": "function", "function": {"name",
// "description"?, "parameters"?, "strict"?}}]. Returns the names.
std::vector<std::string> ToolNames(const Json& tools) {
  if (!tools.is_array()) Bad("tools must be an array", "tools");
  std::vector<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    const Json& t = tools[i];
    if (!t.is_object() || t.value("type", "") != "function")
      Bad(where + " must be {\"type\": \"function\", \"function\": {...}}", where + ".type");
    if (!t.contains("function") || !t["function"].is_object()) Bad(where + ".function must be an object", where);
    const Json& f = t["function"];
    const std::string name = f.contains("name") && f["name"].is_string() ? f["name"].get<std::string>() : "";
    const bool good_name =
        !name.empty() && name.size() <= 64 &&
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos;
    if (!good_name)
      Bad(where + ".function.name must be 1 to 64 letters, digits, _ or -, got " +
              (f.contains("name") ? f["name"].dump() : "none"),
          where + ".function.name");
    if (f.contains("description") && !f["description"].is_string())
      Bad(where + ".function.description must be a string", where + ".function.description");
    if (f.contains("parameters") && !f["parameters"].is_object())
      Bad(where + ".function.parameters must be a JSON Schema object", where + ".function.parameters");
    if (std::find(names.begin(), names.end(), name) != names.end())
      Bad(where + ".function.name '" + name + "' is given twice", where + ".function.name");
    names.push_back(name);
  }
  return names;
}

// OpenAI's tool_choice, given the tools' names.
struct ToolChoice {
  bool none = false;    // "none": no calls are read
  bool forced = false;  // "required" or a named function: the reply starts as a call
  std::string name;     // the named function; "" for any of the tools
};
ToolChoice ReadToolChoice(const Json& body, const std::vector<std::string>& names) {
  const Json choice =
      body.contains("tool_choice") && !body["tool_choice"].is_null() ? body["tool_choice"] : Json("auto");
  ToolChoice out;
  if (choice == "auto") return out;
  if (choice == "none") {
    out.none = true;
    return out;
  }
  if (choice != "required" && !(choice.is_object() && choice.value("type", "") == "function"))
    Bad("tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": "
        "{\"name\": ...}}, got " +
            choice.dump(),
        "tool_choice");
  if (names.empty()) Bad("tool_choice " + choice.dump() + " needs tools to call", "tool_choice");
  out.forced = true;
  if (choice.is_object()) {
    const Json& f = choice.contains("function") ? choice["function"] : Json();
    out.name = f.is_object() && f.contains("name") && f["name"].is_string() ? f["name"].get<std::string>() : "";
    if (std::find(names.begin(), names.end(), out.name) == names.end())
      Bad("tool_choice.function.name must name one of the tools, got " + (f.is_object() ? f.dump() : "none"),
          "tool_choice.function.name");
  }
  return out;
}

// Chat fields with no effect on swan's answer are checked for their type
// and ignored; those that would change it in a way swan cannot are
// refused (docs/serving.md lists each).
void ChatOnlyFields(const Json& body) {
  auto given = [&](const char* name) { return body.contains(name) && !body[name].is_null(); };
  auto expect = [&](const char* name, bool ok, const char* what) {
    if (given(name) && !ok) Bad(std::string(name) + " must be " + what, name);
  };
  auto one_of = [&](const char* name, const std::set<std::string>& values, const char* what) {
    expect(name, body[name].is_string() && values.count(body[name].get<std::string>()), what);
  };
  // Ignored: swan stores no completions (store, metadata), has one service
  // tier, caches prompts by their content (prompt_cache_key), and takes no
  // user identity (safety_identifier, as user).
  expect("store", given("store") && body["store"].is_boolean(), "true or false");
  expect("metadata", given("metadata") && body["metadata"].is_object(), "an object");
  expect("service_tier", given("service_tier") && body["service_tier"].is_string(), "a string");
  expect("prompt_cache_key", given("prompt_cache_key") && body["prompt_cache_key"].is_string(), "a string");
  expect("safety_identifier", given("safety_identifier") && body["safety_identifier"].is_string(), "a string");
  // Ignored: hints to OpenAI's reasoning models; the models swan runs take
  // no such setting (max_tokens bounds the length).
  if (given("reasoning_effort"))
    one_of("reasoning_effort", {"none", "minimal", "low", "medium", "high"}, "none, minimal, low, medium or high");
  if (given("verbosity")) one_of("verbosity", {"low", "medium", "high"}, "low, medium or high");
  // Ignored: predicted output only speeds up OpenAI's decoding; the answer
  // does not depend on it.
  expect("prediction", given("prediction") && body["prediction"].is_object(), "an object");
  // Refused: output swan cannot make.
  if (given("modalities")) {
    expect("modalities", body["modalities"].is_array(), "an array");
    for (const Json& m : body["modalities"])
      if (m != "text") Bad("modalities: swan generates text only, got " + m.dump(), "modalities");
  }
  if (given("audio")) Bad("audio output is not supported: swan generates text only", "audio");
  if (given("web_search_options")) Bad("web_search_options: swan has no web search", "web_search_options");
  if (given("functions") || given("function_call"))
    Bad("functions and function_call are deprecated: give tools and tool_choice",
        given("functions") ? "functions" : "function_call");
}

// logprobs: completions' integer N (the chosen token and N alternatives;
// with echo the prompt's too), chat's boolean with top_logprobs N. Not
// with stream (the streamed chunks carry none).
void Logprobs(const Json& body, bool chat, CompletionCall* call) {
  GenerationRequest& g = call->generation;
  const bool given = body.contains("logprobs") && !body["logprobs"].is_null();
  if (chat) {
    if (given && !body["logprobs"].is_boolean()) Bad("logprobs must be true or false", "logprobs");
    int64_t top = 0;
    if (Integer(body, "top_logprobs", &top)) {
      if (top < 0 || top > 20) Bad("top_logprobs must be between 0 and 20", "top_logprobs");
      if (!given || !body["logprobs"].get<bool>()) Bad("top_logprobs needs logprobs: true", "top_logprobs");
    }
    if (given && body["logprobs"].get<bool>()) g.logprobs = int32_t(top);
  } else if (given) {
    if (body["logprobs"].is_boolean()) Bad("logprobs must be an integer between 0 and 20", "logprobs");
    int64_t n = 0;
    Integer(body, "logprobs", &n);
    if (n < 0 || n > 20) Bad("logprobs must be between 0 and 20", "logprobs");
    g.logprobs = int32_t(n);
    g.prompt_logprobs = call->echo;
  }
  if (g.logprobs >= 0 && call->stream) Bad("logprobs are returned only without stream", "logprobs");
}

std::vector<std::string> StopStrings(const Json& body) {
  if (!body.contains("stop") || body["stop"].is_null()) return {};
  const Json& v = body["stop"];
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array() || v.size() > 4) Bad("stop must be a string or an array of at most 4 strings", "stop");
  std::vector<std::string> out;
  for (const Json& s : v) {
    if (!s.is_string()) Bad("stop must be a string or an array of at most 4 strings", "stop");
    out.push_back(s.get<std::string>());
  }
  return out;
}

// Text of a message's content: a string, null, or [{"type": "text", "text": ...}].
Json MessageContent(const Json& m, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "].content";
  if (!m.contains("content") || m["content"].is_null()) return "";
  const Json& c = m["content"];
  if (c.is_string()) return c;
  if (!c.is_array()) Bad(where + " must be a string or an array of content parts", where);
  std::string text;
  for (const Json& part : c) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      Bad(where + ": only text parts ({\"type\": \"text\", \"text\": ...}) are supported", where);
    text += part["text"].get<std::string>();
  }
  return text;
}

Json Messages(const Json& body) {
  if (!body.contains("messages")) Bad("messages is required", "messages");
  const Json& v = body["messages"];
  if (!v.is_array() || v.empty()) Bad("messages must be a non-empty array", "messages");
  static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
  static const std::set<std::string> fields = {"role", "content", "name", "tool_calls", "tool_call_id"};
  Json out = Json::array();
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& m = v[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) Bad(where + " must be an object", where);
    for (auto it = m.begin(); it != m.end(); ++it)
      if (!fields.count(it.key())) Bad("unrecognized field " + where + "." + it.key(), where + "." + it.key());
    if (!m.contains("role") || !m["role"].is_string() || !roles.count(m["role"].get<std::string>()))
      Bad(where + ".role must be one of system, developer, user, assistant, tool", where + ".role");
    Json msg = m;
    msg["role"] = m["role"] == "developer" ? Json("system") : m["role"];
    msg["content"] = MessageContent(m, i);
    out.push_back(std::move(msg));
  }
  return out;
}

std::vector<int32_t> CompletionPrompt(const Json& body, const ApiContext& ctx) {
  if (!body.contains("prompt")) Bad("prompt is required", "prompt");
  Json p = body["prompt"];
  if (p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array())) p = p[0];
  if (p.is_string()) return ctx.tokenizer->Encode(p.get<std::string>());
  if (p.is_array() && !p.empty()) {
    std::vector<int32_t> ids;
    for (const Json& x : p) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= ctx.tokenizer->vocab_size())
        Bad("prompt must be a string or an array of token ids below " + std::to_string(ctx.tokenizer->vocab_size()),
            "prompt");
      ids.push_back(int32_t(x.get<int64_t>()));
    }
    return ids;
  }
  Bad("prompt must be a string or an array of token ids (one prompt per request)", "prompt");
}

}  // namespace

Json ErrorBody(int status, const std::string& message, const std::string& param, const std::string& code) {
  const char* type = status == 429   ? "rate_limit_error"
                     : status == 404 ? "not_found_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? Json() : Json(param)},
            {"code", code.empty() ? Json() : Json(code)}}}};
}

CompletionCall ParseCompletionRequest(const std::string& text, bool chat, const ApiContext& ctx) {
  Json body = Json::parse(text, nullptr, false);
  if (body.is_discarded()) throw ApiError(400, "the request body is not valid JSON", "", "invalid_json");
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_json");
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& k = it.key();
    if (!kCommonFields.count(k) && !(chat ? kChatFields : kCompletionFields).count(k))
      throw ApiError(400, "Unrecognized request argument supplied: " + k, k, "unknown_field");
  }
  RejectUnsupported(body);
  if (chat) ChatOnlyFields(body);
  CompletionCall call;
  call.chat = chat;
  if (body.contains("model") && !body["model"].is_null() && !body["model"].is_string())
    Bad("model must be a string", "model");
  if (body.contains("model") && body["model"].is_string() && !ctx.accept_any_model &&
      body["model"].get<std::string>() != ctx.model_name)
    throw ApiError(404,
                   "The model '" + body["model"].get<std::string>() + "' does not exist: this server serves '" +
                       ctx.model_name + "' (swan serve --accept-any-model serves every name)",
                   "model", "model_not_found");
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) Bad("stream must be true or false", "stream");
    call.stream = body["stream"].get<bool>();
  }
  if (body.contains("stream_options") && body["stream_options"].is_object())
    call.include_usage = body["stream_options"].value("include_usage", false);

  GenerationRequest& g = call.generation;
  if (chat) {
    const Json messages = Messages(body);
    const Json tools = body.contains("tools") && !body["tools"].is_null() ? body["tools"] : Json();
    const std::vector<std::string> names = tools.is_null() ? std::vector<std::string>() : ToolNames(tools);
    const ToolChoice choice = ReadToolChoice(body, names);
    std::string prompt;
    try {
      prompt = ctx.chat_template->Apply(messages, true, tools);
      // A template without tool support drops them: the model would never see them.
      if (!names.empty() && prompt == ctx.chat_template->Apply(messages, true, Json()))
        Bad("this model's chat template (" + ctx.chat_template->origin() +
                ") does not show tools to the model; give one that does with swan serve --chat-template FILE",
            "tools");
    } catch (const jinja::TemplateError& e) {
      throw ApiError(400, e.what(), "messages", "chat_template_error");
    }
    if (!choice.none) call.tool_names = choice.name.empty() ? names : std::vector<std::string>{choice.name};
    if (choice.forced) {  // the reply starts as a call does; the model writes the rest
      call.reply_start = ForcedCallStart(prompt, choice.name);
      prompt += call.reply_start;
    }
    g.prompt = ctx.tokenizer->Encode(prompt, EncodeOptions{.add_special_tokens = false});
  } else {
    g.prompt = CompletionPrompt(body, ctx);
    if (body.contains("echo") && !body["echo"].is_null()) {
      if (!body["echo"].is_boolean()) Bad("echo must be true or false", "echo");
      call.echo = body["echo"].get<bool>();
    }
    if (call.echo) call.prompt_text = ctx.tokenizer->DecodeRaw(g.prompt, /*skip_special=*/true);
  }
  const int64_t n_prompt = int64_t(g.prompt.size());
  if (n_prompt == 0) Bad("the prompt is empty", chat ? "messages" : "prompt");
  if (n_prompt >= ctx.context_length)
    throw ApiError(400,
                   "This model's maximum context length is " + std::to_string(ctx.context_length) +
                       " tokens, but the prompt has " + std::to_string(n_prompt) +
                       " tokens (at least one more is needed for the completion). Please shorten the prompt.",
                   chat ? "messages" : "prompt", "context_length_exceeded");

  int64_t max_tokens = chat ? ctx.context_length - n_prompt : std::min<int64_t>(16, ctx.context_length - n_prompt);
  const char* max_name = chat && body.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  Logprobs(body, chat, &call);
  if (Integer(body, max_name, &max_tokens)) {
    if (max_tokens < 0 || (max_tokens == 0 && !g.prompt_logprobs))
      Bad(std::string(max_name) + " must be at least 1 (0 only with echo and logprobs, to score the prompt), got " +
              std::to_string(max_tokens),
          max_name);
    if (n_prompt + max_tokens > ctx.context_length)
      throw ApiError(400,
                     "This model's maximum context length is " + std::to_string(ctx.context_length) +
                         " tokens. However, you requested " + std::to_string(n_prompt + max_tokens) + " tokens (" +
                         std::to_string(n_prompt) + " in the prompt, " + std::to_string(max_tokens) +
                         " for the completion). Please reduce the prompt or " + max_name + ".",
                     max_name, "context_length_exceeded");
  }
  g.max_tokens = max_tokens;
  g.sampling.temperature = Number(body, "temperature", 1.0, 0.0, 2.0);
  g.sampling.top_p = Number(body, "top_p", 1.0, 0.0, 1.0);
  if (g.sampling.top_p == 0.0) Bad("top_p must be greater than 0", "top_p");
  g.sampling.min_p = Number(body, "min_p", 0.0, 0.0, 1.0);
  int64_t top_k = 0;
  if (Integer(body, "top_k", &top_k) && top_k < 0) Bad("top_k must be >= 0", "top_k");
  g.sampling.top_k = int32_t(std::min<int64_t>(top_k, INT32_MAX));
  int64_t seed = 0;
  if (Integer(body, "seed", &seed)) {
    g.sampling.seed = uint64_t(seed);
  } else {
    static std::random_device rd;
    g.sampling.seed = (uint64_t(rd()) << 32) ^ rd();
  }
  g.stop = StopStrings(body);
  if (body.contains("ignore_eos") && !body["ignore_eos"].is_null()) {
    if (!body["ignore_eos"].is_boolean()) Bad("ignore_eos must be true or false", "ignore_eos");
    g.ignore_eos = body["ignore_eos"].get<bool>();
  }
  return call;
}

Json UsageJson(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

Json LogprobsJson(const CompletionCall& call, const GenerationEvent& done, const Tokenizer& tokenizer) {
  if (call.generation.logprobs < 0) return nullptr;
  auto piece = [&](int32_t id) { return tokenizer.DecodeRaw(std::vector<int32_t>{id}, /*skip_special=*/false); };
  if (call.chat) {
    auto entry = [&](int32_t id, double logprob) {
      const std::string token = piece(id);
      std::vector<int> bytes;
      for (const char c : token) bytes.push_back(int(static_cast<unsigned char>(c)));
      return Json{{"token", token}, {"logprob", logprob}, {"bytes", bytes}};
    };
    Json content = Json::array();
    for (const TokenLogprob& t : done.logprobs) {
      Json e = entry(t.token, t.logprob);
      e["top_logprobs"] = Json::array();
      for (const auto& [id, lp] : t.top) e["top_logprobs"].push_back(entry(id, lp));
      content.push_back(e);
    }
    return {{"content", content}};
  }
  Json tokens = Json::array(), token_logprobs = Json::array(), top_logprobs = Json::array(),
       text_offset = Json::array();
  int64_t offset = 0;  // from the start of the prompt's text, as OpenAI counts
  auto add = [&](int32_t id, const TokenLogprob* t) {
    const std::string token = piece(id);
    tokens.push_back(token);
    text_offset.push_back(offset);
    offset += int64_t(token.size());
    token_logprobs.push_back(t ? Json(t->logprob) : Json());
    if (!t) {
      top_logprobs.push_back(nullptr);
      return;
    }
    Json top = Json::object();
    for (const auto& [alt, lp] : t->top) top[piece(alt)] = lp;
    top_logprobs.push_back(top);
  };
  const std::vector<int32_t>& prompt = call.generation.prompt;
  if (call.echo) {
    for (size_t i = 0; i < prompt.size(); ++i)
      add(prompt[i], i > 0 && i - 1 < done.prompt_logprobs.size() ? &done.prompt_logprobs[i - 1] : nullptr);
  } else {
    offset = int64_t(tokenizer.DecodeRaw(prompt, /*skip_special=*/true).size());
  }
  for (size_t i = 0; i < done.logprobs.size(); ++i) add(done.logprobs[i].token, &done.logprobs[i]);
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top_logprobs},
          {"text_offset", text_offset}};
}

Json CompletionResponse(const CompletionCall& call, const ResponseMeta& meta, const std::string& text,
                        const GenerationEvent& done, const Tokenizer& tokenizer) {
  Json choice = {{"index", 0}};
  const std::string whole = call.reply_start + text;
  const ParsedReply reply = call.tool_names.empty() ? ParsedReply{whole, {}} : ParseToolCalls(whole, call.tool_names);
  if (call.chat)
    choice["message"] = {{"role", "assistant"}, {"content", whole}};
  else
    choice["text"] = call.echo ? call.prompt_text + text : text;
  choice["logprobs"] = LogprobsJson(call, done, tokenizer);
  SetFinishReason(&choice, done.finish);
  if (!reply.calls.empty()) {
    choice["message"]["content"] = reply.content.empty() ? Json() : Json(reply.content);
    choice["message"]["tool_calls"] = ToolCallsJson(meta, reply.calls, false);
    choice["finish_reason"] = "tool_calls";
  }
  return {{"id", meta.id},
          {"object", call.chat ? "chat.completion" : "text_completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", Json::array({choice})},
          {"usage", UsageJson(done.usage)}};
}

Json ToolCallsJson(const ResponseMeta& meta, const std::vector<ToolCall>& calls, bool delta) {
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json c = {{"id", "call_" + meta.id + "_" + std::to_string(i)},
              {"type", "function"},
              {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (delta) c["index"] = i;
    out.push_back(c);
  }
  return out;
}

void SetFinishReason(Json* choice, FinishReason reason) {
  (*choice)["finish_reason"] = reason == FinishReason::kLength ? "length" : "stop";
  if (reason == FinishReason::kCancelled) (*choice)["swan_finish_reason"] = "cancelled";
}

Json StreamChunk(const CompletionCall& call, const ResponseMeta& meta, const std::string& text,
                 std::optional<FinishReason> finish, const Usage* usage, bool role) {
  Json choice = {{"index", 0}};
  if (call.chat) {
    Json delta = Json::object();
    if (role) delta["role"] = "assistant";
    if (role || !text.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  if (finish)
    SetFinishReason(&choice, *finish);
  else
    choice["finish_reason"] = nullptr;
  Json chunk = {{"id", meta.id},
                {"object", call.chat ? "chat.completion.chunk" : "text_completion"},
                {"created", meta.created},
                {"model", meta.model},
                {"choices", Json::array({choice})}};
  if (usage) chunk["usage"] = UsageJson(*usage);
  return chunk;
}

}  // namespace swan
