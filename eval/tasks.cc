#include "eval/tasks.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace swan {
namespace {

// Words for keys: simple nouns and adjectives any tokenizer knows.
const char* const kNouns[] = {"cat",   "dog",    "ball",  "tree",  "house",  "bird",   "fish",  "car",
                              "boat",  "book",   "cake",  "hat",   "cup",    "shoe",   "kite",  "bear",
                              "duck",  "frog",   "horse", "apple", "flower", "train",  "star",  "moon",
                              "door",  "chair",  "box",   "bell",  "drum",   "lamp",   "sock",  "coat",
                              "truck", "rabbit", "mouse", "lion",  "sheep",  "garden", "river", "hill"};
const char* const kAdjectives[] = {"red", "blue", "green", "big",  "small",  "happy", "old",
                                   "new", "soft", "shiny", "tall", "little", "brown", "yellow"};

// `count` different keys ("red cat").
std::vector<std::string> DrawKeys(std::mt19937_64& rng, size_t count) {
  const size_t n_nouns = std::size(kNouns), n_adj = std::size(kAdjectives);
  std::vector<size_t> all(n_nouns * n_adj);
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::shuffle(all.begin(), all.end(), rng);
  if (count > all.size()) throw std::invalid_argument("task: too many keys asked for");
  std::vector<std::string> keys;
  for (size_t i = 0; i < count; ++i)
    keys.push_back(std::string(kAdjectives[all[i] % n_adj]) + " " + kNouns[all[i] / n_adj]);
  return keys;
}

// A random number of `digits` digits without a leading zero.
std::string DrawNumber(std::mt19937_64& rng, int digits) {
  std::string s(1, char('1' + rng() % 9));
  while (int(s.size()) < digits) s += char('0' + rng() % 10);
  return s;
}

// Where `needle` occurs in `hay` at or after `from`; -1 if nowhere.
int64_t Find(const std::vector<int32_t>& hay, const std::vector<int32_t>& needle, int64_t from) {
  auto it = std::search(hay.begin() + from, hay.end(), needle.begin(), needle.end());
  return it == hay.end() ? -1 : int64_t(it - hay.begin());
}

// A piece of text holding values: its tokens and where each value's tokens start.
struct Piece {
  std::vector<int32_t> tokens;
  std::vector<int64_t> value_at;             // [values]
  std::vector<std::vector<int32_t>> values;  // [values] tokens of each value
};

Piece EncodePiece(const PieceEncoder& encoder, const std::string& text, const std::vector<std::string>& values) {
  Piece p;
  p.tokens = encoder.Mid(text);
  int64_t from = 0;
  for (const std::string& v : values) {
    std::vector<int32_t> vt = encoder.Mid(v);
    int64_t at = Find(p.tokens, vt, from);
    if (at < 0)
      throw std::runtime_error("task: the tokenizer merges the value '" + v + "' with the text around it in '" + text +
                               "'");
    p.value_at.push_back(at);
    p.values.push_back(std::move(vt));
    from = at + 1;
  }
  return p;
}

std::vector<int32_t> Prefix(const TaskContext& c, const std::string& instruction) {
  std::vector<int32_t> prefix;
  if (c.bos_id >= 0) prefix.push_back(c.bos_id);
  const std::vector<int32_t> t = c.encoder->Start(instruction);
  prefix.insert(prefix.end(), t.begin(), t.end());
  return prefix;
}

// The text of a retrieval item before it is placed in a haystack.
struct RetrievalText {
  std::string instruction;
  std::vector<Piece> needles;         // needles[0] is placed at the depth
  std::vector<int> needle_of_answer;  // [answers] which needle holds each answer's value
  std::vector<int> value_of_answer;   // [answers] which value of that needle
  std::string question;               // ends where the answer starts
  Piece answer;                       // the answer text, values located
};

std::string JoinAnd(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i) s += (i == 0 ? "" : i + 1 == words.size() ? " and " : ", ") + words[i];
  return s;
}

RetrievalText MakeText(const TaskContext& c, TaskKind kind, std::mt19937_64& rng) {
  RetrievalText t;
  const PieceEncoder& e = *c.encoder;
  if (kind == TaskKind::kPasskey) {
    const std::string key = std::to_string(1 + rng() % 50000);
    t.instruction =
        "There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
        "I will quiz you about the important information there.";
    t.needles.push_back(
        EncodePiece(e, "The pass key is " + key + ". Remember it. " + key + " is the pass key.", {key}));
    t.needle_of_answer = {0};
    t.value_of_answer = {0};
    t.question = "What is the pass key? The pass key is";
    t.answer = EncodePiece(e, key + ".", {key});
    return t;
  }
  t.instruction =
      "Some special magic numbers are hidden within the following text. Make sure to memorize it. "
      "I will quiz you about the numbers afterwards.";
  const int n_needles = kind == TaskKind::kNiahSingle ? 1 : 4;
  const std::vector<std::string> keys = DrawKeys(rng, size_t(n_needles));
  std::vector<std::string> values;
  for (int i = 0; i < n_needles; ++i) values.push_back(DrawNumber(rng, 7));
  auto needle = [&](const std::string& key, const std::string& value) {
    return EncodePiece(e, "One of the special magic numbers for " + key + " is: " + value + ".", {value});
  };
  switch (kind) {
    case TaskKind::kNiahSingle:
    case TaskKind::kNiahMultiKey: {
      // Multi-key: the other keys are distractors, never asked.
      for (int i = 0; i < n_needles; ++i) t.needles.push_back(needle(keys[size_t(i)], values[size_t(i)]));
      t.needle_of_answer = {0};
      t.value_of_answer = {0};
      t.question = "What is the special magic number for " + keys[0] +
                   " mentioned in the provided text? The special magic number for " + keys[0] +
                   " mentioned in the provided text is";
      t.answer = EncodePiece(e, values[0] + ".", {values[0]});
      return t;
    }
    case TaskKind::kNiahMultiValue: {
      for (int i = 0; i < n_needles; ++i) {
        t.needles.push_back(needle(keys[0], values[size_t(i)]));
        t.needle_of_answer.push_back(i);
        t.value_of_answer.push_back(0);
      }
      t.question = "What are all the special magic numbers for " + keys[0] +
                   " mentioned in the provided text? The special magic numbers for " + keys[0] +
                   " mentioned in the provided text are";
      break;
    }
    case TaskKind::kNiahMultiQuery: {
      for (int i = 0; i < n_needles; ++i) {
        t.needles.push_back(needle(keys[size_t(i)], values[size_t(i)]));
        t.needle_of_answer.push_back(i);
        t.value_of_answer.push_back(0);
      }
      const std::string asked = JoinAnd(keys);
      t.question = "What are the special magic numbers for " + asked +
                   " mentioned in the provided text? The special magic numbers for " + asked +
                   " mentioned in the provided text are";
      break;
    }
    default: throw std::invalid_argument("task: not a retrieval task");
  }
  // Multi-value and multi-query answers list the values in needle order.
  t.answer = EncodePiece(e, JoinAnd(values) + ".", values);
  return t;
}

}  // namespace

const char* TaskName(TaskKind kind) {
  switch (kind) {
    case TaskKind::kPasskey: return "passkey";
    case TaskKind::kNiahSingle: return "niah_single";
    case TaskKind::kNiahMultiKey: return "niah_multikey";
    case TaskKind::kNiahMultiValue: return "niah_multivalue";
    case TaskKind::kNiahMultiQuery: return "niah_multiquery";
    case TaskKind::kRecall: return "recall";
  }
  return "?";
}

int64_t MinRetrievalLength(const TaskContext& context, TaskKind kind) {
  // Keys and values differ in length from item to item: the longest of 16
  // draws, and room for longer keys.
  int64_t longest = 0;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    std::mt19937_64 rng(seed);
    const RetrievalText t = MakeText(context, kind, rng);
    int64_t n = int64_t(Prefix(context, t.instruction).size() + context.encoder->Mid(t.question).size());
    for (const Piece& p : t.needles) n += int64_t(p.tokens.size());
    longest = std::max(longest, n);
  }
  return longest + 32;
}

TaskItem MakeRetrievalItem(const TaskContext& c, TaskKind kind, int64_t length, double depth, uint64_t seed) {
  if (!c.encoder || !c.filler) throw std::invalid_argument("task: no encoder or filler");
  if (depth < 0 || depth > 1) throw std::invalid_argument("task: depth must be within 0..1");
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + uint64_t(kind));
  const RetrievalText t = MakeText(c, kind, rng);
  const std::vector<int32_t> question = c.encoder->Mid(t.question);

  HaystackOptions h;
  h.prefix = Prefix(c, t.instruction);
  h.length = length - int64_t(question.size());
  h.first_sentence = size_t(rng() % 1000003);
  int64_t needle_tokens = 0;
  for (const Piece& p : t.needles) needle_tokens += int64_t(p.tokens.size());
  const int64_t span = h.length - int64_t(h.prefix.size()) - needle_tokens;  // filler tokens
  if (span < 0)
    throw std::invalid_argument(std::string("task ") + TaskName(kind) + ": " + std::to_string(length) +
                                " tokens are too few (at least " + std::to_string(length - span) + ")");
  std::vector<Insertion> insertions;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (size_t i = 0; i < t.needles.size(); ++i) {
    const double d = i == 0 ? depth : uniform(rng);
    insertions.push_back({int64_t(h.prefix.size()) + std::llround(d * double(span)), t.needles[i].tokens});
  }
  const Haystack hay = BuildHaystack(h, *c.filler, insertions);

  TaskItem item;
  item.kind = kind;
  item.depth = depth;
  item.tokens = hay.tokens;
  item.tokens.insert(item.tokens.end(), question.begin(), question.end());
  item.prompt_length = int64_t(item.tokens.size());
  item.filler_begin = int64_t(h.prefix.size());
  item.filler_end = h.length;
  item.needle_tokens = needle_tokens;
  item.needle_start = hay.starts[0];
  item.tokens.insert(item.tokens.end(), t.answer.tokens.begin(), t.answer.tokens.end());
  for (size_t a = 0; a < t.needle_of_answer.size(); ++a) {
    const size_t n = size_t(t.needle_of_answer[a]);
    const Piece& needle = t.needles[n];
    Answer ans;
    ans.begin = item.prompt_length + t.answer.value_at[a];
    ans.end = ans.begin + int64_t(t.answer.values[a].size());
    ans.needle = hay.starts[n] + needle.value_at[size_t(t.value_of_answer[a])];
    ans.distance = ans.begin - 1 - ans.needle;
    ans.text = c.encoder->tokenizer().Decode(t.answer.values[a], true);
    item.answers.push_back(ans);
  }
  return item;
}

int64_t MinRecallDistance(const TaskContext& context) {
  // The longest pair sentence of any key and a 4-digit number, and the margin.
  int64_t longest = 0;
  for (const char* adjective : kAdjectives)
    for (const char* noun : kNouns)
      longest = std::max<int64_t>(
          longest, int64_t(context.encoder->Mid(std::string("The ") + adjective + " " + noun + " has 8888.").size()));
  return longest + 2;
}

TaskItem MakeRecallItem(const TaskContext& c, int64_t distance, int32_t n_queries, uint64_t seed) {
  if (!c.encoder) throw std::invalid_argument("task: no encoder");
  if (n_queries < 1) throw std::invalid_argument("recall: at least one query");
  if (distance < 1) throw std::invalid_argument("recall: the distance must be positive");
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 77);
  const PieceEncoder& e = *c.encoder;
  const size_t n_distractors = 48;
  const std::vector<std::string> keys = DrawKeys(rng, size_t(n_queries) + n_distractors);
  auto pair = [&](const std::string& key, const std::string& value) {
    return EncodePiece(e, "The " + key + " has " + value + ".", {value});
  };
  // The haystack is made of distractor pairs: other keys, other numbers.
  Filler distractors;
  for (size_t i = size_t(n_queries); i < keys.size(); ++i)
    distractors.sentences.push_back(pair(keys[i], DrawNumber(rng, 4)).tokens);

  HaystackOptions h;
  h.prefix = Prefix(c, "Here is a list of things and their numbers. Remember the number each thing has.");
  h.snap_to_sentences = false;  // exact distances; distractor sentences may be cut
  std::vector<Piece> pairs;
  for (int32_t q = 0; q < n_queries; ++q) pairs.push_back(pair(keys[size_t(q)], DrawNumber(rng, 4)));
  // Pair q at start[q], its query (the same sentence again) at start[q] +
  // distance + 1, so that the token before the answer is exactly `distance`
  // tokens after the pair's value. Each pair goes at the first place after
  // the previous pair where neither it nor its query overlaps anything
  // placed, with `margin` filler tokens around every piece.
  const int64_t margin = 3;
  std::vector<std::pair<int64_t, int64_t>> used;  // [begin, end) of placed pieces, margins included
  auto is_free = [&](int64_t begin, int64_t end) {
    for (auto [b, e] : used)
      if (begin < e && b < end) return false;
    return true;
  };
  int64_t longest = 0;
  for (const Piece& p : pairs) longest = std::max<int64_t>(longest, int64_t(p.tokens.size()));
  if (distance + 1 < longest + margin)
    throw std::invalid_argument("recall: a distance of " + std::to_string(distance) +
                                " tokens is shorter than a pair sentence (" + std::to_string(longest) +
                                " tokens) and the " + std::to_string(margin) + " tokens between them");
  std::vector<int64_t> start(static_cast<size_t>(n_queries));  // [n_queries]
  int64_t at = int64_t(h.prefix.size()) + margin;
  for (int32_t q = 0; q < n_queries; ++q) {
    const int64_t len = int64_t(pairs[size_t(q)].tokens.size());
    while (!is_free(at - margin, at + len + margin) ||
           !is_free(at + distance + 1 - margin, at + distance + 1 + len + margin))
      ++at;
    start[size_t(q)] = at;
    used.push_back({at - margin, at + len + margin});
    used.push_back({at + distance + 1 - margin, at + distance + 1 + len + margin});
    at += len + margin;
  }
  std::vector<Insertion> insertions;
  h.length = 0;
  for (int32_t q = 0; q < n_queries; ++q) {
    const int64_t len = int64_t(pairs[size_t(q)].tokens.size());
    insertions.push_back({start[size_t(q)], pairs[size_t(q)].tokens});
    insertions.push_back({start[size_t(q)] + distance + 1, pairs[size_t(q)].tokens});
    h.length = std::max(h.length, start[size_t(q)] + distance + 1 + len + margin);
  }
  h.first_sentence = 0;
  const Haystack hay = BuildHaystack(h, distractors, insertions);

  TaskItem item;
  item.kind = TaskKind::kRecall;
  item.tokens = hay.tokens;
  item.requested_distance = distance;
  for (int32_t q = 0; q < n_queries; ++q) {
    const Piece& p = pairs[size_t(q)];
    Answer ans;
    ans.needle = hay.starts[size_t(2 * q)] + p.value_at[0];
    ans.begin = hay.starts[size_t(2 * q + 1)] + p.value_at[0];
    ans.end = ans.begin + int64_t(p.values[0].size());
    ans.distance = ans.begin - 1 - ans.needle;
    ans.text = e.tokenizer().Decode(p.values[0], true);
    item.answers.push_back(ans);
  }
  std::sort(item.answers.begin(), item.answers.end(),
            [](const Answer& a, const Answer& b) { return a.begin < b.begin; });
  item.prompt_length = item.answers.front().begin;
  return item;
}

}  // namespace swan
