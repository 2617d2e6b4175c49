// Trains a byte-level BPE tokenizer (GPT-2 / Llama 3 style) on a corpus and
// writes it as a Hugging Face tokenizer.json.
//
//   BpeTrainer trainer(options);
//   trainer.AddText(file_contents);           // for every file
//   TrainedBpe bpe = trainer.Train();
//   WriteTokenizerDir(bpe, options, "out/");  // tokenizer.json + tokenizer_config.json
//
// Counting splits the text with the split regex and counts each distinct
// piece once per occurrence; merging then repeatedly merges the most frequent
// adjacent pair (ties: the smallest (left id, right id)), updating the pair
// counts incrementally from the words that contain the merged pair.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace swan {

class Regex;

// Llama 3's split regex (numbers in groups of up to three digits).
inline constexpr const char* kDefaultSplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct BpeTrainerOptions {
  int vocab_size = 4096;  // bytes (256) + merges + special tokens
  std::vector<std::string> special_tokens = {"<|endoftext|>"};
  std::string split_pattern = kDefaultSplitPattern;
  int64_t min_frequency = 2;  // stop when no pair occurs this often
  // Called with a line of progress text now and then (may be empty).
  std::function<void(const std::string&)> progress;
};

struct TrainedBpe {
  std::vector<std::string> tokens;                  // [id] byte strings; 0..255 are the single bytes
  std::vector<std::pair<int32_t, int32_t>> merges;  // in rank order: (left id, right id)
  std::vector<std::string> special_tokens;          // ids tokens.size() ... in order
};

class BpeTrainer {
 public:
  explicit BpeTrainer(BpeTrainerOptions options);
  ~BpeTrainer();
  // Splits text into pieces and counts them.
  void AddText(std::string_view text);
  uint64_t bytes_seen() const { return bytes_; }
  size_t distinct_pieces() const { return counts_.size(); }
  TrainedBpe Train();

 private:
  BpeTrainerOptions options_;
  std::unique_ptr<Regex> split_;
  std::unordered_map<std::string, int64_t> counts_;
  uint64_t bytes_ = 0;
};

// Writes DIR/tokenizer.json (and a small tokenizer_config.json naming the
// end-of-text token) in the Hugging Face schema. Creates DIR if needed.
void WriteTokenizerDir(const TrainedBpe& bpe, const BpeTrainerOptions& options, const std::string& dir);

}  // namespace swan
