// Tool calls read from replies, and the responses that carry them.
#include "serve/tool_calls.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/test_files.h"
#include "serve/openai_api.h"
#include "tokenizer/tokenizer.h"

namespace swan {
namespace {

const std::vector<std::string> kNames = {"get_weather", "add"};

TEST(ToolCalls, HermesBlocksWithContentAround) {
  const ParsedReply r = ParseToolCalls(
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>",
      kNames);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Oslo\"}");
  EXPECT_EQ(r.calls[1].name, "add");
  EXPECT_EQ(r.calls[1].arguments, "{\"a\":1,\"b\":2}");
  EXPECT_EQ(r.content, "Let me look.");
}

TEST(ToolCalls, WhatIsNotACallStaysContent) {
  for (const std::string& reply :
       {std::string("No tools needed: 2 + 2 = 4."),
        std::string("<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>"),       // not offered
        std::string("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1,\n</tool_call>"),  // cut JSON
        std::string("{\"answer\": 4}"), std::string("")}) {
    const ParsedReply r = ParseToolCalls(reply, kNames);
    EXPECT_TRUE(r.calls.empty()) << reply;
    EXPECT_EQ(r.content, reply);
  }
}

TEST(ToolCalls, LlamaJsonReplies) {
  for (const std::string& reply :
       {std::string("{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}"),
        std::string("<|python_tag|>{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}"),
        std::string("  {\"name\": \"add\", \"arguments\": \"{\\\"a\\\":1,\\\"b\\\":2}\"}\n")}) {
    const ParsedReply r = ParseToolCalls(reply, kNames);
    ASSERT_EQ(r.calls.size(), 1u) << reply;
    EXPECT_EQ(r.calls[0].name, "add");
    EXPECT_EQ(r.calls[0].arguments, "{\"a\":1,\"b\":2}");
    EXPECT_EQ(r.content, "");
  }
}

// A stream sends text up to where a call starts or may start.
TEST(ToolCalls, StreamedContentStopsWhereACallMayStart) {
  EXPECT_EQ(ContentPrefix("Hello there"), 11u);
  EXPECT_EQ(ContentPrefix("Hello <tool"), 6u);  // may become <tool_call>
  EXPECT_EQ(ContentPrefix("Hello <tool_call>\n{\"na"), 6u);
  EXPECT_EQ(ContentPrefix("Hello <b>"), 9u);
  EXPECT_EQ(ContentPrefix("  {\"name\""), 0u);  // a Llama call is the whole reply
  EXPECT_EQ(ContentPrefix("<|python"), 0u);
  EXPECT_EQ(ContentPrefix(""), 0u);
}

// The response: the calls as OpenAI shapes them, the content null when the
// reply was only calls, finish_reason "tool_calls".
TEST(ToolCalls, ChatResponseCarriesTheCalls) {
  CompletionCall call;
  call.chat = true;
  call.tool_names = kNames;
  const ResponseMeta meta{"chatcmpl-7", 1, "m"};
  GenerationEvent done;
  done.kind = GenerationEvent::Kind::kDone;
  const Tokenizer tokenizer = Tokenizer::Load(test::Stories260K());  // logprobs are off: not read
  const Json r = CompletionResponse(
      call, meta, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>", done, tokenizer);
  const Json& choice = r["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(choice["message"]["tool_calls"][0]["id"], "call_chatcmpl-7_0");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["type"], "function");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "add");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["arguments"], "{\"a\":1}");
  // Without tools in the request the same text is content.
  call.tool_names.clear();
  const Json plain = CompletionResponse(call, meta, "<tool_call>x</tool_call>", done, tokenizer);
  EXPECT_EQ(plain["choices"][0]["message"]["content"], "<tool_call>x</tool_call>");
  EXPECT_EQ(plain["choices"][0]["finish_reason"], "stop");
}

// A forced call (tool_choice "required" or named) starts the reply in the
// template's shape; what the model writes after it completes the call.
TEST(ToolCalls, ForcedCallStartsInTheTemplatesShape) {
  const std::string qwen_prompt = "<|im_start|>system\nReturn calls in <tool_call></tool_call> tags.";
  const std::string llama_prompt = "<|start_header_id|>user<|end_header_id|>\nRespond with JSON.";
  EXPECT_EQ(ForcedCallStart(qwen_prompt, ""), "<tool_call>\n{\"name\": \"");
  EXPECT_EQ(ForcedCallStart(qwen_prompt, "add"), "<tool_call>\n{\"name\": \"add\", \"arguments\": ");
  EXPECT_EQ(ForcedCallStart(llama_prompt, ""), "{\"name\": \"");
  EXPECT_EQ(ForcedCallStart(llama_prompt, "add"), "{\"name\": \"add\", \"parameters\": ");

  CompletionCall call;
  call.chat = true;
  call.tool_names = {"add"};
  const ResponseMeta meta{"chatcmpl-8", 1, "m"};
  GenerationEvent done;
  done.kind = GenerationEvent::Kind::kDone;
  const Tokenizer tokenizer = Tokenizer::Load(test::Stories260K());  // logprobs are off: not read
  for (const std::string& prompt : {qwen_prompt, llama_prompt}) {
    call.reply_start = ForcedCallStart(prompt, "add");
    const bool hermes = prompt == qwen_prompt;
    const Json r =
        CompletionResponse(call, meta, hermes ? "{\"a\": 2}}\n</tool_call>" : "{\"a\": 2}}", done, tokenizer);
    const Json& choice = r["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << prompt;
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << prompt;
    EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "add");
    EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["arguments"], "{\"a\":2}");
    // A reply that does not finish the call is content, forced start included.
    const Json broken = CompletionResponse(call, meta, "once upon", done, tokenizer);
    EXPECT_EQ(broken["choices"][0]["message"]["content"], call.reply_start + "once upon");
    EXPECT_EQ(broken["choices"][0]["finish_reason"], "stop");
  }
}

}  // namespace
}  // namespace swan
