#include "tokenizer/bpe_trainer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <queue>
#include <stdexcept>

#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace swan {
namespace {

uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}
int32_t Left(uint64_t key) { return static_cast<int32_t>(key >> 32); }
int32_t Right(uint64_t key) { return static_cast<int32_t>(key & 0xFFFFFFFFu); }

// A distinct piece of the corpus as a sequence of token ids.
struct Word {
  std::vector<int32_t> symbols;
  int64_t count;
};

// A heap entry: the count a pair had when pushed. Max count first; on ties
// the smallest (left, right) pair, so training is deterministic.
struct Candidate {
  int64_t count;
  uint64_t pair;
  bool operator<(const Candidate& o) const { return count != o.count ? count < o.count : pair > o.pair; }
};

}  // namespace

BpeTrainer::BpeTrainer(BpeTrainerOptions options)
    : options_(std::move(options)), split_(std::make_unique<Regex>(options_.split_pattern, "split pattern")) {
  const int minimum = 256 + static_cast<int>(options_.special_tokens.size());
  if (options_.vocab_size < minimum)
    throw std::invalid_argument("vocabulary size " + std::to_string(options_.vocab_size) +
                                " is too small: byte-level BPE needs at least " + std::to_string(minimum) +
                                " (256 bytes + special tokens)");
}

BpeTrainer::~BpeTrainer() = default;

void BpeTrainer::AddText(std::string_view text) {
  bytes_ += text.size();
  size_t last = 0;
  auto add = [&](size_t b, size_t e) { ++counts_[std::string(text.substr(b, e - b))]; };
  split_->ForEachMatch(text, [&](size_t b, size_t e) {
    if (b > last) add(last, b);
    add(b, e);
    last = e;
  });
  if (last < text.size()) add(last, text.size());
}

TrainedBpe BpeTrainer::Train() {
  TrainedBpe out;
  for (int b = 0; b < 256; ++b) out.tokens.emplace_back(1, static_cast<char>(b));
  std::unordered_map<std::string, int32_t> token_ids;
  for (int b = 0; b < 256; ++b) token_ids[out.tokens[b]] = b;

  // Words in a fixed order (sorted by text) so that training is deterministic.
  std::vector<std::pair<std::string, int64_t>> sorted(counts_.begin(), counts_.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<Word> words;
  words.reserve(sorted.size());
  for (const auto& [text, count] : sorted) {
    Word w{{}, count};
    for (const char c : text) w.symbols.push_back(static_cast<uint8_t>(c));
    words.push_back(std::move(w));
  }
  sorted.clear();

  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<int32_t>> pair_words;  // words that may hold the pair
  for (size_t w = 0; w < words.size(); ++w) {
    const auto& s = words[w].symbols;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const uint64_t key = PairKey(s[i], s[i + 1]);
      pair_count[key] += words[w].count;
      auto& list = pair_words[key];
      if (list.empty() || list.back() != static_cast<int32_t>(w)) list.push_back(static_cast<int32_t>(w));
    }
  }
  std::priority_queue<Candidate> queue;
  for (const auto& [key, count] : pair_count) queue.push({count, key});

  const int target_merges = options_.vocab_size - 256 - static_cast<int>(options_.special_tokens.size());
  std::vector<int32_t> seen(words.size(), -1);  // last merge that visited each word
  std::unordered_map<uint64_t, int64_t> changed;
  int last_percent = -1;
  while (static_cast<int>(out.merges.size()) < target_merges && !queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    auto found = pair_count.find(top.pair);
    const int64_t current = found == pair_count.end() ? 0 : found->second;
    if (current != top.count) {  // stale entry: re-queue with the current count
      if (current > 0) queue.push({current, top.pair});
      continue;
    }
    if (current < options_.min_frequency) break;
    const int32_t a = Left(top.pair), b = Right(top.pair);
    const std::string merged = out.tokens[a] + out.tokens[b];
    auto [it, inserted] = token_ids.try_emplace(merged, static_cast<int32_t>(out.tokens.size()));
    if (inserted) out.tokens.push_back(merged);
    const int32_t n = it->second;
    const auto merge_index = static_cast<int32_t>(out.merges.size());
    out.merges.emplace_back(a, b);

    changed.clear();
    std::vector<int32_t> candidates = std::move(pair_words[top.pair]);
    pair_words.erase(top.pair);
    for (const int32_t w : candidates) {
      if (seen[w] == merge_index) continue;
      seen[w] = merge_index;
      auto& s = words[w].symbols;
      const int64_t c = words[w].count;
      size_t j = 0;  // write position
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          if (j > 0) {
            changed[PairKey(s[j - 1], a)] -= c;
            changed[PairKey(s[j - 1], n)] += c;
          }
          if (i + 2 < s.size()) {
            changed[PairKey(b, s[i + 2])] -= c;
            changed[PairKey(n, s[i + 2])] += c;
          }
          changed[top.pair] -= c;
          s[j++] = n;
          i += 2;
        } else {
          s[j++] = s[i++];
        }
      }
      s.resize(j);
      // Register this word under the pairs it now holds with the new token.
      for (size_t i = 0; i + 1 < s.size(); ++i)
        if (s[i] == n || s[i + 1] == n) {
          auto& list = pair_words[PairKey(s[i], s[i + 1])];
          if (list.empty() || list.back() != w) list.push_back(w);
        }
    }
    for (const auto& [key, delta] : changed) {
      if (delta == 0) continue;
      int64_t& count = pair_count[key];
      count += delta;
      if (count <= 0) {
        pair_count.erase(key);
      } else if (delta > 0) {
        queue.push({count, key});
      }
    }
    const int percent = static_cast<int>(100.0 * static_cast<double>(out.merges.size()) / std::max(1, target_merges));
    if (options_.progress && percent != last_percent && percent % 5 == 0) {
      last_percent = percent;
      options_.progress("merges: " + std::to_string(out.merges.size()) + "/" + std::to_string(target_merges) + " (" +
                        std::to_string(percent) + "%)");
    }
  }
  out.special_tokens = options_.special_tokens;
  return out;
}

void WriteTokenizerDir(const TrainedBpe& bpe, const BpeTrainerOptions& options, const std::string& dir) {
  using nlohmann::json;
  using ordered = nlohmann::ordered_json;
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::Get();
  auto visible = [&](const std::string& bytes) {
    std::string s;
    alphabet.EncodeAll(bytes, &s);
    return s;
  };
  ordered vocab = ordered::object();
  for (size_t id = 0; id < bpe.tokens.size(); ++id) vocab[visible(bpe.tokens[id])] = id;
  ordered added = ordered::array();
  for (size_t i = 0; i < bpe.special_tokens.size(); ++i) {
    const size_t id = bpe.tokens.size() + i;
    vocab[bpe.special_tokens[i]] = id;
    added.push_back({{"id", id},
                     {"content", bpe.special_tokens[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  ordered merges = ordered::array();
  for (const auto& [a, b] : bpe.merges) merges.push_back({visible(bpe.tokens[a]), visible(bpe.tokens[b])});

  ordered j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern", {{"Regex", options.split_pattern}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  j["post_processor"] = {
      {"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", false},
                {"vocab", vocab},
                {"merges", merges}};

  std::filesystem::create_directories(dir);
  const auto path = std::filesystem::path(dir) / "tokenizer.json";
  std::ofstream f(path);
  f << j.dump(1, ' ', false, json::error_handler_t::strict) << "\n";
  if (!f) throw std::runtime_error(path.string() + ": write failed");

  ordered config;
  config["tokenizer_class"] = "PreTrainedTokenizerFast";
  config["clean_up_tokenization_spaces"] = false;
  if (!bpe.special_tokens.empty()) config["eos_token"] = bpe.special_tokens.front();
  std::ofstream c(std::filesystem::path(dir) / "tokenizer_config.json");
  c << config.dump(2) << "\n";
  if (!c) throw std::runtime_error(dir + "/tokenizer_config.json: write failed");
}

}  // namespace swan
