// Per-token labels beside a token file (tokenizer/token_file.h), for tasks
// whose loss counts some tokens more than others (the answers of the recall
// tasks of train/recall_data.h):
//   weight[i]    the loss weight of predicting token i from the ones before
//   distance[i]  for an answer token, how far back the fact it recalls
//                stands (query position - key position); 0 for the others
// A labels file may also fix the length of the documents: every document
// then has exactly doc_tokens tokens and training sequences start at
// document starts, so a shorter context reads a document's beginning (a
// context curriculum keeps every answer whose fact it still holds).
//
// Layout of DATA.labels beside DATA.bin (little-endian):
//   bytes 0..7    magic "SWANLBL\0"
//   bytes 8..11   uint32 version (1)
//   bytes 12..15  uint32 doc_tokens (0: the token file is one stream)
//   bytes 16..23  uint64 count, the token file's
//   then uint16 weight [count] (bf16 bits), uint16 distance [count]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swan {

struct TokenLabels {
  uint32_t doc_tokens = 0;
  std::vector<uint16_t> weight;    // [count] bf16 bits
  std::vector<uint16_t> distance;  // [count]

  uint64_t size() const { return weight.size(); }
  float Weight(uint64_t i) const;
};

// DATA.bin -> DATA.labels; any other name gets ".labels" appended.
std::string LabelsPath(const std::string& token_path);

// Throws std::runtime_error when the file cannot be written, and
// std::invalid_argument when weight and distance differ in length.
void WriteTokenLabels(const std::string& path, const TokenLabels& labels);
// Throws std::runtime_error naming the file when it is missing, truncated
// or not a labels file.
TokenLabels ReadTokenLabels(const std::string& path);

}  // namespace swan
