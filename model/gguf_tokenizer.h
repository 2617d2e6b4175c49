// The tokenizer a GGUF file carries in its metadata (tokenizer.ggml.*), read
// as the tokenizer.json it stands for, and written from a tokenizer.json when
// swan exports a model. Two models, as llama.cpp names them:
//   "llama": SentencePiece BPE with byte fallback (Llama 2, Mistral, Gemma):
//            tokens, scores and token types; a merge's priority is the
//            score of the token it makes, so the merges are rebuilt from
//            the scores the way Hugging Face's converter builds them;
//   "gpt2":  byte-level BPE (Llama 3, Qwen 2, GPT-2): tokens, merges "a b",
//            and the pre-tokenizer's name (tokenizer.ggml.pre).
// Token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
// 6 byte. Control and unknown tokens become special added tokens,
// user-defined ones plain added tokens, unused ones (padding) no token.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "model/gguf.h"
#include "tokenizer/tokenizer.h"

namespace swan {

// What a GGUF file's metadata says of its tokenizer, in Hugging Face's terms.
struct GgufTokenizerParts {
  nlohmann::json tokenizer;    // a tokenizer.json
  nlohmann::json special_ids;  // {"bos_token_id": id, "eos_token_id": [ids]}
  std::string chat_template;   // tokenizer.chat_template, or ""
};

// Throws std::runtime_error naming the file when it holds no tokenizer or
// one swan cannot read (another model type, an unknown pre-tokenizer).
GgufTokenizerParts ReadGgufTokenizer(const GgufFile& file);
Tokenizer GgufTokenizer(const GgufFile& file);

// The tokenizer of a model path: a directory's tokenizer.json (with its
// config files), or a GGUF file's metadata.
Tokenizer LoadModelTokenizer(const std::string& path);

// The tokenizer.* metadata for a model directory's tokenizer.json, with
// `n_tokens` entries (the embedding's rows; the rest are unused padding).
// Throws std::runtime_error naming the directory when the tokenizer has no
// GGUF form (a model other than BPE, a pre-tokenizer llama.cpp does not
// name).
std::vector<std::pair<std::string, GgufValue>> GgufTokenizerMetadata(const std::string& dir, int64_t n_tokens);

}  // namespace swan
