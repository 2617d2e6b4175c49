#include "tokenizer/bpe_model.h"

#include <nlohmann/json.hpp>
#include <queue>
#include <stdexcept>

#include "tokenizer/utf8.h"

namespace swan {

using nlohmann::json;

BpeModel::BpeModel(const json& config, const std::string& where) {
  const json& vocab = config.value("vocab", json());
  if (!vocab.is_object()) throw std::invalid_argument(where + ".vocab: expected an object");
  int64_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() >= (1ll << 30))
      throw std::invalid_argument(where + ".vocab[\"" + it.key() + "\"]: expected a non-negative integer id");
    max_id = std::max<int64_t>(max_id, it.value().get<int64_t>());
  }
  // Ids may leave holes, but not so many that the table would be mostly empty.
  if (max_id >= static_cast<int64_t>(2 * vocab.size() + 65536))
    throw std::invalid_argument(where + ".vocab: ids are too sparse (largest " + std::to_string(max_id) + " for " +
                                std::to_string(vocab.size()) + " tokens)");
  id_to_token_.resize(static_cast<size_t>(max_id + 1));
  token_to_id_.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = it.value().get<int32_t>();
    token_to_id_[it.key()] = id;
    id_to_token_[id] = it.key();
  }

  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json& v = config.value(key, json());
    if (v.is_string() && !v.get<std::string>().empty())
      throw std::invalid_argument(where + "." + key + ": not supported by swan (got \"" + v.get<std::string>() + "\")");
  }
  const json& dropout = config.value("dropout", json());
  if (dropout.is_number() && dropout.get<double>() > 0)
    throw std::invalid_argument(where + ".dropout: BPE dropout is not supported");
  byte_fallback_ = config.value("byte_fallback", json(false)).is_boolean() && config.value("byte_fallback", false);
  fuse_unk_ = config.value("fuse_unk", json(false)).is_boolean() && config.value("fuse_unk", false);
  ignore_merges_ = config.value("ignore_merges", json(false)).is_boolean() && config.value("ignore_merges", false);
  const json& unk = config.value("unk_token", json());
  if (unk.is_string()) {
    unk_id_ = TokenToId(unk.get<std::string>());
    if (unk_id_ < 0)
      throw std::invalid_argument(where + ".unk_token: '" + unk.get<std::string>() + "' is not in the vocabulary");
  }
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
    byte_ids_[b] = TokenToId(name);
  }

  const json& merges = config.value("merges", json::array());
  if (!merges.is_array()) throw std::invalid_argument(where + ".merges: expected an array");
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    const std::string at = where + ".merges[" + std::to_string(rank) + "]";
    std::string left, right;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos) throw std::invalid_argument(at + ": expected \"LEFT RIGHT\", got \"" + s + "\"");
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      throw std::invalid_argument(at + ": expected a string or a pair of strings");
    }
    const int32_t a = TokenToId(left), b = TokenToId(right), merged = TokenToId(left + right);
    if (a < 0) throw std::invalid_argument(at + ": token '" + left + "' is not in the vocabulary");
    if (b < 0) throw std::invalid_argument(at + ": token '" + right + "' is not in the vocabulary");
    if (merged < 0) throw std::invalid_argument(at + ": merged token '" + left + right + "' is not in the vocabulary");
    merges_.insert_or_assign(PairKey(a, b), Merge{static_cast<int32_t>(rank), merged});
  }
}

const std::string* BpeModel::IdToToken(int32_t id) const {
  if (id < 0 || id >= size() || (id_to_token_[id].empty() && TokenToId("") != id)) return nullptr;
  return &id_to_token_[id];
}

int32_t BpeModel::TokenToId(std::string_view token) const {
  auto it = token_to_id_.find(token);
  return it == token_to_id_.end() ? -1 : it->second;
}

void BpeModel::Encode(std::string_view piece, std::vector<int32_t>* ids) const {
  if (piece.empty()) return;
  if (ignore_merges_) {  // a piece that is a token is taken whole
    const int32_t id = TokenToId(piece);
    if (id >= 0) {
      ids->push_back(id);
      return;
    }
  }
  EncodeMerged(piece, ids);
}

void BpeModel::EncodeMerged(std::string_view piece, std::vector<int32_t>* ids) const {
  if (piece.size() > kCacheMaxPieceBytes) {
    SplitIndependent(piece, ids);
    return;
  }
  CacheShard& shard = cache_[StringHash()(piece) % kCacheShards];
  {
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.pieces.find(piece);
    if (it != shard.pieces.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = ids->size();
  EncodeUncached(piece, ids);
  std::lock_guard<std::mutex> lock(shard.mutex);
  if (shard.pieces.size() >= kCacheMaxEntriesPerShard) shard.pieces.clear();
  shard.pieces.emplace(std::string(piece), std::vector<int32_t>(ids->begin() + first, ids->end()));
}

void BpeModel::SplitIndependent(std::string_view piece, std::vector<int32_t>* ids) const {
  std::call_once(inner_pairs_once_, [&] {
    char32_t a, b;
    for (const std::string& token : id_to_token_) {
      size_t pos = 0;
      if (token.empty()) continue;
      pos += DecodeUtf8(token, pos, &a);
      while (pos < token.size()) {
        pos += DecodeUtf8(token, pos, &b);
        inner_pairs_.insert((static_cast<uint64_t>(a) << 32) | b);
        a = b;
      }
    }
  });
  size_t start = 0;  // start of the current part
  size_t pos = 0;
  char32_t prev = kInvalidCodePoint;
  bool prev_known = false;  // prev is a token of its own (not byte fallback or unk)
  while (pos < piece.size()) {
    char32_t cp;
    const size_t len = DecodeUtf8(piece, pos, &cp);
    const bool known = cp != kInvalidCodePoint && TokenToId(piece.substr(pos, len)) >= 0;
    if (pos > start && known && prev_known && !inner_pairs_.count((static_cast<uint64_t>(prev) << 32) | cp)) {
      const std::string_view part = piece.substr(start, pos - start);
      part.size() > kCacheMaxPieceBytes ? EncodeUncached(part, ids) : EncodeMerged(part, ids);
      start = pos;
    }
    prev = cp;
    prev_known = known;
    pos += len;
  }
  const std::string_view part = piece.substr(start);
  part.size() > kCacheMaxPieceBytes ? EncodeUncached(part, ids) : EncodeMerged(part, ids);
}

void BpeModel::EncodeUncached(std::string_view piece, std::vector<int32_t>* ids) const {
  // The symbols of the word, as a doubly linked list over an array.
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // indices into symbols, -1 at the ends
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(piece.size());
  auto push = [&](int32_t id) {
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, n - 1, -1, true});
    if (n > 0) symbols[n - 1].next = n;
  };
  bool last_was_unk = false;
  char32_t cp;
  for (size_t pos = 0; pos < piece.size();) {
    const size_t len = DecodeUtf8(piece, pos, &cp);
    const std::string_view ch = piece.substr(pos, len);
    pos += len;
    const int32_t id = TokenToId(ch);
    if (id >= 0) {
      push(id);
      last_was_unk = false;
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (const char c : ch) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (const char c : ch) push(byte_ids_[static_cast<uint8_t>(c)]);
        last_was_unk = false;
        continue;
      }
    }
    if (unk_id_ >= 0 && !(fuse_unk_ && last_was_unk)) push(unk_id_);
    last_was_unk = unk_id_ >= 0;
  }

  struct Candidate {
    int32_t rank, pos, new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int32_t pos) {
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    auto it = merges_.find(PairKey(symbols[pos].id, symbols[next].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.new_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    auto it = merges_.find(PairKey(left.id, right.id));
    if (it == merges_.end() || it->second.rank != top.rank) continue;  // stale
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) ids->push_back(symbols[i].id);
}

}  // namespace swan
