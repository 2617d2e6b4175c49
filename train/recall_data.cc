#include "train/recall_data.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "tokenizer/token_file.h"
#include "tokenizer/token_labels.h"
#include "train/data.h"
#include "util/bf16.h"

namespace swan {
namespace {

constexpr uint64_t kStreamRecall = 7;
constexpr int kPlacementTries = 64;

// A counter-based generator for one sequence.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t index) : seed_(seed), index_(index) {}
  uint64_t Next() { return HashIndex(seed_ ^ (index_ * 0x9E3779B97F4A7C15ull), kStreamRecall, counter_++); }
  // Uniform in [lo, hi).
  int64_t Range(int64_t lo, int64_t hi) { return lo + int64_t(Next() % uint64_t(hi - lo)); }
  double Unit() { return double(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t seed_, index_, counter_ = 0;
};

int32_t FirstKey() { return 4; }
int32_t FirstValue(const RecallOptions& o) { return 4 + o.keys; }
int32_t FirstFiller(const RecallOptions& o) { return 4 + o.keys + o.values; }

const DistanceBin& PickBin(const std::vector<DistanceBin>& bins, Rng& rng) {
  double total = 0;
  for (const DistanceBin& b : bins) total += b.share;
  double u = rng.Unit() * total;
  for (const DistanceBin& b : bins) {
    if (u < b.share) return b;
    u -= b.share;
  }
  return bins.back();
}

// The longest distance a sequence of the options can hold: a key right
// after the prefix, its query's answer at the last position.
int32_t MaxDistance(const RecallOptions& o) {
  if (o.task == RecallTask::kCopy) return (o.context + 1 - kRecallPrefix) / 2;  // two copies of d - 1 and their markers
  const int32_t answer_tokens = o.task == RecallTask::kNeedle ? o.needle_tokens : 1;
  return o.context - answer_tokens - kRecallPrefix;
}

}  // namespace

void ValidateRecallOptions(const RecallOptions& o) {
  auto fail = [](const std::string& why) { throw std::invalid_argument("recall data: " + why); };
  if (o.context < 16) fail("the context must be at least 16 tokens");
  if (o.keys < 1 || o.values < 1 || o.filler < 4) fail("need keys, values and 4 or more filler ids");
  if (o.bins.empty()) fail("no distance bins");
  const int32_t max_d = MaxDistance(o);
  const int32_t min_d = o.task == RecallTask::kNeedle ? o.needle_tokens + 1 : 2;  // copy: L >= 1
  for (const DistanceBin& b : o.bins) {
    if (b.share <= 0) fail("a distance bin's share must be positive");
    if (b.lo < min_d || b.hi <= b.lo || b.lo > max_d)
      fail("distance bin [" + std::to_string(b.lo) + ", " + std::to_string(b.hi) +
           ") does not fit: distances run from " + std::to_string(min_d) + " to " + std::to_string(max_d) +
           " at context " + std::to_string(o.context));
  }
  if (o.copy_share < 0 || o.copy_share > 1) fail("the copy share must be between 0 and 1");
  if (o.task == RecallTask::kMqar) {
    if (o.queries < 1 || o.pairs < 1) fail("MQAR needs at least one pair and one query");
    if (o.pairs > o.keys) fail("MQAR needs at least as many key ids as pairs (distinct keys)");
    if (2 * (o.pairs + o.queries) > (o.context - kRecallPrefix) * 3 / 4)
      fail("MQAR: " + std::to_string(o.pairs) + " pairs and " + std::to_string(o.queries) +
           " queries take more than 3/4 of " + std::to_string(o.context) + " tokens");
  } else if (o.needle_tokens < 1) {
    fail("a needle needs at least one value token");
  }
}

int32_t RecallVocabSize(const RecallOptions& o) { return 4 + o.keys + o.values + o.filler; }

RecallSequence MakeRecallSequence(const RecallOptions& options, uint64_t index) {
  Rng rng(options.seed, index);
  RecallOptions copy;
  const bool is_copy = options.task != RecallTask::kCopy && options.copy_share > 0 && rng.Unit() < options.copy_share;
  if (is_copy) {
    copy = options;
    copy.task = RecallTask::kCopy;
    copy.bins = {{2, MaxDistance(copy) + 1, 1.0}};
  }
  const RecallOptions& o = is_copy ? copy : options;
  const int32_t T = o.context, n = T + 1;
  RecallSequence s;
  s.tokens.assign(size_t(n), -1);
  s.weight.assign(size_t(n), o.filler_weight);
  s.distance.assign(size_t(n), 0);
  std::vector<bool> used(size_t(n), false);  // [n]
  const int32_t prefix[kRecallPrefix] = {kRecallBos, FirstFiller(o), FirstFiller(o) + 1, FirstFiller(o) + 2};
  for (int32_t i = 0; i < kRecallPrefix; ++i) {
    s.tokens[size_t(i)] = prefix[i];
    used[size_t(i)] = true;
  }
  s.weight[0] = 0;
  auto free_span = [&](int32_t at, int32_t len) {
    if (at < kRecallPrefix || at + len > n) return false;
    for (int32_t i = at; i < at + len; ++i)
      if (used[size_t(i)]) return false;
    return true;
  };
  auto put = [&](int32_t at, int32_t token) {
    s.tokens[size_t(at)] = token;
    used[size_t(at)] = true;
    s.weight[size_t(at)] = 0;
  };
  auto answer = [&](int32_t at, int32_t token, int32_t distance) {
    put(at, token);
    s.weight[size_t(at)] = 1;
    s.distance[size_t(at)] = uint16_t(std::min(distance, 65535));
  };
  const int32_t max_d = MaxDistance(o);
  if (o.task == RecallTask::kMqar) {
    // Distinct keys: the first `pairs` of a shuffled key list.
    std::vector<int32_t> keys(size_t(o.keys));
    std::iota(keys.begin(), keys.end(), FirstKey());
    for (int32_t i = 0; i < o.pairs; ++i) std::swap(keys[size_t(i)], keys[size_t(rng.Range(i, o.keys))]);
    // Each query asks a new pair while there are pairs left to place, then
    // pairs already placed again (the distance fixes where it goes).
    std::vector<int32_t> pair_at;  // [placed pairs] position of each pair's key
    if (o.pairs_first) {
      for (int32_t i = 0; i < o.pairs; ++i) {
        const int32_t at = kRecallPrefix + 2 * i;
        put(at, keys[size_t(i)]);
        put(at + 1, FirstValue(o) + int32_t(rng.Range(0, o.values)));
        pair_at.push_back(at);
      }
      std::vector<int32_t> order(size_t(o.pairs));  // [pairs] the pairs in the order first asked
      std::iota(order.begin(), order.end(), 0);
      for (int32_t i = 0; i + 1 < o.pairs; ++i) std::swap(order[size_t(i)], order[size_t(rng.Range(i, o.pairs))]);
      for (int32_t q = 0; q < o.queries; ++q) {
        const int32_t pair = pair_at[size_t(q < o.pairs ? order[size_t(q)] : rng.Range(0, o.pairs))];
        for (int tries = 0; tries < kPlacementTries; ++tries) {
          const int32_t at = int32_t(rng.Range(kRecallPrefix + 2 * o.pairs, T));
          if (!free_span(at, 2)) continue;
          put(at, s.tokens[size_t(pair)]);
          answer(at + 1, s.tokens[size_t(pair + 1)], at - pair);
          break;
        }
      }
    } else {  // scattered: each query draws its distance, and places its pair
      for (int32_t q = 0; q < o.queries; ++q) {
        for (int tries = 0; tries < kPlacementTries; ++tries) {
          const DistanceBin& bin = PickBin(o.bins, rng);
          const int32_t d = int32_t(rng.Range(bin.lo, std::min(bin.hi, max_d + 1)));
          int32_t at, pair;
          const bool new_pair = int32_t(pair_at.size()) < o.pairs;
          if (new_pair) {
            at = int32_t(rng.Range(kRecallPrefix + d, T));  // the query's key
            pair = at - d;
            if (!free_span(pair, 2)) continue;
          } else {
            pair = pair_at[size_t(rng.Range(0, int64_t(pair_at.size())))];
            at = pair + d;
            if (at + 1 > T) continue;
          }
          if (!free_span(at, 2)) continue;
          if (new_pair) {
            put(pair, keys[pair_at.size()]);
            put(pair + 1, FirstValue(o) + int32_t(rng.Range(0, o.values)));
            pair_at.push_back(pair);
          }
          put(at, s.tokens[size_t(pair)]);
          answer(at + 1, s.tokens[size_t(pair + 1)], d);
          break;
        }
      }
    }
    const int32_t placed = int32_t(pair_at.size());  // pairs_first: all of them
    // The other pairs, never asked: distractors.
    for (int32_t i = placed; i < o.pairs; ++i)
      for (int tries = 0; tries < kPlacementTries; ++tries) {
        const int32_t at = int32_t(rng.Range(kRecallPrefix, T));
        if (!free_span(at, 2)) continue;
        put(at, keys[size_t(i)]);
        put(at + 1, FirstValue(o) + int32_t(rng.Range(0, o.values)));
        break;
      }
  } else if (o.task == RecallTask::kCopy) {
    // "N s1 .. sL N s1 .. sL" ending at the last position: the second N
    // predicts s1 from the token after the first, and so on.
    const DistanceBin& bin = PickBin(o.bins, rng);
    const int32_t d = int32_t(rng.Range(bin.lo, std::min(bin.hi, max_d + 1)));
    const int32_t length = d - 1, second = n - 1 - length, first = second - d;
    put(first, kRecallNeedle);
    put(second, kRecallNeedle);
    for (int32_t i = 1; i <= length; ++i) {
      const int32_t token = FirstKey() + int32_t(rng.Range(0, o.keys + o.values));
      put(first + i, token);
      answer(second + i, token, d);
    }
  } else {
    const int32_t m = o.needle_tokens;
    const int32_t at = n - 1 - m;  // the final "N", its answers after it
    const DistanceBin& bin = PickBin(o.bins, rng);
    const int32_t d = int32_t(rng.Range(bin.lo, std::min(bin.hi, max_d + 1)));
    const int32_t needle = at - d;
    put(needle, kRecallNeedle);
    put(at, kRecallNeedle);
    for (int32_t i = 1; i <= m; ++i) {
      const int32_t value = FirstValue(o) + int32_t(rng.Range(0, o.values));
      put(needle + i, value);
      answer(at + i, value, d);
    }
  }
  for (int32_t i = 0; i < n; ++i)
    if (!used[size_t(i)]) s.tokens[size_t(i)] = FirstFiller(o) + int32_t(rng.Range(3, o.filler));
  if (o.task == RecallTask::kMqar && (o.queries > o.pairs || o.pairs_first)) {
    // A pair asked again can be copied from its nearest earlier "k v",
    // which may be an earlier query: that is the distance that counts.
    for (int32_t i = 1; i < n; ++i) {
      if (s.distance[size_t(i)] == 0) continue;
      const int32_t key_at = i - 1;
      for (int32_t j = key_at - 2; j >= kRecallPrefix; --j)
        if (s.tokens[size_t(j)] == s.tokens[size_t(key_at)]) {
          s.distance[size_t(i)] = uint16_t(key_at - j);
          break;
        }
    }
  }
  return s;
}

RecallOptions RecallTaskAtContext(const RecallOptions& options, int32_t context) {
  if (context >= options.context) return options;
  RecallOptions o = options;
  const double scale = double(context) / double(options.context);
  o.context = context;
  o.pairs = std::max(1, int32_t(std::lround(options.pairs * scale)));
  o.queries = std::max(1, int32_t(std::lround(options.queries * scale)));
  const int32_t min_d = o.task == RecallTask::kNeedle ? o.needle_tokens + 1 : 2;
  const int32_t max_d = MaxDistance(o);
  for (DistanceBin& b : o.bins) {
    b.lo = std::clamp(int32_t(std::lround(b.lo * scale)), min_d, max_d);
    b.hi = std::clamp(int32_t(std::lround(b.hi * scale)), b.lo + 1, max_d + 1);
  }
  ValidateRecallOptions(o);
  return o;
}

std::vector<DistanceBin> ParseDistanceBins(const std::string& spec) {
  std::vector<DistanceBin> bins;
  std::istringstream in(spec);
  std::string item;
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("distance bins '" + spec + "': " + why +
                                " (expected e.g. 2-64:0.25,64-256:0.25,256-512:0.5)");
  };
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    DistanceBin b;
    const size_t dash = item.find('-'), colon = item.find(':');
    if (dash == std::string::npos) fail("'" + item + "' is not LO-HI");
    try {
      size_t used = 0;
      b.lo = std::stoi(item.substr(0, dash), &used);
      if (used != dash) fail("bad LO in '" + item + "'");
      const std::string hi = item.substr(dash + 1, colon == std::string::npos ? std::string::npos : colon - dash - 1);
      b.hi = std::stoi(hi, &used);
      if (used != hi.size()) fail("bad HI in '" + item + "'");
      if (colon != std::string::npos) b.share = std::stod(item.substr(colon + 1));
    } catch (const std::logic_error&) {  // stoi / stod
      fail("'" + item + "' is not LO-HI[:SHARE]");
    }
    if (b.hi <= b.lo) fail("'" + item + "' is empty");
    bins.push_back(b);
  }
  if (bins.empty()) fail("no bins");
  return bins;
}

RecallTask ParseRecallTask(const std::string& name) {
  if (name == "mqar") return RecallTask::kMqar;
  if (name == "needle") return RecallTask::kNeedle;
  if (name == "copy") return RecallTask::kCopy;
  throw std::invalid_argument("unknown recall task '" + name + "' (mqar, needle, copy)");
}

const char* RecallTaskName(RecallTask task) {
  return task == RecallTask::kMqar ? "mqar" : task == RecallTask::kNeedle ? "needle" : "copy";
}

nlohmann::json RecallTaskJson(const RecallOptions& o) {
  nlohmann::json j;
  j["task"] = RecallTaskName(o.task);
  j["context"] = o.context;
  j["vocab"] = RecallVocabSize(o);
  j["keys"] = o.keys;
  j["values"] = o.values;
  j["filler"] = o.filler;
  j["pairs"] = o.pairs;
  j["queries"] = o.queries;
  j["needle_tokens"] = o.needle_tokens;
  j["bins"] = nlohmann::json::array();
  for (const DistanceBin& b : o.bins) j["bins"].push_back({{"lo", b.lo}, {"hi", b.hi}, {"share", b.share}});
  j["filler_weight"] = o.filler_weight;
  j["copy_share"] = o.copy_share;
  j["pairs_first"] = o.pairs_first;
  j["seed"] = o.seed;
  return j;
}

RecallOptions RecallTaskFromJson(const nlohmann::json& j) {
  RecallOptions o;
  o.task = ParseRecallTask(j.value("task", "mqar"));
  o.context = j.value("context", o.context);
  o.keys = j.value("keys", o.keys);
  o.values = j.value("values", o.values);
  o.filler = j.value("filler", o.filler);
  o.pairs = j.value("pairs", o.pairs);
  o.queries = j.value("queries", o.queries);
  o.needle_tokens = j.value("needle_tokens", o.needle_tokens);
  o.filler_weight = j.value("filler_weight", 0.0f);
  o.copy_share = j.value("copy_share", 0.0);
  o.pairs_first = j.value("pairs_first", false);
  o.seed = j.value("seed", uint64_t(1));
  if (j.contains("bins")) {
    o.bins.clear();
    for (const auto& b : j["bins"]) o.bins.push_back({b.at("lo"), b.at("hi"), b.value("share", 1.0)});
  }
  ValidateRecallOptions(o);
  return o;
}

uint64_t RecallValSeed(const nlohmann::json& j) {
  return j.value("val_seed", j.value("seed", uint64_t(1)) + 1000000007ull);
}

nlohmann::json ReadRecallJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the recall task");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not a recall task (" + e.what() + ")");
  }
}

void WriteRecallFiles(const std::string& path, const RecallOptions& o, int64_t count) {
  TokenFileWriter tokens(path, uint32_t(RecallVocabSize(o)));
  TokenLabels labels;
  labels.doc_tokens = uint32_t(o.context + 1);
  for (int64_t i = 0; i < count; ++i) {
    const RecallSequence s = MakeRecallSequence(o, uint64_t(i));
    tokens.Append(s.tokens);
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      labels.weight.push_back(F32ToBF16(s.weight[t]));
      labels.distance.push_back(s.distance[t]);
    }
  }
  tokens.Close();
  WriteTokenLabels(LabelsPath(path), labels);
}

std::string RecallTokenName(const RecallOptions& o, int32_t id) {
  if (id == kRecallBos) return "<bos>";
  if (id == kRecallEos) return "<eos>";
  if (id == kRecallNeedle) return "N";
  if (id < FirstKey()) return "<r" + std::to_string(id) + ">";
  if (id < FirstValue(o)) return "k" + std::to_string(id - FirstKey());
  if (id < FirstFiller(o)) return "v" + std::to_string(id - FirstValue(o));
  return "f" + std::to_string(id - FirstFiller(o));
}

}  // namespace swan
