#include "eval/haystack.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace swan {
namespace {

std::vector<int32_t> EncodePlain(const Tokenizer& tokenizer, const std::string& text) {
  EncodeOptions o;
  o.add_special_tokens = false;
  o.parse_special = false;
  return tokenizer.Encode(text, o);
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

PieceEncoder::PieceEncoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {
  // Which joiner makes pieces concatenate to the encoding of the whole text?
  const std::vector<int32_t> whole = EncodePlain(tokenizer, "Tom saw the big cat.");
  const std::vector<int32_t> head = EncodePlain(tokenizer, "Tom saw");
  for (const char* joiner : {" ", ""}) {
    if (Concat(head, EncodePlain(tokenizer, std::string(joiner) + "the big cat.")) == whole) {
      joiner_ = joiner;
      return;
    }
  }
}

std::vector<int32_t> PieceEncoder::Mid(const std::string& text) const {
  return EncodePlain(tokenizer_, joiner_ + text);
}

std::vector<int32_t> PieceEncoder::Start(const std::string& text) const { return EncodePlain(tokenizer_, text); }

Filler NoiseFiller(const PieceEncoder& encoder) {
  Filler f;
  for (const char* s :
       {"The grass is green.", "The sky is blue.", "The sun is yellow.", "Here we go.", "There and back again."})
    f.sentences.push_back(encoder.Mid(s));
  return f;
}

Filler TextFiller(const PieceEncoder& encoder, const std::string& text) {
  Filler f;
  std::string sentence;
  auto flush = [&] {
    size_t b = sentence.find_first_not_of(" \t\r\n");
    if (b != std::string::npos) {
      size_t e = sentence.find_last_not_of(" \t\r\n");
      std::string s = sentence.substr(b, e - b + 1);
      for (char& c : s)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
      f.sentences.push_back(encoder.Mid(s));
    }
    sentence.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    sentence += c;
    const bool end_mark = c == '.' || c == '!' || c == '?';
    const bool next_space = i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n';
    const bool blank_line = c == '\n' && i + 1 < text.size() && text[i + 1] == '\n';
    if ((end_mark && next_space) || blank_line) flush();
  }
  flush();
  std::erase_if(f.sentences, [](const std::vector<int32_t>& s) { return s.empty(); });
  if (f.sentences.empty()) throw std::invalid_argument("the filler text has no sentence");
  return f;
}

Haystack BuildHaystack(const HaystackOptions& options, const Filler& filler, std::vector<Insertion> insertions) {
  if (filler.sentences.empty()) throw std::invalid_argument("haystack: the filler has no sentence");
  const int64_t prefix = int64_t(options.prefix.size());
  int64_t needle_tokens = 0;
  for (const Insertion& ins : insertions) {
    if (ins.tokens.empty()) throw std::invalid_argument("haystack: an empty insertion");
    needle_tokens += int64_t(ins.tokens.size());
  }
  if (prefix + needle_tokens > options.length)
    throw std::invalid_argument("haystack: " + std::to_string(prefix + needle_tokens) +
                                " tokens of prefix and needles do not fit in " + std::to_string(options.length));
  std::vector<size_t> order(insertions.size());  // insertions by target
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return insertions[a].target < insertions[b].target; });

  Haystack h;
  h.tokens = options.prefix;
  h.starts.assign(insertions.size(), -1);
  size_t next = 0;                  // the next insertion, into order
  int64_t pending = needle_tokens;  // tokens of the insertions not placed yet
  size_t sentence = options.first_sentence % filler.sentences.size();
  auto place = [&] {
    const size_t i = order[next++];
    h.starts[i] = int64_t(h.tokens.size());
    h.tokens.insert(h.tokens.end(), insertions[i].tokens.begin(), insertions[i].tokens.end());
    pending -= int64_t(insertions[i].tokens.size());
  };
  while (true) {
    const std::vector<int32_t>& s = filler.sentences[sentence];
    const int64_t here = int64_t(h.tokens.size());
    // Place the insertions due here: with snapping, those whose target is
    // nearer this boundary than the end of the next sentence.
    while (next < order.size()) {
      const int64_t target = insertions[order[next]].target;
      // Snapping, a target at or past the last start that fits waits for
      // the room to run out, so that it ends exactly at `length`.
      const bool due = options.snap_to_sentences
                           ? target <= here + int64_t(s.size()) / 2 && target < options.length - pending
                           : target <= here;
      if (!due) break;
      place();
    }
    const int64_t room = options.length - int64_t(h.tokens.size()) - pending;  // filler still allowed
    if (room <= 0) {
      if (next == order.size()) break;
      place();  // no filler fits before it any more
      continue;
    }
    int64_t take = std::min<int64_t>(int64_t(s.size()), room);
    if (!options.snap_to_sentences && next < order.size())
      take = std::min(take, insertions[order[next]].target - int64_t(h.tokens.size()));
    if (take <= 0) {
      place();  // overlapping targets: right after the one before
      continue;
    }
    h.tokens.insert(h.tokens.end(), s.begin(), s.begin() + take);
    sentence = (sentence + 1) % filler.sentences.size();
  }
  return h;
}

}  // namespace swan
