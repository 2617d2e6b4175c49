#include "train/data.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>

namespace swan {

uint64_t HashIndex(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1) + 0xD1B54A32D192ED03ull * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {

std::unique_ptr<TokenFile> OpenTokens(const std::string& path, const char* what, int64_t seq) {
  auto f = std::make_unique<TokenFile>(path);
  if (f->size() < uint64_t(seq + 1))
    throw std::runtime_error(std::string(what) + " " + path + " has " + std::to_string(f->size()) +
                             " tokens, fewer than one sequence of the context " + std::to_string(seq) +
                             " + 1; use more data or a shorter --context");
  return f;
}

constexpr uint64_t kStreamOrder = 1, kStreamMix = 2, kStreamDoc = 3;

}  // namespace

DataLoader::Source DataLoader::Open(const std::string& path, const char* what, int64_t seq) {
  Source source;
  source.file = OpenTokens(path, what, seq);
  const std::string labels_path = LabelsPath(path);
  if (!std::filesystem::exists(labels_path)) return source;
  source.labels = std::make_unique<TokenLabels>(ReadTokenLabels(labels_path));
  if (source.labels->size() != source.file->size())
    throw std::runtime_error(labels_path + " labels " + std::to_string(source.labels->size()) + " tokens, " + path +
                             " holds " + std::to_string(source.file->size()));
  const uint32_t doc = source.labels->doc_tokens;
  if (doc > 0 && doc < uint64_t(seq + 1))
    throw std::runtime_error(std::string(what) + " " + path + " has documents of " + std::to_string(doc) +
                             " tokens, fewer than the context " + std::to_string(seq) +
                             " + 1; use a --context of at most " + std::to_string(doc - 1));
  return source;
}

int64_t DataLoader::Source::Sequences(int64_t seq) const {
  if (labels && labels->doc_tokens > 0) return int64_t(file->size() / labels->doc_tokens);
  return int64_t((file->size() - 1) / uint64_t(seq));
}

uint64_t DataLoader::Source::Start(int64_t sequence, int64_t seq) const {
  const uint64_t stride = labels && labels->doc_tokens > 0 ? labels->doc_tokens : uint64_t(seq);
  return uint64_t(sequence) * stride;
}

DataLoader::DataLoader(const DataOptions& options) : options_(options), seq_(options.seq) {
  if (options.seq <= 0) throw std::invalid_argument("data: the context must be positive");
  if (!options.recall_task.empty()) {
    const nlohmann::json j = ReadRecallJson(options.recall_task);
    recall_ = true;
    train_task_ = RecallTaskFromJson(j);
    val_task_ = train_task_;
    val_task_.seed = RecallValSeed(j);
    val_task_.copy_share = 0;  // held out: the task itself
    val_count_ = j.value("val_sequences", int64_t(256));
    if (options.seq > train_task_.context)
      throw std::runtime_error(options.recall_task + " makes sequences of " + std::to_string(train_task_.context) +
                               " tokens, fewer than the context " + std::to_string(options.seq) +
                               "; use a --context of at most " + std::to_string(train_task_.context));
    train_now_ = RecallTaskAtContext(train_task_, int32_t(seq_));
    val_now_ = RecallTaskAtContext(val_task_, int32_t(seq_));
    return;
  }
  train_ = Open(options.train_path, "training data", options.seq);
  if (!options.val_path.empty()) {
    val_ = Open(options.val_path, "held-out data", options.seq);
    if (val_.file->vocab_size() != train_.file->vocab_size())
      throw std::runtime_error("held-out data " + options.val_path + " has vocabulary " +
                               std::to_string(val_.file->vocab_size()) + ", the training data " +
                               std::to_string(train_.file->vocab_size()));
  }
  if (!options.synthetic_path.empty() && options.synthetic_rate > 0) {
    synthetic_ = OpenTokens(options.synthetic_path, "synthetic data", options.seq);
    if (synthetic_->vocab_size() != train_.file->vocab_size())
      throw std::runtime_error("synthetic data " + options.synthetic_path + " was tokenized with another vocabulary (" +
                               std::to_string(synthetic_->vocab_size()) + " vs " +
                               std::to_string(train_.file->vocab_size()) + ")");
    // Documents end with the end-of-document id, which is the file's last id.
    // A sequence starts at a document's start, or, for a document longer
    // than a sequence, ends at its end, so that the retrieval question (at
    // the end) is always inside.
    const uint32_t eod = (*synthetic_)[synthetic_->size() - 1];
    const uint64_t span = uint64_t(options.seq) + 1, size = synthetic_->size();
    uint64_t start = 0;
    for (uint64_t i = 0; i < size; ++i) {
      if ((*synthetic_)[i] != eod) continue;
      const uint64_t end = i + 1;  // one past the end-of-document id
      uint64_t first = end - start > span ? end - span : start;
      if (first + span > size) first = size - span;
      synthetic_docs_.push_back(first);
      start = end;
    }
  }
}

void DataLoader::set_context(int64_t seq) {
  if (seq < 1 || seq > options_.seq)
    throw std::invalid_argument("data: context " + std::to_string(seq) + " outside 1.." + std::to_string(options_.seq));
  if (seq == seq_) return;  // called every step
  seq_ = seq;
  if (recall_) {
    train_now_ = RecallTaskAtContext(train_task_, int32_t(seq));
    val_now_ = RecallTaskAtContext(val_task_, int32_t(seq));
  }
}

int64_t DataLoader::train_sequences() const { return recall_ ? int64_t(1) << 40 : train_.Sequences(seq_); }

int64_t DataLoader::val_sequences() const { return recall_ ? val_count_ : val_.file ? val_.Sequences(seq_) : 0; }

uint32_t DataLoader::vocab_size() const {
  return recall_ ? uint32_t(RecallVocabSize(train_task_)) : train_.file->vocab_size();
}

void DataLoader::Put(const RecallSequence& r, int64_t s, const BatchBuffers& out) const {
  const int64_t T = seq_;
  std::copy(r.tokens.begin(), r.tokens.begin() + T, out.tokens + s * T);
  std::copy(r.tokens.begin() + 1, r.tokens.begin() + T + 1, out.targets + s * T);
  if (out.weights) std::copy(r.weight.begin() + 1, r.weight.begin() + T + 1, out.weights + s * T);
  if (out.distances) std::copy(r.distance.begin() + 1, r.distance.begin() + T + 1, out.distances + s * T);
}

void DataLoader::Read(const TokenFile& file, const TokenLabels* labels, uint64_t start, int64_t s,
                      const BatchBuffers& out) const {
  const int64_t T = seq_;
  std::vector<int32_t> buf(size_t(T + 1));  // (T + 1)
  file.Read(start, buf);
  std::copy(buf.begin(), buf.begin() + T, out.tokens + s * T);
  std::copy(buf.begin() + 1, buf.end(), out.targets + s * T);
  // A target's label is the label of the token it is: start + 1 + t.
  for (int64_t t = 0; t < T; ++t) {
    const uint64_t i = start + 1 + uint64_t(t);
    if (out.weights) out.weights[s * T + t] = labels ? labels->Weight(i) : 1.0f;
    if (out.distances) out.distances[s * T + t] = labels ? labels->distance[i] : 0;
  }
}

uint64_t DataLoader::ChunkOf(int64_t index) {
  const int64_t n = train_sequences();
  const int64_t epoch = index / n;
  if (epoch != epoch_ || seq_ != epoch_seq_) {
    // Fisher-Yates with the counter-based generator: a permutation per epoch.
    order_.resize(static_cast<size_t>(n));
    std::iota(order_.begin(), order_.end(), 0u);
    for (int64_t i = n - 1; i > 0; --i) {
      const uint64_t j =
          HashIndex(options_.seed, kStreamOrder, uint64_t(epoch) * uint64_t(n) + uint64_t(i)) % uint64_t(i + 1);
      std::swap(order_[size_t(i)], order_[size_t(j)]);
    }
    epoch_ = epoch;
    epoch_seq_ = seq_;
  }
  return order_[size_t(index % n)];
}

void DataLoader::TrainBatch(int64_t first, int64_t count, const BatchBuffers& out) {
  for (int64_t s = 0; s < count; ++s) {
    const uint64_t index = uint64_t(first + s);
    if (recall_) {
      Put(MakeRecallSequence(train_now_, index), s, out);
      continue;
    }
    if (synthetic_) {
      const double u = double(HashIndex(options_.seed, kStreamMix, index) >> 11) * 0x1.0p-53;
      if (u < options_.synthetic_rate) {
        const uint64_t doc = HashIndex(options_.seed, kStreamDoc, index) % synthetic_docs_.size();
        Read(*synthetic_, nullptr, synthetic_docs_[doc], s, out);  // every token weighs 1
        continue;
      }
    }
    Read(*train_.file, train_.labels.get(), train_.Start(int64_t(ChunkOf(int64_t(index))), seq_), s, out);
  }
}

void DataLoader::ValBatch(int64_t first, int64_t count, const BatchBuffers& out) const {
  if (recall_) {
    for (int64_t s = 0; s < count; ++s) Put(MakeRecallSequence(val_now_, uint64_t((first + s) % val_count_)), s, out);
    return;
  }
  if (!val_.file) throw std::logic_error("ValBatch without held-out data");
  for (int64_t s = 0; s < count; ++s)
    Read(*val_.file, val_.labels.get(), val_.Start((first + s) % val_sequences(), seq_), s, out);
}

}  // namespace swan
