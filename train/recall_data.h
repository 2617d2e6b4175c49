// Recall tasks in token-id space, for models with a small vocabulary of
// their own (no tokenizer): multi-query associative recall (MQAR, as in
// Zoology, Arora et al. 2023) and needle retrieval, with each answer's
// key->query distance drawn from a chosen mix of bins, so that a run can
// put its facts inside a window, beyond it, or beyond the reach that
// window layers relay (L * (W - 1)).
//
// Ids: 0 <bos>, 1 <eos>, 2 N (the needle marker), 3 reserved, then
// `keys` key ids (k0 ...), `values` value ids (v0 ...), `filler` filler ids
// (f0 ...). Every sequence starts with the same kRecallPrefix tokens
// (<bos> f0 f1 f2), so attention sinks hold no answer.
//
//   MQAR:   `pairs` pairs "k v" (distinct keys) at random places, and
//           `queries` queries "k v" after them, each answer v weighted 1:
//           the first `pairs` queries ask each pair once, the others ask
//           pairs again (unasked pairs, when queries < pairs, are
//           distractors). An answer's distance is to the nearest earlier
//           "k v" of its key, so a pair asked again can land in a shorter
//           bin than the one drawn.
//   needle: "N v1 .. vm" at a depth, asked at the end as "N v1 .. vm"; the
//           m answer tokens are weighted 1 and scored as one item.
//   copy:   "N s1 .. sL N s1 .. sL" at the end, s random keys and values,
//           the second copy weighted 1 (distance L + 1): dense induction,
//           a warm-up for the other two.
// Every other token is filler, weighted `filler_weight` (0: answer-only
// loss). A sequence is a pure function of (options, index): training and
// evaluation draw from disjoint seeds.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace swan {

enum class RecallTask { kMqar, kNeedle, kCopy };

// Distances (query position - key position) in [lo, hi), drawn for a
// `share` of the answers.
struct DistanceBin {
  int32_t lo = 2, hi = 2;
  double share = 1;
};

struct RecallOptions {
  RecallTask task = RecallTask::kMqar;
  int32_t context = 512;                           // T: each sequence has T + 1 tokens (inputs and next-token targets)
  int32_t keys = 128, values = 128, filler = 252;  // the vocabulary after the 4 markers
  int32_t pairs = 32;                              // MQAR: distinct key-value pairs per sequence
  int32_t queries = 32;                            // MQAR: queries per sequence, each of another pair (<= pairs)
  int32_t needle_tokens = 3;
  std::vector<DistanceBin> bins = std::vector<DistanceBin>(1, DistanceBin{2, 512, 1.0});
  float filler_weight = 0;
  // This share of the sequences are copy sequences instead (distances
  // uniform up to the longest copy that fits): induction heads form on
  // them within a few hundred steps, and the main task then uses them.
  double copy_share = 0;
  // MQAR: all pairs first, right after the prefix, then the queries at
  // random places (Zoology's layout): distances follow from where each
  // query lands, and `bins` are not used.
  bool pairs_first = false;
  uint64_t seed = 1;
};

inline constexpr int32_t kRecallPrefix = 4;
inline constexpr int32_t kRecallBos = 0, kRecallEos = 1, kRecallNeedle = 2;

struct RecallSequence {
  std::vector<int32_t> tokens;     // [T + 1]
  std::vector<float> weight;       // [T + 1] loss weight of predicting each token
  std::vector<uint16_t> distance;  // [T + 1] answers: query - key position; else 0
};

// Throws std::invalid_argument on impossible options (bins outside the
// context, more queries than pairs or pairs than keys, ...).
void ValidateRecallOptions(const RecallOptions& options);
int32_t RecallVocabSize(const RecallOptions& options);
RecallSequence MakeRecallSequence(const RecallOptions& options, uint64_t index);

// The task at a shorter context: pairs, queries and distance bins scale
// with it (at least one pair and one query; bins kept inside what fits),
// so a curriculum's short stages are the same task, not a crop of it
// (cropping keeps few answers whose key is in the crop). `context` at or
// above the task's returns it unchanged.
RecallOptions RecallTaskAtContext(const RecallOptions& options, int32_t context);

// "2-64:0.25,64-256:0.25,256-512:0.5" (share optional: equal shares).
std::vector<DistanceBin> ParseDistanceBins(const std::string& spec);
RecallTask ParseRecallTask(const std::string& name);  // "mqar" | "needle" | "copy"
const char* RecallTaskName(RecallTask task);
// The task as recall.json holds it (`swan train recall` writes it beside
// the data and a trained model keeps it), and back; the held-out seed is
// the file's "val_seed" (FromJson: the training seed + 1000000007 when absent).
nlohmann::json RecallTaskJson(const RecallOptions& options);
RecallOptions RecallTaskFromJson(const nlohmann::json& j);
uint64_t RecallValSeed(const nlohmann::json& j);
// Reads a recall.json file; throws std::runtime_error naming it.
nlohmann::json ReadRecallJson(const std::string& path);

// Sequences [0, count) of `options` as a token file at `path` and its
// labels (tokenizer/token_labels.h: weights, distances, documents of
// context + 1 tokens). Throws std::runtime_error when a file cannot be written.
void WriteRecallFiles(const std::string& path, const RecallOptions& options, int64_t count);

// "<bos>", "N", "k17", "v203", "f9".
std::string RecallTokenName(const RecallOptions& options, int32_t id);

}  // namespace swan
