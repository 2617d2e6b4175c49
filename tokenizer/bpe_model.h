// The BPE model of tokenizer.json ("model": {"type": "BPE", ...}): a
// vocabulary (token text -> id) and merges ordered by rank. Encodes one
// pre-tokenized piece by starting from its characters (or, with
// byte_fallback, the <0xHH> tokens of characters missing from the
// vocabulary) and applying the lowest-rank merge first, leftmost on ties,
// exactly as Hugging Face's `tokenizers` does.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace swan {

// Hash that lets unordered_map<std::string, ...> be searched by string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
using TokenIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // Reads config["vocab"], config["merges"] and the options. Throws
  // std::invalid_argument naming `where` and the field on bad input.
  BpeModel(const nlohmann::json& config, const std::string& where);

  // Appends the ids of one piece to *ids.
  void Encode(std::string_view piece, std::vector<int32_t>* ids) const;

  // Token text of an id, or nullptr if the model has no such id.
  const std::string* IdToToken(int32_t id) const;
  // Id of a token text, or -1.
  int32_t TokenToId(std::string_view token) const;
  // One past the largest id in the vocabulary.
  int32_t size() const { return static_cast<int32_t>(id_to_token_.size()); }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  // Applies the merges to a piece, through the cache; long pieces are first
  // cut where no merge can ever join the two sides (see SplitIndependent).
  void EncodeMerged(std::string_view piece, std::vector<int32_t>* ids) const;
  // Applies the merges with a heap of candidate merges (no cache).
  void EncodeUncached(std::string_view piece, std::vector<int32_t>* ids) const;
  // Calls EncodeMerged on the parts of a long piece between positions where
  // the two neighbouring characters never appear side by side inside any
  // token: no merge can cross such a position, so encoding the parts
  // separately gives the same ids. This keeps SentencePiece-style inputs
  // (one piece per text, no pre-tokenizer) fast and cacheable.
  void SplitIndependent(std::string_view piece, std::vector<int32_t>* ids) const;

  TokenIdMap token_to_id_;
  std::vector<std::string> id_to_token_;  // [size()], "" for ids not in the vocabulary
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t byte_ids_[256];  // id of "<0xHH>" for each byte, or -1
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;

  // Pairs of characters (a << 32 | b) adjacent inside some token; built on
  // first use by SplitIndependent.
  mutable std::once_flag inner_pairs_once_;
  mutable std::unordered_set<uint64_t> inner_pairs_;

  // Pieces already encoded (only short ones), in shards picked by hash so
  // that threads encoding at once rarely wait for each other. Bounded: a
  // shard is cleared when full.
  static constexpr size_t kCacheMaxPieceBytes = 256;
  static constexpr size_t kCacheShards = 16;
  static constexpr size_t kCacheMaxEntriesPerShard = (1 << 18) / kCacheShards;
  struct CacheShard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> pieces;
  };
  mutable std::array<CacheShard, kCacheShards> cache_;
};

}  // namespace swan
