// Training batches from token files (tokenizer/token_file.h, memory-mapped):
// packed sequences of T + 1 consecutive tokens (inputs and next-token
// targets), in a shuffled order that is a pure function of the seed and the
// sequence index. So the data position of a run is one number, the count
// of sequences consumed, and a resumed run reads exactly what an
// uninterrupted one would have.
//
// A synthetic long-range retrieval file (train/synthetic.h, tokenized) can
// be mixed in: each sequence is drawn from it with probability
// `synthetic_rate`: one of its documents (its end, when it is longer than a
// sequence).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/token_file.h"

namespace swan {

struct DataOptions {
  std::string train_path;      // token file
  std::string val_path;        // held-out token file; "" = none
  std::string synthetic_path;  // token file of synthetic documents; "" = none
  double synthetic_rate = 0.0;
  int64_t seq = 0;             // T, the training context
  uint64_t seed = 0;
};

class DataLoader {
 public:
  // Throws std::runtime_error when a file is missing or shorter than T + 1
  // tokens, or when the vocabularies of the files differ.
  explicit DataLoader(const DataOptions& options);

  // Training sequences [first, first + count): tokens and targets [count, T].
  void TrainBatch(int64_t first, int64_t count, int32_t* tokens, int32_t* targets);
  // Held-out sequences [first, first + count), in file order.
  void ValBatch(int64_t first, int64_t count, int32_t* tokens, int32_t* targets) const;

  bool has_val() const { return val_ != nullptr; }
  int64_t val_sequences() const;    // whole held-out sequences available
  int64_t train_sequences() const;  // per epoch
  uint32_t vocab_size() const { return train_->vocab_size(); }
  uint64_t train_tokens() const { return train_->size(); }

 private:
  void Read(const TokenFile& file, uint64_t start, int32_t* tokens, int32_t* targets) const;
  uint64_t ChunkOf(int64_t index);

  DataOptions options_;
  std::unique_ptr<TokenFile> train_, val_, synthetic_;
  std::vector<uint64_t> synthetic_docs_;  // where each synthetic document's sequence starts
  int64_t epoch_ = -1;
  std::vector<uint32_t> order_;           // chunk order of epoch_
};

// The counter-based random generator behind the data order: a 64-bit mix
// of (seed, stream, index) (SplitMix64 finalizer).
uint64_t HashIndex(uint64_t seed, uint64_t stream, uint64_t index);

}  // namespace swan
