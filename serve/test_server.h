// A `swan serve` HTTP server for tests, on a free loopback port and its own
// thread. Include only from files compiled with HTTPLIB_CFLAGS.
#pragma once

#include <httplib.h>

#include <thread>

#include "serve/chat_template.h"
#include "serve/engine.h"
#include "serve/http_server.h"

namespace swan::test {

// A server on a free loopback port, run on its own thread.
class TestServer {
 public:
  TestServer(const LanguageModel& model, const Tokenizer& tokenizer, EngineOptions engine_options,
             ConnectionLimits limits = {}, const std::string& chat_template = kFallbackChatTemplate)
      : engine_(model, tokenizer, engine_options),
        chat_template_(chat_template, "<s>", "</s>", "test template"),
        server_(engine_, tokenizer, chat_template_,
                ServerOptions{"127.0.0.1", 0, "stories260K", false, false, limits}) {
    server_.Bind();
    thread_ = std::thread([this] { server_.Run(); });
  }
  ~TestServer() {
    server_.Stop();
    thread_.join();
  }
  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", server_.port());
    c.set_read_timeout(30, 0);
    return c;
  }
  Engine& engine() { return engine_; }
  int port() const { return server_.port(); }

 private:
  Engine engine_;
  ChatTemplate chat_template_;
  HttpServer server_;
  std::thread thread_;
};

}  // namespace swan::test
