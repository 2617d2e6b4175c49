// The Jinja subset on the chat templates that Llama 3, Qwen 2.5, Mistral
// and Gemma 3 ship (written out here from their published structure), the
// whitespace rules transformers renders them with, and the errors.
#include "serve/chat_template.h"

#include <gtest/gtest.h>

#include "serve/jinja.h"

namespace swan {
namespace {

using jinja::Json;

const char kLlama3[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content "
    "}}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' "
    "}}{% "
    "endif %}";

const char kQwen25[] = R"({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)";

const char kMistralV1[] =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) "
    "%}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif "
    "%}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif "
    "message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only "
    "user and assistant roles are supported!') }}{% endif %}{% endfor %}";

const char kMistralV3[] = R"({%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {{- tool | tojson }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
            {%- endfor %}
            {{- "][/AVAILABLE_TOOLS]" }}
        {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
)";

const char kGemma3[] = R"({{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>
' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model
'}}
{%- endif -%}
)";

// Qwen3's (its tokenizer_config.json, 2025): thinking kept only after the
// last user query, tools as Qwen2.5.
const char* kQwen3 = R"({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %})";

Json Conversation() {
  return Json::array({{{"role", "system"}, {"content", "Be brief."}},
                      {{"role", "user"}, {"content", "Hi"}},
                      {{"role", "assistant"}, {"content", "Hello!"}},
                      {{"role", "user"}, {"content", "Bye"}}});
}

TEST(ChatTemplate, Llama3) {
  ChatTemplate t(kLlama3, "<|begin_of_text|>", "<|eot_id|>", "test");
  EXPECT_EQ(t.Apply(Conversation()),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, Qwen25WithAndWithoutTools) {
  ChatTemplate t(kQwen25, "", "<|im_end|>", "test");
  const Json user = Json::array({{{"role", "user"}, {"content", "Hello"}}});
  EXPECT_EQ(t.Apply(user),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t.Apply(Conversation(), false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n");
  const Json tools = Json::parse(
      R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "required": ["city"]}}}])");
  const std::string with_tools = t.Apply(user, true, tools);
  EXPECT_NE(with_tools.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                            "\"parameters\": {\"type\": \"object\", \"required\": [\"city\"]}}}\n</tools>"),
            std::string::npos)
      << with_tools;
  // An assistant tool call and the tool's answer.
  const Json calls = Json::parse(R"([
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
    {"role": "tool", "content": "-3 C"}])");
  EXPECT_NE(t.Apply(calls).find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                "{\"city\": \"Oslo\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n"
                                "-3 C\n</tool_response><|im_end|>\n<|im_start|>assistant\n"),
            std::string::npos)
      << t.Apply(calls);
}

// Qwen3: an earlier assistant turn loses its <think> part (the history
// before the last query keeps only answers), and tool calls and answers
// take Qwen2.5's form.
TEST(ChatTemplate, Qwen3ThinkingAndTools) {
  ChatTemplate t(kQwen3, "", "<|im_end|>", "test");
  const Json thought = Json::array({{{"role", "system"}, {"content", "Be brief."}},
                                    {{"role", "user"}, {"content", "Hi"}},
                                    {{"role", "assistant"}, {"content", "<think>\nhmm\n</think>\n\nHello!"}},
                                    {{"role", "user"}, {"content", "Bye"}}});
  EXPECT_EQ(t.Apply(thought),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
  const Json tools = Json::parse(
      R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "required": ["city"]}}}])");
  const Json calls = Json::parse(R"([
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
    {"role": "tool", "content": "-3 C"}])");
  const std::string with_tools = t.Apply(calls, true, tools);
  EXPECT_NE(with_tools.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                            "\"parameters\": {\"type\": \"object\", \"required\": [\"city\"]}}}\n</tools>"),
            std::string::npos)
      << with_tools;
  EXPECT_NE(with_tools.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                            "{\"city\": \"Oslo\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n"
                            "-3 C\n</tool_response><|im_end|>\n<|im_start|>assistant\n"),
            std::string::npos)
      << with_tools;
}

TEST(ChatTemplate, MistralAlternationAndSystemMessage) {
  ChatTemplate v1(kMistralV1, "<s>", "</s>", "test");
  const Json all = Conversation();
  const Json no_system = Json(all.begin() + 1, all.end());
  EXPECT_EQ(v1.Apply(no_system), "<s>[INST] Hi [/INST]Hello!</s>[INST] Bye [/INST]");
  try {
    v1.Apply(Conversation());
    ADD_FAILURE() << "a system message should be refused";
  } catch (const jinja::TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("Conversation roles must alternate"), std::string::npos) << e.what();
  }

  ChatTemplate v3(kMistralV3, "<s>", "</s>", "test");
  EXPECT_EQ(v3.Apply(Conversation()), "<s>[INST] Hi[/INST] Hello!</s>[INST] Be brief.\n\nBye[/INST]");
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  EXPECT_EQ(v3.Apply(no_system, true, tools),
            "<s>[INST] Hi[/INST] Hello!</s>[AVAILABLE_TOOLS] [{\"type\": \"function\", \"function\": "
            "{\"name\": \"f\"}}][/AVAILABLE_TOOLS][INST] Bye[/INST]");
  const Json twice = Json::array({{{"role", "user"}, {"content", "a"}}, {{"role", "user"}, {"content", "b"}}});
  EXPECT_THROW(v3.Apply(twice), jinja::TemplateError);
}

TEST(ChatTemplate, Gemma3StringAndListContent) {
  ChatTemplate t(kGemma3, "<bos>", "<eos>", "test");
  EXPECT_EQ(t.Apply(Conversation()),
            "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
  const Json parts =
      Json::parse(R"([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " What is this? "}]}])");
  EXPECT_EQ(t.Apply(parts, false), "<bos><start_of_turn>user\n<start_of_image>What is this?<end_of_turn>\n");
}

TEST(Jinja, TrimBlocksAndLstripBlocks) {
  jinja::Template t(
      "{% for m in messages %}\n  {% if m.role == 'user' %}\nU: {{ m.content }}\n  {% endif %}\n{% endfor "
      "%}");
  EXPECT_EQ(t.Render({{"messages", Conversation()}}), "U: Hi\nU: Bye\n");
  jinja::Template keep("a {%+ if true %}b{% endif +%}\nc {# note #}d");
  EXPECT_EQ(keep.Render(Json::object()), "a b\nc d");
}

TEST(Jinja, Expressions) {
  auto render = [](const char* src, const Json& ctx = Json::object()) { return jinja::Template(src).Render(ctx); };
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 % 3 }} {{ 1.5 * 2 }} {{ 'a' ~ 1 }} {{ [1, 2, 3][-1] }}"), "3 2 3.0 a1 3");
  EXPECT_EQ(render("{{ 'x' if none is none else 'y' }}{{ undefined_thing is defined }}{{ 'b' in 'abc' }}"),
            "xFalseTrue");
  EXPECT_EQ(render("{{ '  hi '.strip() }}|{{ 'a,b'.split(',') | join('-') }}|{{ 'Hi' | upper }}|{{ 'abc'[1:] }}"),
            "hi|a-b|HI|bc");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"b", 1}, {"a", 2}}}}),
            "b=1;a=2;");
  EXPECT_EQ(render("{% for x in xs if x > 1 %}{{ loop.index }}:{{ x }}{% else %}none{% endfor %}", {{"xs", {1, 2, 3}}}),
            "1:22:3");
  EXPECT_EQ(render("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% set x = 1 %}{% for i in range(3) %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{{ d | tojson }}|{{ d | tojson(indent=2) }}", {{"d", {{"a", {1, "é"}}}}}),
            "{\"a\": [1, \"é\"]}|{\n  \"a\": [\n    1,\n    \"é\"\n  ]\n}");
  EXPECT_EQ(render("{{ xs | map(attribute='n') | list | length }}{{ missing | default('dflt') }}",
                   {{"xs", Json::array({{{"n", 1}}, {{"n", 2}}})}}),
            "2dflt");
}

// Found by the chat-template fuzzer: a string as a slice bound escaped as
// the JSON library's exception and ended the program.
TEST(Jinja, SliceBoundsAndRangeTakeIntegers) {
  const Json vars = {{"s", "abcd"}, {"x", "1"}};
  EXPECT_EQ(jinja::Template("{{ s[1:3] }}|{{ s[::-1] }}|{{ s[true:] }}").Render(vars), "bc|dcba|bcd");
  EXPECT_EQ(jinja::Template("{% for i in range(1, 4) %}{{ i }}{% endfor %}").Render(vars), "123");
  for (const std::string bad : {"{{ s[x:] }}", "{{ s[:x] }}", "{{ s[::x] }}", "{{ s[1.5:] }}", "{{ range(x) }}",
                                "{{ range(0, x) }}", "{{ range(nothing) }}"}) {
    try {
      jinja::Template(bad).Render(vars);
      ADD_FAILURE() << bad << " rendered";
    } catch (const jinja::TemplateError& e) {
      EXPECT_NE(std::string(e.what()).find("must be an integer"), std::string::npos) << e.what();
    }
  }
  try {
    jinja::Template("{% for i in range(100000000000) %}{% endfor %}").Render(vars);
    ADD_FAILURE() << "a range of 1e11 numbers rendered";
  } catch (const jinja::TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("range() of more than"), std::string::npos) << e.what();
  }
}

// Nested loops over strings (a character an item) had made a 1 KB template
// from chat_template_fuzz run for minutes; a render now has a budget of
// loop iterations and of output.
TEST(Jinja, ARenderHasABudget) {
  const Json vars = {{"s", std::string(100, 'x')}};
  // 100^3 iterations (and as many items made): over the budget
  try {
    jinja::Template("{% for a in s %}{% for b in s %}{% for c in s %}{% endfor %}{% endfor %}{% endfor %}")
        .Render(vars);
    ADD_FAILURE() << "a million iterations rendered";
  } catch (const jinja::TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("loop iterations in one render"), std::string::npos) << e.what();
  }
  // 100^2 (items, a filter's and the loops' iterations: 20300): within it
  EXPECT_EQ(jinja::Template("{% for a in s if a == 'x' %}{% for b in s %}{% endfor %}{% endfor %}ok").Render(vars),
            "ok");
  // 20000 iterations of a 4 KB string: 80 MB of output, over the budget
  const Json big = {{"s", std::string(4096, 'y')}};
  try {
    jinja::Template("{% for i in range(20000) %}{{ s }}{% endfor %}").Render(big);
    ADD_FAILURE() << "80 MB rendered";
  } catch (const jinja::TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("MiB of output in one render"), std::string::npos) << e.what();
  }
}

TEST(Jinja, ErrorsNameTheProblem) {
  EXPECT_THROW(jinja::Template("{% if x %}never closed"), jinja::TemplateError);
  EXPECT_THROW(jinja::Template("{% macro m() %}{% endmacro %}"), jinja::TemplateError);
  EXPECT_THROW(jinja::Template("{{ 'unterminated }}"), jinja::TemplateError);
  EXPECT_THROW(jinja::Template("{% endfor %}"), jinja::TemplateError);
  EXPECT_THROW(jinja::Template("{{ 1 + 'a' }}").Render(Json::object()), jinja::TemplateError);
  EXPECT_THROW(jinja::Template("{{ x | nosuchfilter }}").Render(Json::object()), jinja::TemplateError);
  // Found by the chat-template fuzzer: brackets, parentheses, `not` and `-`
  // nested a thousand deep overflowed the stack; 100 levels are allowed.
  for (const std::string open : {"[", "(", "not ", "-"}) {
    const std::string close = open == "[" ? "]" : open == "(" ? ")" : "";
    std::string deep, shallow;
    for (int i = 0; i < 1000; ++i) deep += open;
    deep += "1";
    for (int i = 0; i < 1000; ++i) deep += close;
    for (int i = 0; i < 90; ++i) shallow += open;
    shallow += "1";
    for (int i = 0; i < 90; ++i) shallow += close;
    try {
      jinja::Template("{{ " + deep + " }}");
      ADD_FAILURE() << open << " nested 1000 deep parsed";
    } catch (const jinja::TemplateError& e) {
      EXPECT_NE(std::string(e.what()).find("nested more than 100 deep"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(jinja::Template("{{ " + shallow + " }}")) << open;
  }
  // and blocks likewise
  for (const std::string block : {"if x", "for x in y"}) {
    const std::string end = block == "if x" ? "{% endif %}" : "{% endfor %}";
    std::string deep, shallow;
    for (int i = 0; i < 1000; ++i) deep += "{% " + block + " %}";
    for (int i = 0; i < 1000; ++i) deep += end;
    for (int i = 0; i < 90; ++i) shallow += "{% " + block + " %}";
    for (int i = 0; i < 90; ++i) shallow += end;
    try {
      jinja::Template{deep};
      ADD_FAILURE() << block << " nested 1000 deep parsed";
    } catch (const jinja::TemplateError& e) {
      EXPECT_NE(std::string(e.what()).find("blocks nested more than 100 deep"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(jinja::Template{shallow}) << block;
  }
}

TEST(ChatTemplate, FallbackForModelsWithout) {
  ChatTemplate t(kFallbackChatTemplate, "<s>", "</s>", "built-in fallback");
  EXPECT_EQ(t.Apply(Json::array({{{"role", "user"}, {"content", " Tell a story. "}}})),
            "<s>user: Tell a story.\nassistant:");
}

// Found by the chat-template fuzzer: numbers past int64 threw
// std::out_of_range (a crash past the parser's contract); now a
// TemplateError that names them.
TEST(Jinja, NumbersOutOfRangeAreTemplateErrors) {
  auto render = [](const char* src) { return jinja::Template(src).Render(Json::object()); };
  EXPECT_THROW(render("{{ 5555555555555555555555555555 }}"), jinja::TemplateError);
  EXPECT_THROW(render("{{ '99999999999999999999999' | int }}"), jinja::TemplateError);
  EXPECT_THROW(render("{{ 1e300 | int }}"), jinja::TemplateError);
  EXPECT_EQ(render("{{ '-5' | int }} {{ 2.7 | int }} {{ 'x' | int }} {{ 9223372036854775807 }}"),
            "-5 2 0 9223372036854775807");
}

// Found by the chat-template fuzzer (UBSan): integer arithmetic past int64
// was undefined behaviour; now a TemplateError. Floor division and the
// remainder stay exact integers, with Python's signs.
TEST(Jinja, IntegerOverflowIsATemplateError) {
  auto render = [](const char* src) { return jinja::Template(src).Render(Json::object()); };
  EXPECT_THROW(render("{{ 44444 * 44444 * 444444 * 44444 * 44 }}"), jinja::TemplateError);
  EXPECT_THROW(render("{{ 9223372036854775807 + 1 }}"), jinja::TemplateError);
  EXPECT_THROW(render("{{ -9223372036854775807 - 2 }}"), jinja::TemplateError);
  EXPECT_THROW(render("{{ (-9223372036854775807 - 1) // -1 }}"), jinja::TemplateError);
  EXPECT_THROW(render("{{ -(-9223372036854775807 - 1) }}"), jinja::TemplateError);
  EXPECT_EQ(render("{{ (-9223372036854775807 - 1) % -1 }} {{ 9223372036854775807 // 2 }} {{ 7 // -2 }} {{ 7 % -2 }}"),
            "0 4611686018427387903 -4 -1");
}

}  // namespace
}  // namespace swan
