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
#include "cli/weights_option.h"
#include "cli/threads_option.h"
#include "model/model.h"
#include "serve/chat_template.h"
#include "serve/engine.h"
#include "serve/http_server.h"
#include "model/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace swan::cli {
namespace {

const char kUsage[] =
    "usage: swan serve -m DIR [--attn SPEC] [--host 127.0.0.1] [--port 8080] [--kv-budget MiB]\n"
    "                  [--chat-template FILE] [--parallel N] [--max-waiting N] [--batch B]\n"
    "                  [--checkpoint-interval N] [--ctx N] [--kv f32|bf16|q8_0] [--weights TYPE] [-t N]\n"
    "                  [--seq-threads N] [--threads-http N] [--name NAME] [--accept-any-model]\n"
    "                  [--client-connections N] [--request-timeout S] [--idle-timeout S]\n"
    "                  [--shutdown-grace S]\n"
    "                  [--prompt-cache MiB | --no-prompt-cache] [--verbose]\n"
    "  -m DIR                 Hugging Face model directory, or a GGUF file with a tokenizer in\n"
    "                         its metadata (and its chat template, when it holds one)\n"
    "  --attn SPEC            attention plan (default: the model's own), e.g. swa:256, hybrid:3:1\n"
    "  --host H --port P      where to listen (default 127.0.0.1:8080; port 0 = any free port)\n"
    "  --kv-budget MiB        KV memory for running sequences and the prompt cache (default 1024);\n"
    "                         a request that does not fit waits, one larger than the budget gets 429\n"
    "  --chat-template FILE   Jinja chat template (default: tokenizer_config.json's or the GGUF\n"
    "                         file's, else a plain 'role: content' fallback)\n"
    "  --parallel N           sequences advanced together (default 32)\n"
    "  --max-waiting N        queued requests before 429 (default 256)\n"
    "  --batch B              prefill chunk per sequence per step (default 256)\n"
    "  --checkpoint-interval N  tokens between window-layer checkpoints for prompt caching (default\n"
    "                         64), raised to a multiple of N of at least 3 window spans so that\n"
    "                         checkpoints cost less than full attention; none without a prompt cache\n"
    "  --ctx N                context length (default: the model's max_position_embeddings)\n"
    "  --kv TYPE              KV cache storage, f32 (default), bf16 or q8_0\n"
    "  --weights TYPE         hold the linear layers and the embedding table as f32, bf16, f16,\n"
    "                         q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k or q6_k, converted as they load\n"
    "                         (default: as stored; rows not a multiple of 32 values, 256 for\n"
    "                         the K-quants, stay so)\n"
    "  --seq-threads N        threads inside one sequence's kernels (default 1: small models;\n"
    "                         0 = all of -t, for large models); the decode steps of all running\n"
    "                         sequences run as one batched forward\n"
    "  --threads-http N       open HTTP connections, all clients together (default 256); one\n"
    "                         more is answered 503 at once and closed\n"
    "  --client-connections N  open connections from one client address (default 32); one\n"
    "                         more is answered 429 at once and closed\n"
    "  --request-timeout S    a request's headers and body must arrive within S seconds of\n"
    "                         the connection (or, kept alive, of the request's first byte),\n"
    "                         else 408 (default 10)\n"
    "  --idle-timeout S       a kept-alive connection's wait for its next request (default 5)\n"
    "  --name NAME            model name in responses (default: the directory's name); a\n"
    "                         request for another model gets 404 model_not_found, and\n"
    "                         GET /v1/models/NAME returns this one\n"
    "  --accept-any-model     serve requests whatever model they name\n"
    "  --shutdown-grace S     on SIGTERM/SIGINT: take no new requests (503), give running\n"
    "                         ones S seconds to finish (default 10), then end them as\n"
    "                         cancelled, every stream with its final chunk and [DONE]\n"
    "  --prompt-cache MiB     most memory finished requests' KV may keep for reuse (default: a\n"
    "                         quarter of --kv-budget; it always yields to running requests)\n"
    "  --no-prompt-cache      never reuse earlier requests' KV\n"
    "  --verbose              one line per request: reused prompt tokens, finish\n"
    "Endpoints: POST /v1/completions, POST /v1/chat/completions, GET /v1/models[/NAME], GET /health\n"
    "Request fields: logprobs (completions: N alternatives, with echo the prompt's too, and\n"
    "max_tokens 0 scores a prompt; chat: logprobs + top_logprobs), not with stream; tools go to\n"
    "the chat template and the reply comes back as text (tool_choice auto or none); user is\n"
    "accepted and ignored; n, best_of, penalties, logit_bias, suffix and other response formats\n"
    "than text are refused with a 400 naming the field.\n";

std::string DirName(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.rfind('/');
  return slash == std::string::npos ? d : d.substr(slash + 1);
}

}  // namespace

int RunServe(const std::vector<std::string>& words) {
  const Args args(words, {"--help", "-h", "--no-prompt-cache", "--verbose", "--accept-any-model"});
  if (args.Has("--help") || args.Has("-h")) {
    std::printf("%s%s", kUsage, ThreadsHelp().c_str());
    return 0;
  }
  args.RejectUnknown({"-m",
                      "--attn",
                      "--host",
                      "--port",
                      "--kv-budget",
                      "--chat-template",
                      "--parallel",
                      "--max-waiting",
                      "--batch",
                      "--seq-threads",
                      "--checkpoint-interval",
                      "--ctx",
                      "--kv",
                      "--weights",
                      "--threads-http",
                      "--client-connections",
                      "--request-timeout",
                      "--idle-timeout",
                      "--name",
                      "--accept-any-model",
                      "--shutdown-grace",
                      "--no-prompt-cache",
                      "--verbose",
                      "--prompt-cache",
                      "-t",
                      "--threads"});
  ApplyThreadsOption(args);
  if (!args.Has("-m")) throw std::invalid_argument("-m DIR is required\n" + std::string(kUsage));
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

  std::unique_ptr<LanguageModel> model = LoadModel(dir, LoadOptionsFrom(args));
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
  engine_options.context_length = args.GetPositiveInt("--ctx", 0);
  engine_options.kv_type = KvTypeFromString(args.Get("--kv", "f32"));
  engine_options.prompt_cache = !args.Has("--no-prompt-cache");
  const double cache_mib = args.GetDouble("--prompt-cache", budget_mib / 4);
  if (!(cache_mib >= 0)) throw std::invalid_argument("--prompt-cache must be >= 0 (MiB)");
  engine_options.prompt_cache_bytes = size_t(cache_mib * 1024 * 1024);
  if (engine_options.prompt_cache_bytes == 0) engine_options.prompt_cache = false;
  engine_options.verbose = args.Has("--verbose");
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
