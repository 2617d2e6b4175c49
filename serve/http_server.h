// The HTTP front of `swan serve` (cpp-httplib): OpenAI-compatible
//   POST /v1/completions, POST /v1/chat/completions (stream: true as
//   server-sent events), GET /v1/models, GET /health
// over an Engine. Errors are OpenAI-style JSON bodies: 400 for bad input,
// 404 for unknown paths, 429 when the engine refuses (busy or over the KV
// budget), 500 when generation fails. A streaming client that disconnects
// cancels its request, which frees the sequence at the next engine step.
#pragma once

#include <memory>
#include <string>

#include "serve/chat_template.h"
#include "serve/connection_limits.h"
#include "serve/engine.h"

namespace swan {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (see HttpServer::port())
  std::string model_name = "swan";
  bool verbose = false;
  bool accept_any_model = false;  // see ApiContext
  ConnectionLimits limits;
};

class HttpServer {
 public:
  // `engine`, `tokenizer` and `chat_template` must outlive the server.
  HttpServer(Engine& engine, const Tokenizer& tokenizer, const ChatTemplate& chat_template,
             const ServerOptions& options);
  ~HttpServer();

  // Binds the socket; throws std::runtime_error when it cannot.
  void Bind();
  int port() const { return port_; }
  // Serves until Stop() (from another thread or a signal handler's thread).
  void Run();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace swan
