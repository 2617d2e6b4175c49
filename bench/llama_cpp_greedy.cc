// llama.cpp's greedy continuation of a prompt of token ids, for
// bench/llama_cpp_agreement.sh: the ids llama.cpp picks on a GGUF file,
// to set beside `swan generate --ids ... --temp 0` on the same file. Built
// by that script against the llama.cpp the side by side builds (not part
// of swan's build).
//   usage: llama_cpp_greedy MODEL.gguf IDS N [THREADS]
//   IDS: the prompt, comma-separated. Prints N ids, comma-separated, and on
//   a second line the margin of each pick: its logit less the runner-up's
//   (how near a tie the pick was).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf IDS N [THREADS]\n", argv[0]);
    return 2;
  }
  std::vector<llama_token> prompt;  // [prompt tokens]
  std::stringstream ids(argv[2]);
  for (std::string id; std::getline(ids, id, ',');) prompt.push_back(llama_token(std::atoi(id.c_str())));
  const int n = std::atoi(argv[3]), threads = argc > 4 ? std::atoi(argv[4]) : 2;
  if (prompt.empty() || n <= 0) {
    std::fprintf(stderr, "an empty prompt or N <= 0\n");
    return 2;
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);  // quiet: only the ids on stdout
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (!model) {
    std::fprintf(stderr, "llama.cpp could not load %s\n", argv[1]);
    return 1;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = uint32_t(prompt.size()) + uint32_t(n);
  cp.n_batch = cp.n_ubatch = uint32_t(prompt.size());
  cp.n_threads = cp.n_threads_batch = threads;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr, "llama.cpp could not make a context for %s\n", argv[1]);
    return 1;
  }
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_token next = 0;
  std::vector<float> margins;  // [n] each pick's logit less the runner-up's
  for (int i = 0; i < n; ++i) {
    // the prompt in one batch, then one token at a time; logits of the last
    llama_batch batch =
        i == 0 ? llama_batch_get_one(prompt.data(), int32_t(prompt.size())) : llama_batch_get_one(&next, 1);
    if (llama_decode(ctx, batch) != 0) {
      std::fprintf(stderr, "llama_decode failed at token %d\n", i);
      return 1;
    }
    const float* logits = llama_get_logits_ith(ctx, -1);  // [vocab]
    next = 0;
    for (int v = 1; v < vocab; ++v)
      if (logits[v] > logits[next]) next = v;
    float second = -INFINITY;
    for (int v = 0; v < vocab; ++v)
      if (v != next && logits[v] > second) second = logits[v];
    margins.push_back(logits[next] - second);
    std::printf("%s%d", i ? "," : "", next);
  }
  std::printf("\n");
  for (int i = 0; i < n; ++i) std::printf("%s%.3g", i ? "," : "", margins[size_t(i)]);
  std::printf("\n");
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
