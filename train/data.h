// Training batches from token files (tokenizer/token_file.h, memory-mapped):
// packed sequences of T + 1 consecutive tokens (inputs and next-token
// targets), in a shuffled order that is a pure function of the seed, the
// context and the sequence index. So the data position of a run is one
// number, the count of sequences consumed, and a resumed run reads exactly
// what an uninterrupted one would have.
//
// A token file may have labels beside it (DATA.labels, tokenizer/
// token_labels.h): per-token loss weights, recall distances, and documents
// of a fixed length. Sequences then start at document starts, and a context
// shorter than a document reads its beginning (a context curriculum).
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
#include "tokenizer/token_labels.h"
#include "train/recall_data.h"

namespace swan {

struct DataOptions {
  // A recall task (recall.json, train/recall_data.h): training sequences are
  // made on the fly, a fresh one for every index (no epochs to memorize),
  // held-out ones from the task's val_seed; train_path and val_path are
  // then not read.
  std::string recall_task;
  std::string train_path;      // token file
  std::string val_path;        // held-out token file; "" = none
  std::string synthetic_path;  // token file of synthetic documents; "" = none
  double synthetic_rate = 0.0;
  int64_t seq = 0;  // T, the longest training context
  uint64_t seed = 0;
};

// Where a batch goes; each buffer [count, T] of the context in use. weights
// (1 where a file has no labels) and distances (0 where none) may be null.
struct BatchBuffers {
  int32_t* tokens = nullptr;
  int32_t* targets = nullptr;
  float* weights = nullptr;
  uint16_t* distances = nullptr;
};

class DataLoader {
 public:
  // Throws std::runtime_error when a file is missing or shorter than T + 1
  // tokens (documents shorter than that, with labels), or when the
  // vocabularies of the files differ.
  explicit DataLoader(const DataOptions& options);

  // The context of the next batches, 1 <= T <= options.seq (a curriculum).
  void set_context(int64_t seq);
  int64_t context() const { return seq_; }

  // Training sequences [first, first + count).
  void TrainBatch(int64_t first, int64_t count, const BatchBuffers& out);
  void TrainBatch(int64_t first, int64_t count, int32_t* tokens, int32_t* targets) {
    TrainBatch(first, count, BatchBuffers{tokens, targets});
  }
  // Held-out sequences [first, first + count), in file order.
  void ValBatch(int64_t first, int64_t count, const BatchBuffers& out) const;
  void ValBatch(int64_t first, int64_t count, int32_t* tokens, int32_t* targets) const {
    ValBatch(first, count, BatchBuffers{tokens, targets});
  }

  bool has_val() const { return val_.file != nullptr || recall_; }
  bool has_labels() const { return train_.labels != nullptr || recall_; }
  bool has_val_labels() const { return val_.labels != nullptr || recall_; }
  int64_t val_sequences() const;    // whole held-out sequences available
  int64_t train_sequences() const;  // per epoch
  uint32_t vocab_size() const;
  uint64_t train_tokens() const { return recall_ ? 0 : train_.file->size(); }  // 0: made on the fly
  // The tokenizer that wrote the training tokens (0: unknown, or recall data).
  uint32_t tokenizer_fingerprint() const { return recall_ ? 0 : train_.file->tokenizer_fingerprint(); }

 private:
  // A token file and its labels (or none).
  struct Source {
    std::unique_ptr<TokenFile> file;
    std::unique_ptr<TokenLabels> labels;
    int64_t Sequences(int64_t seq) const;
    uint64_t Start(int64_t sequence, int64_t seq) const;
  };
  static Source Open(const std::string& path, const char* what, int64_t seq);
  // Sequence s of `out` from the T + 1 tokens at `start`.
  void Read(const TokenFile& file, const TokenLabels* labels, uint64_t start, int64_t s, const BatchBuffers& out) const;
  uint64_t ChunkOf(int64_t index);
  // Sequence s of `out` from the first T + 1 tokens of a made sequence.
  void Put(const RecallSequence& sequence, int64_t s, const BatchBuffers& out) const;

  DataOptions options_;
  int64_t seq_ = 0;
  Source train_, val_;
  std::unique_ptr<TokenFile> synthetic_;
  std::vector<uint64_t> synthetic_docs_;  // where each synthetic document's sequence starts
  int64_t epoch_ = -1, epoch_seq_ = 0;    // the epoch and context order_ was made for
  std::vector<uint32_t> order_;           // chunk order of epoch_
  bool recall_ = false;                   // sequences made from recall tasks:
  RecallOptions train_task_, val_task_;   // training and held-out seeds
  RecallOptions train_now_, val_now_;     // the two at the context seq_ (RecallTaskAtContext)
  int64_t val_count_ = 0;                 // held-out sequences
};

// The counter-based random generator behind the data order: a 64-bit mix
// of (seed, stream, index) (SplitMix64 finalizer).
uint64_t HashIndex(uint64_t seed, uint64_t stream, uint64_t index);

}  // namespace swan
