#include "serve/tool_calls.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace swan {
namespace {

constexpr char kOpen[] = "<tool_call>";
constexpr char kClose[] = "</tool_call>";
constexpr char kPythonTag[] = "<|python_tag|>";

std::string Trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

// {"name", "arguments" | "parameters"} naming one of `names`.
bool ReadCall(const std::string& text, const std::vector<std::string>& names, ToolCall* call) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  const std::string name = j["name"];
  if (std::find(names.begin(), names.end(), name) == names.end()) return false;
  const char* key = j.contains("arguments") ? "arguments" : "parameters";
  const nlohmann::json args = j.contains(key) ? j[key] : nlohmann::json::object();
  if (!args.is_object() && !args.is_string()) return false;
  call->name = name;
  call->arguments = args.is_string() ? args.get<std::string>() : args.dump();
  return true;
}

}  // namespace

ParsedReply ParseToolCalls(const std::string& reply, const std::vector<std::string>& names) {
  ParsedReply out;
  // Llama 3.1: the whole reply one call.
  std::string whole = Trim(reply);
  if (whole.rfind(kPythonTag, 0) == 0) whole = Trim(whole.substr(sizeof(kPythonTag) - 1));
  ToolCall call;
  if (!whole.empty() && whole.front() == '{' && ReadCall(whole, names, &call)) {
    out.calls.push_back(call);
    return out;
  }
  // Hermes / Qwen: blocks, with content around them.
  size_t at = 0;
  while (at < reply.size()) {
    const size_t open = reply.find(kOpen, at);
    if (open == std::string::npos) break;
    const size_t body = open + sizeof(kOpen) - 1;
    const size_t close = reply.find(kClose, body);
    const size_t end = close == std::string::npos ? reply.size() : close;
    if (!ReadCall(Trim(reply.substr(body, end - body)), names, &call)) {
      out.content += reply.substr(at, body - at);  // not a call: stays text
      at = body;
      continue;
    }
    out.content += reply.substr(at, open - at);
    out.calls.push_back(call);
    at = close == std::string::npos ? reply.size() : close + sizeof(kClose) - 1;
  }
  out.content += reply.substr(std::min(at, reply.size()));
  if (!out.calls.empty()) out.content = Trim(out.content);
  return out;
}

std::string ForcedCallStart(const std::string& rendered_prompt, const std::string& name) {
  const bool hermes = rendered_prompt.find(kOpen) != std::string::npos;
  const std::string start = hermes ? std::string(kOpen) + "\n{\"name\": \"" : "{\"name\": \"";
  if (name.empty()) return start;
  return start + name + (hermes ? "\", \"arguments\": " : "\", \"parameters\": ");
}

size_t ContentPrefix(const std::string& reply) {
  const size_t first = reply.find_first_not_of(" \t\r\n");
  if (first != std::string::npos &&
      (reply[first] == '{' || reply.compare(first, sizeof(kPythonTag) - 1, kPythonTag) == 0 ||
       std::string(kPythonTag).rfind(reply.substr(first), 0) == 0))
    return 0;
  const size_t open = reply.find(kOpen);
  if (open != std::string::npos) return open;
  // A prefix of "<tool_call>" at the end may become one.
  for (size_t n = std::min(reply.size(), sizeof(kOpen) - 2); n > 0; --n)
    if (reply.compare(reply.size() - n, n, kOpen, n) == 0) return reply.size() - n;
  return reply.size();
}

}  // namespace swan
