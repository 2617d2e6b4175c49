// Encode throughput (MB/s of UTF-8 input, single thread) of swan's tokenizer
// for both BPE families on a multi-MB text.
//
//   build/bench/tokenizer_bench [--benchmark_filter=llama3]
//
// Text: $SWAN_BENCH_TEXT if set, else the first 8 MB of the Python standard
// library (/usr/lib/python3*). Tokenizers: the real ones cached by
// scripts/fetch_test_tokenizers.sh under .cache/tokenizers/ (run from the
// repository root or set SWAN_SOURCE_DIR), and models/stories260K.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/test_paths.h"

namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string& BenchText() {
  static const std::string text = [] {
    if (const char* path = std::getenv("SWAN_BENCH_TEXT")) return ReadFile(path);
    std::vector<fs::path> files;
    for (const char* dir : {"/usr/lib/python3.11", "/usr/lib/python3"}) {
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) continue;
      for (const auto& e : fs::recursive_directory_iterator(dir, ec))
        if (e.is_regular_file() && e.path().extension() == ".py") files.push_back(e.path());
      break;
    }
    std::sort(files.begin(), files.end());
    std::string all;
    for (const auto& f : files) {
      if (all.size() >= (8u << 20)) break;
      all += ReadFile(f);
    }
    return all;
  }();
  return text;
}

fs::path TokenizerPath(const std::string& name) {
  if (name == "stories260K") return swan::test::Stories260K();
  return fs::path(swan::test::SourceRoot()) / ".cache" / "tokenizers" / name;
}

void BM_Encode(benchmark::State& state, const std::string& name) {
  const fs::path path = TokenizerPath(name);
  if (!fs::exists(path / "tokenizer.json")) {
    state.SkipWithError(("missing " + path.string() + "/tokenizer.json").c_str());
    return;
  }
  const swan::Tokenizer tok = swan::Tokenizer::Load(path.string());
  const std::string& text = BenchText();
  if (text.empty()) {
    state.SkipWithError("no benchmark text: set SWAN_BENCH_TEXT");
    return;
  }
  size_t tokens = 0;
  for (auto _ : state) {
    const auto ids = tok.Encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
  state.counters["bytes/token"] = static_cast<double>(text.size()) / static_cast<double>(tokens);
}

BENCHMARK_CAPTURE(BM_Encode, llama3_bytelevel, std::string("llama3"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Encode, qwen3_bytelevel, std::string("qwen3"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Encode, gptoss_bytelevel, std::string("gptoss"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Encode, llama2_sentencepiece, std::string("llama2"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Encode, gemma3_sentencepiece, std::string("gemma3"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Encode, stories260K_sentencepiece, std::string("stories260K"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
