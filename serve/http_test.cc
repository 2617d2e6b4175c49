// `swan serve`'s HTTP API end to end on stories260K over loopback: OpenAI
// response shapes, streaming, stop sequences, errors as OpenAI-style
// bodies, 429 over the KV budget, and a client that disconnects mid-stream.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include "model/test_files.h"
#include "serve/http_server.h"
#include "serve/test_server.h"
#include "serve/openai_api.h"

namespace swan {
namespace {

using test::TestServer;

class Http : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = LoadModel(test::Stories260K()).release();
    tokenizer_ = new Tokenizer(Tokenizer::Load(test::Stories260K()));
    EngineOptions options;
    options.attn = "hybrid:3:1,window:16";
    options.checkpoint_interval = 16;
    server_ = new TestServer(*model_, *tokenizer_, options);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete tokenizer_;
    delete model_;
  }

  static std::pair<int, Json> Post(const std::string& path, const std::string& body) {
    httplib::Client c = server_->Client();
    auto res = c.Post(path.c_str(), body, "application/json");
    if (!res) return {-1, Json()};
    return {res->status, Json::parse(res->body, nullptr, false)};
  }

  // The "data:" payloads of an event stream, [DONE] included as a string.
  static std::vector<Json> Events(const std::string& body) {
    std::vector<Json> out;
    size_t i = 0;
    while (i < body.size()) {
      size_t end = body.find("\n\n", i);
      if (end == std::string::npos) end = body.size();
      const std::string event = body.substr(i, end - i);
      if (event.rfind("data: ", 0) == 0) {
        const std::string data = event.substr(6);
        out.push_back(data == "[DONE]" ? Json(data) : Json::parse(data, nullptr, false));
      }
      i = end + 2;
    }
    return out;
  }

  static void ExpectError(int status, const Json& body, int want_status, const std::string& param = {}) {
    EXPECT_EQ(status, want_status) << body.dump();
    ASSERT_TRUE(body.is_object() && body.contains("error")) << body.dump();
    EXPECT_TRUE(body["error"]["message"].is_string());
    EXPECT_TRUE(body["error"]["type"].is_string());
    if (!param.empty()) {
      EXPECT_EQ(body["error"]["param"], param) << body.dump();
    }
  }

  static LanguageModel* model_;
  static Tokenizer* tokenizer_;
  static TestServer* server_;
};
LanguageModel* Http::model_ = nullptr;
Tokenizer* Http::tokenizer_ = nullptr;
TestServer* Http::server_ = nullptr;

// A second server on a port in use is refused, not given half the requests.
TEST_F(Http, ASecondServerOnTheSamePortIsRefused) {
  Engine engine(*model_, *tokenizer_, EngineOptions{});
  const ChatTemplate chat_template(kFallbackChatTemplate, "<s>", "</s>", "built-in fallback");
  HttpServer second(engine, *tokenizer_, chat_template,
                    ServerOptions{"127.0.0.1", server_->port(), "stories260K", false, false, {}});
  try {
    second.Bind();
    FAIL() << "a second server bound port " << server_->port();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
  auto res = server_->Client().Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(Http, HealthAndModels) {
  httplib::Client c = server_->Client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(Json::parse(health->body)["status"], "ok");
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  const Json m = Json::parse(models->body);
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "stories260K");
  EXPECT_EQ(m["data"][0]["object"], "model");
  // The SDK's models.retrieve, and a name this server does not serve.
  auto one = c.Get("/v1/models/stories260K");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  EXPECT_EQ(Json::parse(one->body)["id"], "stories260K");
  auto other = c.Get("/v1/models/gpt-4o");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  EXPECT_EQ(Json::parse(other->body)["error"]["code"], "model_not_found");
}

TEST_F(Http, ARequestForAnotherModelIsNotFound) {
  auto [status, body] = Post("/v1/completions", R"({"model": "gpt-4o", "prompt": "hi", "max_tokens": 2})");
  EXPECT_EQ(status, 404);
  EXPECT_EQ(body["error"]["code"], "model_not_found");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("serves 'stories260K'"), std::string::npos);
  auto [ok, reply] = Post("/v1/completions", R"({"model": "stories260K", "prompt": "hi", "max_tokens": 2})");
  EXPECT_EQ(ok, 200) << reply.dump();
}

TEST_F(Http, CompletionGreedyStopAndStreamAgree) {
  auto [status, body] =
      Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0})");
  ASSERT_EQ(status, 200) << body.dump();
  EXPECT_EQ(body["object"], "text_completion");
  const std::string text = body["choices"][0]["text"];
  EXPECT_EQ(text.rfind(", there was a little girl named Lily", 0), 0u) << text;
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["completion_tokens"], 12);
  EXPECT_EQ(body["usage"]["total_tokens"], body["usage"]["prompt_tokens"].get<int>() + 12);

  auto [s2, stopped] =
      Post("/v1/completions",
           R"({"prompt": "Once upon a time", "max_tokens": 30, "temperature": 0, "stop": ["Lily", "zzz"]})");
  ASSERT_EQ(s2, 200);
  EXPECT_EQ(stopped["choices"][0]["text"], ", there was a little girl named ");
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");

  httplib::Client c = server_->Client();
  auto res =
      c.Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "stream": true})",
             "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  const std::vector<Json> events = Events(res->body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string streamed;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_EQ(events[i]["object"], "text_completion");
    streamed += events[i]["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(streamed, text);
  const Json& last = events[events.size() - 2];
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  // Usage only when asked for, and then once, in a chunk of its own.
  for (const Json& e : events) EXPECT_FALSE(e.is_object() && e.contains("usage")) << e.dump();
  auto with_usage = c.Post("/v1/completions",
                           R"({"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "stream": true,
          "stream_options": {"include_usage": true}})",
                           "application/json");
  ASSERT_TRUE(with_usage);
  const std::vector<Json> usage_events = Events(with_usage->body);
  int usage_chunks = 0;
  for (const Json& e : usage_events) usage_chunks += e.is_object() && e.contains("usage");
  EXPECT_EQ(usage_chunks, 1);
  ASSERT_GE(usage_events.size(), 3u);
  EXPECT_TRUE(usage_events[usage_events.size() - 2]["choices"].empty());
  EXPECT_EQ(usage_events[usage_events.size() - 2]["usage"]["completion_tokens"], 12);
}

TEST_F(Http, ChatCompletionsAndPromptReuse) {
  const Json first_req = {{"messages", {{{"role", "user"}, {"content", "Tell me a story about a cat."}}}},
                          {"max_tokens", 16},
                          {"temperature", 0}};
  auto [status, first] = Post("/v1/chat/completions", first_req.dump());
  ASSERT_EQ(status, 200) << first.dump();
  EXPECT_EQ(first["object"], "chat.completion");
  EXPECT_EQ(first["choices"][0]["message"]["role"], "assistant");
  const std::string reply = first["choices"][0]["message"]["content"];

  Json next_req = first_req;
  next_req["messages"].push_back({{"role", "assistant"}, {"content", reply}});
  next_req["messages"].push_back({{"role", "user"}, {"content", "And then?"}});
  next_req["stream"] = true;
  next_req["stream_options"] = {{"include_usage", true}};
  httplib::Client c = server_->Client();
  auto res = c.Post("/v1/chat/completions", next_req.dump(), "application/json");
  ASSERT_TRUE(res);
  const std::vector<Json> events = Events(res->body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(events.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(events.back(), "[DONE]");
  const Json& usage_chunk = events[events.size() - 2];
  EXPECT_TRUE(usage_chunk["choices"].empty());
  // The first turn comes from the prompt cache, up to the checkpoint (every
  // 16 tokens here) at or before where the re-encoded reply differs.
  EXPECT_GE(usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
            first["usage"]["prompt_tokens"].get<int>() - 16)
      << usage_chunk.dump();
}

TEST_F(Http, BadInputGetsOpenAiStyleErrors) {
  auto [s1, b1] = Post("/v1/completions", "{\"prompt\": \"hi\", ");
  ExpectError(s1, b1, 400);
  auto [s2, b2] = Post("/v1/completions", R"({"prompt": "hi", "max_tokens": 4, "temprature": 0.5})");
  ExpectError(s2, b2, 400, "temprature");
  auto [s3, b3] = Post("/v1/completions", R"({"prompt": "hi", "max_tokens": -1})");
  ExpectError(s3, b3, 400, "max_tokens");
  const Json long_prompt = {{"prompt", std::vector<int>(600, 300)}, {"max_tokens", 4}};
  auto [s4, b4] = Post("/v1/completions", long_prompt.dump());
  ExpectError(s4, b4, 400, "prompt");
  EXPECT_EQ(b4["error"]["code"], "context_length_exceeded");
  auto [s5, b5] = Post("/v1/completions", R"({"prompt": "hi", "max_tokens": 100000})");
  ExpectError(s5, b5, 400, "max_tokens");
  // A float too large for an integer is refused, not cast (that was undefined).
  auto [s5b, b5b] = Post("/v1/completions", R"({"prompt": "hi", "max_tokens": 1e300})");
  ExpectError(s5b, b5b, 400, "max_tokens");
  auto [s6, b6] = Post("/v1/chat/completions", R"({"messages": [{"role": "wizard", "content": "x"}]})");
  ExpectError(s6, b6, 400, "messages[0].role");
  auto [s7, b7] = Post("/v1/completions", R"({"prompt": "hi", "temperature": "hot"})");
  ExpectError(s7, b7, 400, "temperature");
  auto [s8, b8] = Post("/v1/completions", R"({"prompt": "hi", "n": 3})");
  ExpectError(s8, b8, 400, "n");
  auto [s9, b9] = Post("/v1/nothing", "{}");
  ExpectError(s9, b9, 404);
  auto [s10, b10] = Post("/v1/completions", "[1, 2]");
  ExpectError(s10, b10, 400);
}

// OpenAI's chat fields that do not change swan's answer are accepted and
// ignored (the reply is the one without them); those swan cannot honour
// are refused naming the field; fields OpenAI does not define still are.
TEST_F(Http, EveryOpenAiChatFieldIsAcceptedOrRefusedWithAReason) {
  const Json plain = {
      {"messages", {{{"role", "user"}, {"content", "Tell me a story."}}}}, {"max_tokens", 8}, {"temperature", 0}};
  auto [status, reply] = Post("/v1/chat/completions", plain.dump());
  ASSERT_EQ(status, 200) << reply.dump();
  Json ignored = plain;
  ignored.update({{"store", true},
                  {"metadata", {{"run", "7"}}},
                  {"service_tier", "auto"},
                  {"prompt_cache_key", "stories"},
                  {"safety_identifier", "user-1"},
                  {"reasoning_effort", "low"},
                  {"verbosity", "low"},
                  {"prediction", {{"type", "content"}, {"content", "Once"}}},
                  {"modalities", {"text"}},
                  {"audio", nullptr}});
  auto [status2, reply2] = Post("/v1/chat/completions", ignored.dump());
  ASSERT_EQ(status2, 200) << reply2.dump();
  EXPECT_EQ(reply2["choices"][0]["message"]["content"], reply["choices"][0]["message"]["content"]);

  const std::vector<std::pair<Json, std::string>> refused = {
      {{{"modalities", {"text", "audio"}}}, "modalities"},
      {{{"audio", {{"voice", "alloy"}, {"format", "wav"}}}}, "audio"},
      {{{"web_search_options", Json::object()}}, "web_search_options"},
      {{{"functions", {{{"name", "f"}}}}}, "functions"},
      {{{"verbosity", "loud"}}, "verbosity"},
      {{{"store", "yes"}}, "store"},
      {{{"reasoning_effort", 3}}, "reasoning_effort"},
      {{{"temprature", 0.5}}, "temprature"}};
  for (const auto& [field, param] : refused) {
    Json body = plain;
    body.update(field);
    auto [bad_status, bad] = Post("/v1/chat/completions", body.dump());
    ExpectError(bad_status, bad, 400, param);
  }
}

// Tools: checked against OpenAI's schema, and refused when the model's
// chat template would not show them to the model (this server's fallback
// template has no tool support), forced calls included.
TEST_F(Http, ToolsAreValidatedAndNeverDroppedSilently) {
  const Json weather = Json::parse(R"({"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})");
  Json request = {{"messages", {{{"role", "user"}, {"content", "Weather in Oslo?"}}}}, {"max_tokens", 4}};
  request["tools"] = Json::array({weather});
  auto [status, body] = Post("/v1/chat/completions", request.dump());
  ExpectError(status, body, 400, "tools");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("does not show tools to the model"), std::string::npos)
      << body.dump();
  // tool_choice none: the tools are still refused, since the template cannot show them.
  Json bad_name = request;
  bad_name["tools"][0]["function"]["name"] = "get weather!";
  auto [s2, b2] = Post("/v1/chat/completions", bad_name.dump());
  ExpectError(s2, b2, 400, "tools[0].function.name");
  Json bad_type = request;
  bad_type["tools"][0]["type"] = "retrieval";
  auto [s3, b3] = Post("/v1/chat/completions", bad_type.dump());
  ExpectError(s3, b3, 400, "tools[0].type");
  Json forced = request;
  forced["tool_choice"] = "required";
  auto [s4, b4] = Post("/v1/chat/completions", forced.dump());
  ExpectError(s4, b4, 400, "tools");
}

// With a template that shows tools, a reply that makes no call streams as
// the same content as without stream (text held back where a call might
// start is sent at the end).
TEST_F(Http, ToolsWithATemplateThatShowsThem) {
  TestServer server(*model_, *tokenizer_, EngineOptions{}, {},
                    "{% if tools %}You may call {{ tools[0].function.name }}.\n{% endif %}"
                    "{% for m in messages %}{{ m.content }}\n{% endfor %}");
  Json request = Json::parse(R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 24,
      "temperature": 0, "tools": [{"type": "function", "function": {"name": "get_weather"}}]})");
  httplib::Client c = server.Client();
  auto whole = c.Post("/v1/chat/completions", request.dump(), "application/json");
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const Json reply = Json::parse(whole->body);
  EXPECT_FALSE(reply["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "length");
  request["stream"] = true;
  auto streamed = c.Post("/v1/chat/completions", request.dump(), "application/json");
  ASSERT_TRUE(streamed);
  std::string text;
  for (const Json& e : Events(streamed->body))
    if (e.is_object() && e["choices"][0]["delta"].contains("content"))
      text += e["choices"][0]["delta"]["content"].get<std::string>();
  EXPECT_EQ(text, reply["choices"][0]["message"]["content"].get<std::string>());
}

// tool_choice "required" or a named function: the reply starts as the
// template's calls do (Hermes here), streamed or not; choices that cannot
// be met are refused naming the field.
TEST_F(Http, ToolChoiceForcesTheCallsStart) {
  TestServer server(*model_, *tokenizer_, EngineOptions{}, {},
                    "{% if tools %}Call {{ tools[0].function.name }} in <tool_call></tool_call> tags.\n{% endif %}"
                    "{% for m in messages %}{{ m.content }}\n{% endfor %}");
  httplib::Client c = server.Client();
  Json request = Json::parse(R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 8,
      "temperature": 0, "tools": [{"type": "function", "function": {"name": "get_weather"}},
                                  {"type": "function", "function": {"name": "add"}}]})");
  auto post = [&](const Json& body) {
    auto res = c.Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(res);
    return std::make_pair(res ? res->status : 0, res ? Json::parse(res->body, nullptr, false) : Json());
  };
  const auto [auto_status, by_choice] = post(request);
  ASSERT_EQ(auto_status, 200) << by_choice.dump();
  const struct {
    Json choice;
    std::string start;
  } forced[] = {{"required", "<tool_call>\n{\"name\": \""},
                {Json::parse(R"({"type": "function", "function": {"name": "add"}})"),
                 "<tool_call>\n{\"name\": \"add\", \"arguments\": "}};
  for (const auto& f : forced) {
    SCOPED_TRACE(f.choice.dump());
    Json body = request;
    body["tool_choice"] = f.choice;
    const auto [status, reply] = post(body);
    ASSERT_EQ(status, 200) << reply.dump();
    // stories260K writes no JSON: the reply stays content, starting as a call.
    const std::string content = reply["choices"][0]["message"]["content"].get<std::string>();
    EXPECT_EQ(content.rfind(f.start, 0), 0u) << content;
    EXPECT_GT(content.size(), f.start.size());
    EXPECT_GT(reply["usage"]["prompt_tokens"].get<int64_t>(), by_choice["usage"]["prompt_tokens"].get<int64_t>());
    body["stream"] = true;
    auto streamed = c.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(streamed);
    std::string text;
    for (const Json& e : Events(streamed->body))
      if (e.is_object() && e["choices"][0]["delta"].contains("content"))
        text += e["choices"][0]["delta"]["content"].get<std::string>();
    EXPECT_EQ(text, content);
  }
  Json unknown = request;
  unknown["tool_choice"] = Json::parse(R"({"type": "function", "function": {"name": "get_time"}})");
  const auto [s1, b1] = post(unknown);
  ExpectError(s1, b1, 400, "tool_choice.function.name");
  Json no_tools = request;
  no_tools.erase("tools");
  no_tools["tool_choice"] = "required";
  const auto [s2, b2] = post(no_tools);
  ExpectError(s2, b2, 400, "tool_choice");
  Json odd = request;
  odd["tool_choice"] = "sometimes";
  const auto [s3, b3] = post(odd);
  ExpectError(s3, b3, 400, "tool_choice");
}

TEST_F(Http, OverTheKvBudgetIs429WithAReason) {
  EngineOptions options;
  options.kv_budget_bytes = 64 * 1024;  // far less than 512 positions need
  TestServer small(*model_, *tokenizer_, options);
  httplib::Client c = small.Client();
  auto res = c.Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 400})", "application/json");
  ASSERT_TRUE(res);
  const Json body = Json::parse(res->body);
  ExpectError(res->status, body, 429);
  EXPECT_NE(body["error"]["message"].get<std::string>().find("KV budget"), std::string::npos) << body.dump();
}

TEST_F(Http, ClientDisconnectMidStreamFreesTheSequence) {
  httplib::Client c = server_->Client();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = R"({"prompt": "Once upon a time", "max_tokens": 480, "ignore_eos": true, "stream": true})";
  int chunks = 0;
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
  c.send(req);  // ends with a canceled read after the third chunk
  EXPECT_GE(chunks, 3);
  c.stop();
  EngineStats stats;
  for (int i = 0; i < 500; ++i) {
    stats = server_->engine().Stats();
    if (stats.running == 0 && stats.waiting == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(stats.running, 0);
  EXPECT_EQ(stats.kv_reserved_bytes, 0u);
  EXPECT_EQ(stats.kv_bytes, 0u);
  EXPECT_LT(stats.tokens_generated, 100000);
}

// Log-probabilities as evaluation harnesses read them (lm-evaluation-harness's
// local-completions: echo, logprobs, max_tokens 0), against the model's own
// forward pass under the server's plan.
TEST_F(Http, LogprobsMatchTheModelsForwardPass) {
  const std::string text = "Once upon a time, there was a little girl";
  const std::vector<int32_t> ids = tokenizer_->Encode(text);
  const int64_t n = int64_t(ids.size()), vocab = model_->config().vocab_size;
  auto session = model_->NewSession(model_->ResolvePlan("hybrid:3:1,window:16"), KvCacheOptions{});
  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  std::vector<float> logits(size_t(n * vocab));  // [n, vocab]
  model_->Forward(logits.data(), Batch{ids.data(), pos.data(), n, true}, *session);
  auto logprob = [&](int64_t row, int32_t token) {
    return LogprobOf(&logits[size_t(row * vocab)], vocab, token, 0).logprob;
  };

  Json req = {{"prompt", text}, {"echo", true}, {"logprobs", 2}, {"max_tokens", 0}};
  auto [status, body] = Post("/v1/completions", req.dump());
  ASSERT_EQ(status, 200) << body.dump();
  const Json& choice = body["choices"][0];
  EXPECT_EQ(choice["text"], tokenizer_->DecodeRaw(ids, true));
  const Json& lp = choice["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), ids.size());
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  for (int64_t i = 1; i < n; ++i) {
    EXPECT_NEAR(lp["token_logprobs"][size_t(i)].get<double>(), logprob(i - 1, ids[size_t(i)]), 1e-4) << i;
    EXPECT_EQ(lp["top_logprobs"][size_t(i)].size(), 2u);
  }
  EXPECT_EQ(body["usage"]["completion_tokens"], 0);

  // Chat: each greedy token's logprob is the best of its alternatives; the
  // first equals the forward pass after the templated prompt.
  Json chat = {{"messages", {{{"role", "user"}, {"content", "Tell a story."}}}},
               {"max_tokens", 3},
               {"temperature", 0},
               {"logprobs", true},
               {"top_logprobs", 3}};
  auto [chat_status, chat_body] = Post("/v1/chat/completions", chat.dump());
  ASSERT_EQ(chat_status, 200) << chat_body.dump();
  const Json& content = chat_body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 3u);
  for (const Json& t : content) {
    ASSERT_EQ(t["top_logprobs"].size(), 3u);
    EXPECT_DOUBLE_EQ(t["logprob"].get<double>(), t["top_logprobs"][0]["logprob"].get<double>());
    EXPECT_GE(t["top_logprobs"][0]["logprob"].get<double>(), t["top_logprobs"][1]["logprob"].get<double>());
  }

  // Each refused request, posted once.
  const std::pair<const char*, const char*> refused[] = {
      {"/v1/completions", R"({"prompt": "hi", "logprobs": 1, "stream": true})"},
      {"/v1/completions", R"({"prompt": "hi", "max_tokens": 0})"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})"}};
  const char* params[] = {"logprobs", "max_tokens", "top_logprobs"};
  for (size_t i = 0; i < 3; ++i) {
    const auto [bad_status, bad_body] = Post(refused[i].first, refused[i].second);
    ExpectError(bad_status, bad_body, 400, params[i]);
  }
}

// SIGTERM's path (swan serve drains the engine, then stops the server): a
// stream cut by the end of the grace still ends with its final chunk and
// [DONE], and a request that arrives while draining gets 503.
TEST_F(Http, DrainEndsStreamsCleanlyAndRefusesNewRequests) {
  TestServer server(*model_, *tokenizer_, EngineOptions{});
  std::atomic<int> chunks{0};
  std::string body;
  std::thread client([&] {
    httplib::Client c = server.Client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.set_header("Content-Type", "application/json");
    req.body = R"({"prompt": "Once upon a time", "max_tokens": 480, "ignore_eos": true, "stream": true})";
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      body.append(data, n);
      ++chunks;
      return true;
    };
    c.send(req);
  });
  for (int i = 0; i < 1000 && chunks < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.engine().Drain(std::chrono::milliseconds(0));
  client.join();
  const std::vector<Json> events = Events(body);
  ASSERT_GE(events.size(), 2u) << body;
  EXPECT_EQ(events.back(), Json("[DONE]"));
  const Json& last = events[events.size() - 2];
  // One of OpenAI's finish reasons, and swan's own word for why.
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop") << last.dump();
  EXPECT_EQ(last["choices"][0]["swan_finish_reason"], "cancelled") << last.dump();
  httplib::Client c = server.Client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(Json::parse(health->body)["status"], "draining");
  auto res = c.Post("/v1/completions", R"({"prompt": "hi", "max_tokens": 2})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(Json::parse(res->body)["error"]["code"], "shutting_down");
}

}  // namespace
}  // namespace swan
