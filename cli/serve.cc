// `swan serve`: an OpenAI-compatible HTTP server over a model under any
// attention plan, with continuous batching, a KV memory budget and prompt
// caching that works with sliding windows (serve/).
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/args.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "model/model.h"
#include "serve/chat_template.h"
#include "serve/engine.h"
#include "serve/http_server.h"
#include "model/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan serve -m DIR [--attn SPEC] [--host 127.0.0.1] [--port 8080] [--kv-budget MiB]\n"
      "                  [--chat-template FILE] [--parallel N] [--max-waiting N] [--batch B]\n"
      "                  [--checkpoint-interval N] [-c|--ctx C] [--kv TYPE] [--weights TYPE] [-t N]\n"
      "                  [--seq-threads N] [--threads-http N] [--name NAME] [--accept-any-model]\n"
      "                  [--client-connections N] [--request-timeout S] [--idle-timeout S]\n"
      "                  [--shutdown-grace S]\n"
      "                  [--prompt-cache MiB | --no-prompt-cache] [--deterministic] [--verbose]\n");
  options.Add(ModelOption(" with a tokenizer in its metadata (and its chat template, when it holds one)"))
      .Add(PlanOption("swa:256, hybrid:3:1"))
      .Add({{"--host"}, "H", "where to listen (default 127.0.0.1)"})
      .Add({{"--port"}, "P", "the port to listen on (default 8080; 0 = any free port)"})
      .Add({{"--kv-budget"},
            "MiB",
            "KV memory for running sequences and the prompt cache (default 1024); a request that does not fit "
            "waits, one larger than the budget gets 429"})
      .Add({{"--chat-template"},
            "FILE",
            "Jinja chat template (default: tokenizer_config.json's or the GGUF file's, else a plain 'role: "
            "content' fallback)"})
      .Add({{"--parallel"}, "N", "sequences advanced together (default 32)"})
      .Add({{"--max-waiting"}, "N", "queued requests before 429 (default 256)"})
      .Add(PrefillChunkOption(256, "per sequence"))
      .Add({{"--checkpoint-interval"},
            "N",
            "tokens between window-layer checkpoints for prompt caching (default 64), raised to a multiple of N "
            "of at least 3 window spans so that checkpoints cost less than full attention; none without a prompt "
            "cache"})
      .Add(ContextOption("; more is allowed"))
      .Add(KvOption("f32", /*decodes=*/true))
      .Add(WeightsOption())
      .Add(DeviceOption())
      .Add(ThreadsOption())
      .Add({{"--seq-threads"},
            "N",
            "threads inside one sequence's kernels (default 1: small models; 0 = all of -t, for large models); "
            "the decode steps of all running sequences run as one batched forward"})
      .Add({{"--threads-http"},
            "N",
            "open HTTP connections, all clients together (default 256); one more is answered 503 at once and "
            "closed"})
      .Add({{"--client-connections"},
            "N",
            "open connections from one client address (default 32); one more is answered 429 at once and closed"})
      .Add({{"--request-timeout"},
            "S",
            "a request's headers and body must arrive within S seconds of the connection (or, kept alive, of the "
            "request's first byte), else 408 (default 10)"})
      .Add({{"--idle-timeout"}, "S", "a kept-alive connection's wait for its next request (default 5)"})
      .Add({{"--name"},
            "NAME",
            "model name in responses (default: the directory's name); a request for another model gets 404 "
            "model_not_found, and GET /v1/models/NAME returns this one"})
      .Add({{"--accept-any-model"}, "", "serve requests whatever model they name"})
      .Add({{"--shutdown-grace"},
            "S",
            "on SIGTERM/SIGINT: take no new requests (503), give running ones S seconds to finish (default 10), "
            "then end them as cancelled, every stream with its final chunk and [DONE]"})
      .Add({{"--prompt-cache"},
            "MiB",
            "most memory finished requests' KV may keep for reuse (default: a quarter of --kv-budget; it always "
            "yields to running requests)"})
      .Add({{"--no-prompt-cache"}, "", "never reuse earlier requests' KV"})
      .Add({{"--deterministic"},
            "",
            "every answer bit for bit what the request gets alone, at any load (decode batches in groups of 8, "
            "and matrix products that sum alike on any number of threads; without it, so up to 8 sequences "
            "decoding together)"})
      .Add({{"--verbose"}, "", "one line per request: reused prompt tokens, finish"})
      .Text(
          "Endpoints: POST /v1/completions, POST /v1/chat/completions, GET /v1/models[/NAME], GET /health\n"
          "Request fields: logprobs (completions: N alternatives, with echo the prompt's too, and\n"
          "max_tokens 0 scores a prompt; chat: logprobs + top_logprobs), not with stream; tools go to\n"
          "the chat template and calls in the reply come back as tool_calls (tool_choice auto, none,\n"
          "required or a named function, which start the reply as a call); user is\n"
          "accepted and ignored; n, best_of, penalties, logit_bias, suffix and other response formats\n"
          "than text are refused with a 400 naming the field.\n");
  return options;
}

std::string DirName(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.rfind('/');
  return slash == std::string::npos ? d : d.substr(slash + 1);
}

}  // namespace

int RunServe(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  ApplyThreadsOption(args);
  if (!args.Has("-m")) throw std::invalid_argument("-m DIR is required\n" + flags.Help());
  const std::string dir = args.Get("-m", "");
  const double budget_mib = args.GetDouble("--kv-budget", 1024);
  if (!(budget_mib > 0)) throw std::invalid_argument("--kv-budget must be positive (MiB)");
  const long long port = args.GetInt("--port", 8080);
  if (port < 0 || port > 65535) throw std::invalid_argument("--port must be 0..65535");

  // Signals go to one thread that stops the server; block them before any
  // other thread starts so they all inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  RequireDeviceKv(args, KvTypeFromString(args.Get("--kv", "f32")));
  std::unique_ptr<LanguageModel> model = LoadModel(dir, LoadOptionsFrom(args));
  if (!model->CacheOnHost() && !args.Has("--no-prompt-cache"))
    std::fprintf(stderr,
                 "swan serve: the KV cache lives on the device; no prompt cache (earlier requests' KV is "
                 "not reused)\n");
  const Tokenizer tokenizer = LoadModelTokenizer(dir);
  const ChatTemplate chat_template =
      ChatTemplate::Load(ChatTemplateOptions{dir, args.Get("--chat-template", "")}, tokenizer);

  EngineOptions engine_options;
  engine_options.attn = args.Get("--attn", "");
  engine_options.kv_budget_bytes = size_t(budget_mib * 1024 * 1024);
  engine_options.max_running = int32_t(args.GetInt("--parallel", 32));
  engine_options.max_waiting = int32_t(args.GetInt("--max-waiting", 256));
  engine_options.prefill_chunk = int32_t(args.GetInt("--batch", 256));
  engine_options.checkpoint_interval = int32_t(args.GetInt("--checkpoint-interval", 64));
  engine_options.context_length = args.GetPositiveInt(ContextFlag(args), 0);
  engine_options.kv_type = KvTypeFromString(args.Get("--kv", "f32"));
  engine_options.prompt_cache = !args.Has("--no-prompt-cache");
  const double cache_mib = args.GetDouble("--prompt-cache", budget_mib / 4);
  if (!(cache_mib >= 0)) throw std::invalid_argument("--prompt-cache must be >= 0 (MiB)");
  engine_options.prompt_cache_bytes = size_t(cache_mib * 1024 * 1024);
  if (engine_options.prompt_cache_bytes == 0) engine_options.prompt_cache = false;
  engine_options.verbose = args.Has("--verbose");
  engine_options.deterministic = args.Has("--deterministic");
  engine_options.sequence_threads = int32_t(args.GetInt("--seq-threads", 1));
  if (engine_options.sequence_threads < 0) throw std::invalid_argument("--seq-threads must be >= 0");
  Engine engine(*model, tokenizer, engine_options);

  ServerOptions server_options;
  server_options.host = args.Get("--host", "127.0.0.1");
  server_options.port = int(port);
  ConnectionLimits& limits = server_options.limits;
  limits.max_connections = int(args.GetPositiveInt("--threads-http", 256));
  limits.max_per_client = int(args.GetPositiveInt("--client-connections", 32));
  limits.request_timeout_s = args.GetDouble("--request-timeout", 10);
  limits.idle_timeout_s = args.GetDouble("--idle-timeout", 5);
  if (!(limits.request_timeout_s > 0)) throw std::invalid_argument("--request-timeout must be > 0 seconds");
  if (!(limits.idle_timeout_s > 0)) throw std::invalid_argument("--idle-timeout must be > 0 seconds");
  server_options.model_name = args.Get("--name", DirName(dir));
  server_options.accept_any_model = args.Has("--accept-any-model");
  const double grace_s = args.GetDouble("--shutdown-grace", 10);
  if (!(grace_s >= 0)) throw std::invalid_argument("--shutdown-grace must be >= 0 seconds");
  server_options.verbose = engine_options.verbose;
  HttpServer server(engine, tokenizer, chat_template, server_options);
  server.Bind();
  std::fprintf(stderr,
               "swan serve: listening on http://%s:%d | model %s | plan %s | context %lld | KV budget %.0f MiB | "
               "chat template: %s | checkpoints every %lld tokens\n",
               server_options.host.c_str(), server.port(), server_options.model_name.c_str(),
               engine.plan().spec.empty() ? "(model)" : engine.plan().spec.c_str(), (long long)engine.context_length(),
               budget_mib, chat_template.origin().c_str(), (long long)engine.checkpoint_spacing());
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    const EngineStats s = engine.Stats();
    std::fprintf(stderr,
                 "swan serve: signal %d: no new requests; %lld running and %lld waiting get up to %.0f s to "
                 "finish\n",
                 sig, (long long)s.running, (long long)s.waiting, grace_s);
    engine.Drain(std::chrono::milliseconds(int64_t(grace_s * 1000)));
    std::fprintf(stderr, "swan serve: stopped\n");
    server.Stop();
  });
  server.Run();
  // Stopped by a signal, or the server failed: wake the waiter either way.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return 0;
}

}  // namespace swan::cli
