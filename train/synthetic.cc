#include "train/synthetic.h"

#include <stdexcept>

#include "train/data.h"

namespace swan {
namespace {

// A small counter-based generator for one document.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t index) : seed_(seed), index_(index) {}
  uint64_t Next() { return HashIndex(seed_, 100 + index_, counter_++); }
  int64_t Uniform(int64_t lo, int64_t hi) { return lo + int64_t(Next() % uint64_t(hi - lo + 1)); }
  template <typename T, size_t N>
  const T& Pick(const T (&items)[N]) {
    return items[Next() % N];
  }

 private:
  uint64_t seed_, index_, counter_ = 0;
};

const char* const kFiller[] = {
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\n",
    "A river runs past the old mill, and the wheel turns slowly in the afternoon light.\n",
    "Numbers are counted, lists are sorted, and the tests pass one after another.\n",
    "The library keeps its books in order, shelf by shelf, from the first floor to the last.\n",
    "Every morning the baker opens the shop and sets out the bread on wooden trays.\n",
};

const char* const kWords[] = {"alpha",  "bravo",  "cedar",   "delta",   "ember",  "fjord", "grove",
                              "harbor", "indigo", "juniper", "kestrel", "lumen",  "maple", "nectar",
                              "onyx",   "pepper", "quartz",  "raven",   "sierra", "tundra"};

std::string RandomName(Rng& rng) {
  std::string s = std::string(rng.Pick(kWords)) + "_" + rng.Pick(kWords);
  s += "_" + std::to_string(rng.Uniform(10, 99));
  return s;
}

std::string HexKey(Rng& rng, int n) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < n; ++i) s += kHex[rng.Next() % 16];
  return s;
}

SyntheticDoc Passkey(int64_t chars, Rng& rng) {
  const std::string key = std::to_string(rng.Uniform(10000, 99999));
  std::string text = "# There is a pass key hidden in this text. Remember it.\n";
  // The key sits in the first quarter; filler fills the rest.
  const int64_t before = rng.Uniform(0, chars / 4);
  while (int64_t(text.size()) < before) text += rng.Pick(kFiller);
  text += "The pass key is " + key + ". Remember it. " + key + " is the pass key.\n";
  while (int64_t(text.size()) < chars - 64) text += rng.Pick(kFiller);
  text += "What is the pass key? The pass key is " + key + ".\n";
  return {SyntheticKind::kPasskey, text, key};
}

SyntheticDoc KeyValue(int64_t chars, Rng& rng) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string text = "records = {\n";
  // The table takes about half the document, the queries come at the end.
  while (int64_t(text.size()) < chars / 2) {
    pairs.emplace_back(HexKey(rng, 6), HexKey(rng, 6));
    text += "    \"" + pairs.back().first + "\": \"" + pairs.back().second + "\",\n";
  }
  text += "}\n\n";
  while (int64_t(text.size()) < chars - 160) text += "# " + std::string(rng.Pick(kFiller));
  std::string answer;
  for (int q = 0; q < 3; ++q) {
    const auto& [k, v] = pairs[size_t(rng.Uniform(0, int64_t(pairs.size()) / 3))];
    text += "assert records[\"" + k + "\"] == \"" + v + "\"\n";
    answer = v;
  }
  return {SyntheticKind::kKeyValue, text, answer};
}

SyntheticDoc Code(int64_t chars, Rng& rng) {
  const std::string constant = "LIMIT_" + HexKey(rng, 4);
  const std::string value = std::to_string(rng.Uniform(100, 9999));
  const std::string helper = "compute_" + RandomName(rng);
  std::string text = "import math\n\n" + constant + " = " + value + "\n\n\n";
  text += "def " + helper + "(value, scale=2):\n    return math.floor(value * scale) % " + constant + "\n\n\n";
  // Unrelated functions in between.
  while (int64_t(text.size()) < chars - 200) {
    const std::string name = RandomName(rng);
    const int64_t a = rng.Uniform(2, 9), b = rng.Uniform(1, 50);
    text += "def " + name + "(items):\n";
    text += "    total = 0\n    for item in items:\n";
    text += "        if item % " + std::to_string(a) + " == 0:\n";
    text += "            total += item * " + std::to_string(b) + "\n";
    text += "    return total\n\n\n";
  }
  text += "def main():\n    result = " + helper + "(" + std::to_string(rng.Uniform(1, 99)) + ")\n    assert result < " +
          constant + "\n    assert " + constant + " == " + value + "\n";
  return {SyntheticKind::kCode, text, helper};
}

}  // namespace

SyntheticDoc MakeSyntheticDoc(SyntheticKind kind, int64_t chars, uint64_t seed, uint64_t index) {
  if (chars < 256) throw std::invalid_argument("synthetic documents need at least 256 characters");
  Rng rng(seed, index);
  switch (kind) {
    case SyntheticKind::kPasskey: return Passkey(chars, rng);
    case SyntheticKind::kKeyValue: return KeyValue(chars, rng);
    case SyntheticKind::kCode: return Code(chars, rng);
  }
  throw std::invalid_argument("unknown synthetic kind");
}

const char* SyntheticKindName(SyntheticKind kind) {
  switch (kind) {
    case SyntheticKind::kPasskey: return "passkey";
    case SyntheticKind::kKeyValue: return "kv";
    case SyntheticKind::kCode: return "code";
  }
  return "?";
}

std::vector<SyntheticKind> ParseSyntheticKinds(const std::string& list) {
  std::vector<SyntheticKind> kinds;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string word = list.substr(start, end - start);
    if (word == "passkey")
      kinds.push_back(SyntheticKind::kPasskey);
    else if (word == "kv")
      kinds.push_back(SyntheticKind::kKeyValue);
    else if (word == "code")
      kinds.push_back(SyntheticKind::kCode);
    else
      throw std::invalid_argument("unknown synthetic kind '" + word + "' (passkey, kv, code)");
    start = end + 1;
  }
  return kinds;
}

}  // namespace swan
