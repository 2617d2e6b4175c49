// `swan tokenize`: text to token ids and back with a tokenizer.json, and
// whole corpora to a flat token file for training (tokenizer/token_file.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include "cli/args.h"
#include "cli/input_files.h"
#include "cli/options.h"
#include "tokenizer/token_file.h"
#include "model/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/threads.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan tokenize -t TOKENIZER --text TEXT [--no-special] [--plain] [--tokens]\n"
      "       swan tokenize -t TOKENIZER --decode 1,2,3 [--skip-special]\n"
      "       swan tokenize -t TOKENIZER --out DATA.bin [--holdout 0.01] [--ext .txt]\n"
      "                     [--jsonl [--field text]] [--bos] [--threads N] FILES_OR_DIRS...\n");
  options.Add({{"-t"}, "TOKENIZER", "tokenizer.json, a directory holding one, or a GGUF model file"})
      .Add({{"--text"}, "TEXT", "print the ids of TEXT, comma-separated"})
      .Add({{"--no-special"}, "", "do not add the tokenizer's BOS/EOS template around TEXT"})
      .Add({{"--plain"}, "", "encode special-token text such as <s> as ordinary characters"})
      .Add({{"--tokens"}, "", "also print each token's text"})
      .Add({{"--decode"}, "LIST", "print the text of comma-separated ids"})
      .Add({{"--skip-special"}, "", "leave special tokens out of the decoded text"})
      .Add({{"--out"},
            "FILE",
            "encode documents (one per file, or per line with --jsonl), each followed by the end-of-document "
            "token (EOS), into a token file: 32-byte header then uint16 ids (uint32 if the vocabulary needs it)"})
      .Add({{"--holdout"},
            "P",
            "send every (1/P)-th document to FILE's .val.bin twin (default 0.01); with fewer documents, the last "
            "P of the tokens; 0 = none"})
      .Add({{"--ext"}, "SUFFIX", "in directories, read only files whose names end with SUFFIX"})
      .Add({{"--jsonl"}, "", "files hold one JSON object per line; its --field is a document"})
      .Add({{"--field"}, "NAME", "with --jsonl: the field that holds a document (default \"text\")"})
      .Add({{"--bos"}, "", "also put BOS before every document"})
      .Add({{"--threads"},
            "N",
            "encoding threads (default: the cores swan may use, or OMP_NUM_THREADS); the output does not "
            "depend on it"});
  return options;
}

std::string ValPath(const std::string& out) {
  const std::string suffix = ".bin";
  if (out.size() > suffix.size() && out.ends_with(suffix))
    return out.substr(0, out.size() - suffix.size()) + ".val.bin";
  return out + ".val.bin";
}

int EncodeCorpus(const Args& args, const Tokenizer& tok) {
  const std::string out = args.Get("--out", "");
  const double holdout = args.GetDouble("--holdout", 0.01);
  if (holdout < 0 || holdout >= 1) throw std::invalid_argument("--holdout must be in [0, 1)");
  if (tok.eos_id() < 0)
    throw std::invalid_argument(
        "the tokenizer has no end-of-document token (no EOS in its post-processor, config.json, "
        "generation_config.json or tokenizer_config.json)");
  const bool bos = args.Has("--bos");
  if (bos && tok.bos_id() < 0) throw std::invalid_argument("--bos: the tokenizer has no BOS token");
  const std::vector<std::string> files = ExpandInputFiles(args.positional(), args.Get("--ext", ""));
  if (files.empty()) throw std::invalid_argument("no input files\n" + Options().Help());
  const std::string field = args.Get("--field", "text");
  const uint64_t every = holdout > 0 ? static_cast<uint64_t>(std::llround(1.0 / holdout)) : 0;

  const auto start = std::chrono::steady_clock::now();
  const auto vocab = static_cast<uint32_t>(tok.vocab_size());
  // The files record which tokenizer wrote them (swan train checks it).
  std::string tokenizer_path = args.Get("-t", "");
  if (std::filesystem::is_directory(tokenizer_path))
    tokenizer_path = (std::filesystem::path(tokenizer_path) / "tokenizer.json").string();
  const uint32_t fingerprint =
      TokenizerFingerprint(IsGgufFile(tokenizer_path) ? ReadGgufTokenizer(GgufFile(tokenizer_path)).tokenizer.dump()
                                                      : ReadWholeFile(tokenizer_path));
  TokenFileWriter train(out, vocab, fingerprint);
  TokenFileWriter val(ValPath(out), vocab, fingerprint);
  uint64_t docs = 0, bytes = 0;
  const int threads = static_cast<int>(args.GetInt("--threads", ThreadLimit()));
  if (threads < 1) throw std::invalid_argument("--threads must be at least 1");
  // Documents are encoded in batches, in parallel, and written in order.
  std::vector<std::string> batch;
  size_t batch_bytes = 0;
  auto flush = [&] {
    std::vector<std::vector<int32_t>> encoded(batch.size());
    std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (size_t d = 0; d < batch.size(); ++d) {
      try {
        encoded[d] = tok.Encode(batch[d], {.add_special_tokens = false});
      } catch (...) {
#pragma omp critical
        error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    std::vector<int32_t> ids;
    for (size_t d = 0; d < batch.size(); ++d) {
      ids.clear();
      if (bos) ids.push_back(tok.bos_id());
      ids.insert(ids.end(), encoded[d].begin(), encoded[d].end());
      ids.push_back(tok.eos_id());
      (every > 0 && docs % every == every - 1 ? val : train).Append(ids);
      ++docs;
      bytes += batch[d].size();
    }
    batch.clear();
    batch_bytes = 0;
  };
  auto add_document = [&](std::string text) {
    batch_bytes += text.size();
    batch.push_back(std::move(text));
    if (batch_bytes >= (16u << 20) || batch.size() >= 4096) flush();
  };
  const bool tty = isatty(fileno(stderr)) != 0;
  double last_progress_s = 0;
  uint64_t bytes_read = 0;  // of the input files so far (documents are encoded in batches)
  for (size_t i = 0; i < files.size(); ++i) {
    std::string content = ReadWholeFile(files[i]);
    bytes_read += content.size();
    if (!args.Has("--jsonl")) {
      add_document(std::move(content));
    } else {
      std::istringstream lines(content);
      std::string line;
      for (size_t n = 1; std::getline(lines, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
          throw std::runtime_error(files[i] + ":" + std::to_string(n) + ": not JSON: " + e.what());
        }
        if (!j.is_object() || !j.contains(field) || !j[field].is_string())
          throw std::runtime_error(files[i] + ":" + std::to_string(n) + ": no string field \"" + field + "\"");
        add_document(j[field].get<std::string>());
      }
    }
    if (i + 1 == files.size()) flush();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // A terminal gets a line redrawn a few times a second; a log file gets a
    // line per tenth of the files, not one per file.
    const bool last = i + 1 == files.size();
    if (!last && (tty ? s - last_progress_s < 0.25 : (i + 1) % std::max<size_t>(1, files.size() / 10) != 0)) continue;
    last_progress_s = s;
    std::fprintf(stderr,
                 tty ? "\rtokenize: %zu/%zu files, %.1f MB read, %llu tokens written, %.1f MB/s   "
                     : "tokenize: %zu/%zu files, %.1f MB read, %llu tokens written, %.1f MB/s\n",
                 i + 1, files.size(), static_cast<double>(bytes_read) / 1e6,
                 static_cast<unsigned long long>(train.count() + val.count()),
                 static_cast<double>(bytes_read) / 1e6 / std::max(s, 1e-9));
  }
  if (tty) std::fprintf(stderr, "\n");
  train.Close();
  val.Close();
  if (holdout > 0 && val.count() == 0 && train.count() > 1) {
    // Too few documents to hold some out: move the last tokens instead.
    const TokenFile all(out);
    const uint64_t n = std::max<uint64_t>(1, static_cast<uint64_t>(holdout * static_cast<double>(all.size())));
    std::vector<int32_t> tail(n);
    all.Read(all.size() - n, tail);
    TokenFileWriter tail_writer(ValPath(out), vocab, fingerprint);
    tail_writer.Append(tail);
    tail_writer.Close();
    TruncateTokenFile(out, all.size() - n);
  }
  const TokenFile t(out), v(ValPath(out));
  std::printf("%s: %llu tokens (uint%u), %s: %llu tokens, from %llu documents, vocabulary %u\n", out.c_str(),
              static_cast<unsigned long long>(t.size()), t.dtype_bytes() * 8, ValPath(out).c_str(),
              static_cast<unsigned long long>(v.size()), static_cast<unsigned long long>(docs), vocab);
  return 0;
}

}  // namespace

int RunTokenize(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words, /*positional_allowed=*/true);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  if (!args.Has("-t")) throw std::invalid_argument("-t TOKENIZER is required\n" + flags.Help());
  const Tokenizer tok = LoadModelTokenizer(args.Get("-t", ""));
  if (args.Has("--out")) return EncodeCorpus(args, tok);
  if (args.Has("--decode")) {
    std::vector<int32_t> ids;
    for (const long long v : args.GetIntList("--decode", {})) {
      if (v < 0 || v >= tok.vocab_size())
        throw std::invalid_argument("--decode: id " + std::to_string(v) + " is outside the vocabulary of " +
                                    std::to_string(tok.vocab_size()));
      ids.push_back(static_cast<int32_t>(v));
    }
    std::printf("%s\n", tok.Decode(ids, args.Has("--skip-special")).c_str());
    return 0;
  }
  if (!args.Has("--text")) throw std::invalid_argument("give --text, --decode or --out\n" + flags.Help());
  const auto ids = tok.Encode(args.Get("--text", ""),
                              {.add_special_tokens = !args.Has("--no-special"), .parse_special = !args.Has("--plain")});
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) line += (i ? "," : "") + std::to_string(ids[i]);
  std::printf("%s\n", line.c_str());
  if (args.Has("--tokens"))
    for (const int32_t id : ids)
      std::printf("%8d  %s\n", id, nlohmann::json(tok.Decode(std::vector<int32_t>{id})).dump().c_str());
  return 0;
}

}  // namespace swan::cli
