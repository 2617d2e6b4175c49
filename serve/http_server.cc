#include "serve/http_server.h"

#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "serve/guarded_server.h"
#include "serve/openai_api.h"
#include "util/memory.h"

namespace swan {
namespace {

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void SendJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n", "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& message, const std::string& param = {},
               const std::string& code = {}) {
  SendJson(res, status, ErrorBody(status, message, param, code));
}

std::string SseEvent(const Json& data) {
  return "data: " + data.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

// What a streaming response carries between calls of its content provider.
struct StreamState {
  CompletionCall call;
  ResponseMeta meta;
  std::shared_ptr<RequestStream> stream;
  bool sent_role = false;
  // With tools: the reply so far, and how much of it went out as content
  // (text where a call may start is held until the end).
  std::string reply;
  size_t sent = 0;
};

}  // namespace

struct HttpServer::Impl {
  Engine& engine;
  const Tokenizer& tokenizer;
  const ChatTemplate& chat_template;
  ServerOptions options;
  GuardedServer server;
  std::atomic<uint64_t> next_id{1};

  Impl(Engine& e, const Tokenizer& t, const ChatTemplate& c, const ServerOptions& o)
      : engine(e), tokenizer(t), chat_template(c), options(o), server(o.limits) {}

  void Routes() {
    server.set_payload_max_length(size_t(16) << 20);
    // SO_REUSEADDR only: a restart may take the port over from connections
    // in TIME_WAIT, but not from a server still listening (httplib's
    // default also sets SO_REUSEPORT, and two servers then shared one port).
    server.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<void*>(&yes), sizeof(yes));
    });
    server.set_keep_alive_max_count(1000);
    // httplib reads a body of a Content-Length that is not a number (-5)
    // until the request deadline; answer at once, and close, since where
    // the body ends is unknown.
    server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!req.has_header("Content-Length")) return httplib::Server::HandlerResponse::Unhandled;
      const std::string length = req.get_header_value("Content-Length");
      if (!length.empty() && length.size() <= 19 && length.find_first_not_of("0123456789") == std::string::npos)
        return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("Connection", "close");
      SendError(res, 400, "Content-Length must be a number of bytes, got '" + length.substr(0, 32) + "'", "",
                "invalid_content_length");
      return httplib::Server::HandlerResponse::Handled;
    });
    server.Get("/health", [this](const httplib::Request&, httplib::Response& res) { Health(res); });
    server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) { Models(res); });
    server.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string id = req.matches[1];
      if (id == options.model_name || options.accept_any_model)
        SendJson(res, 200, ModelObject());
      else
        SendError(res, 404, "The model '" + id + "' does not exist: this server serves '" + options.model_name + "'",
                  "model", "model_not_found");
    });
    server.Post("/v1/completions",
                [this](const httplib::Request& req, httplib::Response& res) { Complete(req, res, false); });
    server.Post("/v1/chat/completions",
                [this](const httplib::Request& req, httplib::Response& res) { Complete(req, res, true); });
    server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 404)
        SendError(res, 404, "no route for " + req.method + " " + req.path, "", "not_found");
      else if (res.status == 413)
        SendError(res, 413, "the request body is too large", "", "too_large");
      else
        SendError(res, res.status, "HTTP error " + std::to_string(res.status));
    });
    server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      SendError(res, 500, what, "", "internal_error");
    });
  }

  void Health(httplib::Response& res) {
    const EngineStats s = engine.Stats();
    // 503 while draining, so that a load balancer stops sending requests.
    SendJson(res, s.draining ? 503 : 200,
             {{"status", s.draining ? "draining" : "ok"},
              {"running", s.running},
              {"waiting", s.waiting},
              {"kv_budget_bytes", s.kv_budget_bytes},
              {"kv_reserved_bytes", s.kv_reserved_bytes},
              {"kv_bytes", s.kv_bytes},
              {"prompt_cache_bytes", s.prompt_cache_bytes},
              {"prompt_cache_entries", s.prompt_cache_entries},
              {"prompt_cache_tokens", s.prompt_cache_tokens},
              {"prompt_cache_checkpoints", s.prompt_cache_checkpoints},
              {"resident_bytes", ResidentBytes()},
              {"anonymous_resident_bytes", AnonymousResidentBytes()},
              {"allocator_in_use_bytes", AllocatorBytes().in_use},
              {"allocator_free_bytes", AllocatorBytes().free},
              {"requests_done", s.requests_done},
              {"prompt_tokens", s.prompt_tokens},
              {"prompt_tokens_reused", s.prompt_tokens_reused},
              {"tokens_generated", s.tokens_generated}});
  }

  Json ModelObject() const {
    return {{"id", options.model_name},
            {"object", "model"},
            {"created", UnixSeconds()},
            {"owned_by", "swan"},
            {"context_length", engine.context_length()},
            {"attention_plan", engine.plan().spec}};
  }

  void Models(httplib::Response& res) {
    SendJson(res, 200, {{"object", "list"}, {"data", Json::array({ModelObject()})}});
  }

  void Complete(const httplib::Request& req, httplib::Response& res, bool chat) {
    ApiContext ctx{&tokenizer, &chat_template, engine.context_length(), options.model_name, options.accept_any_model};
    auto state = std::make_shared<StreamState>();
    try {
      state->call = ParseCompletionRequest(req.body, chat, ctx);
      state->reply = state->call.reply_start;  // held back: it starts a call
      state->meta.id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id++);
      state->meta.created = UnixSeconds();
      state->meta.model = options.model_name;
      state->call.generation.id = state->meta.id;
      state->stream = engine.Submit(state->call.generation);
    } catch (const ApiError& e) {
      return SendError(res, e.status, e.what(), e.param, e.code);
    } catch (const EngineStopping& e) {
      return SendError(res, 503, e.what(), "", "shutting_down");
    } catch (const EngineRejected& e) {
      res.set_header("Retry-After", "1");
      return SendError(res, 429, e.what(), "", "kv_budget_or_queue");
    } catch (const std::invalid_argument& e) {
      return SendError(res, 400, e.what(), "", "invalid_value");
    }
    if (state->call.stream) return Stream(res, state);

    std::string text;
    GenerationEvent ev;
    for (;;) {
      if (!state->stream->Next(&ev, std::chrono::seconds(1))) continue;
      if (ev.kind == GenerationEvent::Kind::kDone) break;
      text += ev.text;
    }
    if (ev.finish == FinishReason::kError) return SendError(res, 500, "generation failed: " + ev.error);
    SendJson(res, 200, CompletionResponse(state->call, state->meta, text, ev, tokenizer));
  }

  void Stream(httplib::Response& res, std::shared_ptr<StreamState> state) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [state](size_t, httplib::DataSink& sink) {
          auto write = [&](const std::string& s) {
            if (sink.write(s.data(), s.size())) return true;
            state->stream->Cancel();  // the client went away
            return false;
          };
          if (state->call.chat && !state->sent_role) {
            state->sent_role = true;
            return write(SseEvent(StreamChunk(state->call, state->meta, "", {}, nullptr, true)));
          }
          if (state->call.echo && !state->sent_role) {  // the prompt's text first
            state->sent_role = true;
            return write(SseEvent(StreamChunk(state->call, state->meta, state->call.prompt_text)));
          }
          GenerationEvent ev;
          // A comment line now and then finds a client that left while its
          // request waits or prefills.
          if (!state->stream->Next(&ev, std::chrono::milliseconds(500))) return write(": keep-alive\n\n");
          const bool tools = !state->call.tool_names.empty();
          if (ev.kind == GenerationEvent::Kind::kText && !tools)
            return write(SseEvent(StreamChunk(state->call, state->meta, ev.text)));
          if (ev.kind == GenerationEvent::Kind::kText) {
            state->reply += ev.text;
            const size_t ready = ContentPrefix(state->reply);
            if (ready <= state->sent) return true;
            const std::string piece = state->reply.substr(state->sent, ready - state->sent);
            state->sent = ready;
            return write(SseEvent(StreamChunk(state->call, state->meta, piece)));
          }
          std::vector<ToolCall> calls;
          if (tools && state->sent < state->reply.size()) {  // what was held back: calls, or content after all
            const ParsedReply rest = ParseToolCalls(state->reply.substr(state->sent), state->call.tool_names);
            calls = rest.calls;
            if (!rest.content.empty() && !write(SseEvent(StreamChunk(state->call, state->meta, rest.content))))
              return false;
            if (!calls.empty()) {
              Json chunk = StreamChunk(state->call, state->meta, "");
              chunk["choices"][0]["delta"]["tool_calls"] = ToolCallsJson(state->meta, calls, true);
              if (!write(SseEvent(chunk))) return false;
            }
          }
          if (ev.finish == FinishReason::kError) {
            if (!write(SseEvent(ErrorBody(500, "generation failed: " + ev.error)))) return false;
          } else {
            // Usage comes once, in its own chunk, and only when asked for (OpenAI's stream_options).
            Json last = StreamChunk(state->call, state->meta, "", ev.finish);
            if (!calls.empty()) last["choices"][0]["finish_reason"] = "tool_calls";
            if (!write(SseEvent(last))) return false;
            if (state->call.include_usage) {
              Json usage_only = StreamChunk(state->call, state->meta, "", {}, &ev.usage);
              usage_only["choices"] = Json::array();
              if (!write(SseEvent(usage_only))) return false;
            }
          }
          if (!write("data: [DONE]\n\n")) return false;
          sink.done();
          return true;
        },
        [state](bool success) {
          if (!success) state->stream->Cancel();
        });
  }
};

HttpServer::HttpServer(Engine& engine, const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                       const ServerOptions& options)
    : impl_(std::make_unique<Impl>(engine, tokenizer, chat_template, options)) {
  impl_->Routes();
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Bind() {
  const ServerOptions& o = impl_->options;
  if (o.port == 0) {
    port_ = impl_->server.bind_to_any_port(o.host);
    if (port_ < 0) port_ = 0;
  } else if (impl_->server.bind_to_port(o.host, o.port)) {
    port_ = o.port;
  }
  if (port_ > 0) impl_->server.RaiseBacklog();
  if (port_ <= 0)
    throw std::runtime_error("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                             " (in use, or not an address of this machine)");
}

void HttpServer::Run() { impl_->server.listen_after_bind(); }

void HttpServer::Stop() { impl_->server.stop(); }

}  // namespace swan
