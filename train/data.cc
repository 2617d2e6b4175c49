#include "train/data.h"

#include <algorithm>
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

std::unique_ptr<TokenFile> Open(const std::string& path, const char* what, int64_t seq) {
  auto f = std::make_unique<TokenFile>(path);
  if (f->size() < uint64_t(seq + 1))
    throw std::runtime_error(std::string(what) + " " + path + " has " + std::to_string(f->size()) +
                             " tokens, fewer than one sequence of the context " +
                             std::to_string(seq) + " + 1; use more data or a shorter --context");
  return f;
}

constexpr uint64_t kStreamOrder = 1, kStreamMix = 2, kStreamDoc = 3;

}  // namespace

DataLoader::DataLoader(const DataOptions& options) : options_(options) {
  if (options.seq <= 0) throw std::invalid_argument("data: the context must be positive");
  train_ = Open(options.train_path, "training data", options.seq);
  if (!options.val_path.empty()) {
    val_ = Open(options.val_path, "held-out data", options.seq);
    if (val_->vocab_size() != train_->vocab_size())
      throw std::runtime_error("held-out data " + options.val_path + " has vocabulary " +
                               std::to_string(val_->vocab_size()) + ", the training data " +
                               std::to_string(train_->vocab_size()));
  }
  if (!options.synthetic_path.empty() && options.synthetic_rate > 0) {
    synthetic_ = Open(options.synthetic_path, "synthetic data", options.seq);
    if (synthetic_->vocab_size() != train_->vocab_size())
      throw std::runtime_error("synthetic data " + options.synthetic_path +
                               " was tokenized with another vocabulary (" +
                               std::to_string(synthetic_->vocab_size()) + " vs " +
                               std::to_string(train_->vocab_size()) + ")");
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

int64_t DataLoader::train_sequences() const {
  return int64_t((train_->size() - 1) / uint64_t(options_.seq));
}

int64_t DataLoader::val_sequences() const {
  return val_ ? int64_t((val_->size() - 1) / uint64_t(options_.seq)) : 0;
}

void DataLoader::Read(const TokenFile& file, uint64_t start, int32_t* tokens,
                      int32_t* targets) const {
  const int64_t T = options_.seq;
  std::vector<int32_t> buf(size_t(T + 1));  // (T + 1)
  file.Read(start, buf);
  std::copy(buf.begin(), buf.begin() + T, tokens);
  std::copy(buf.begin() + 1, buf.end(), targets);
}

uint64_t DataLoader::ChunkOf(int64_t index) {
  const int64_t n = train_sequences();
  const int64_t epoch = index / n;
  if (epoch != epoch_) {
    // Fisher-Yates with the counter-based generator: a permutation per epoch.
    order_.resize(static_cast<size_t>(n));
    std::iota(order_.begin(), order_.end(), 0u);
    for (int64_t i = n - 1; i > 0; --i) {
      const uint64_t j = HashIndex(options_.seed, kStreamOrder, uint64_t(epoch) * uint64_t(n) + uint64_t(i)) %
                         uint64_t(i + 1);
      std::swap(order_[size_t(i)], order_[size_t(j)]);
    }
    epoch_ = epoch;
  }
  return order_[size_t(index % n)];
}

void DataLoader::TrainBatch(int64_t first, int64_t count, int32_t* tokens, int32_t* targets) {
  const int64_t T = options_.seq;
  for (int64_t s = 0; s < count; ++s) {
    const uint64_t index = uint64_t(first + s);
    int32_t* tok = tokens + s * T;
    int32_t* tgt = targets + s * T;
    if (synthetic_) {
      const double u = double(HashIndex(options_.seed, kStreamMix, index) >> 11) * 0x1.0p-53;
      if (u < options_.synthetic_rate) {
        const uint64_t doc = HashIndex(options_.seed, kStreamDoc, index) % synthetic_docs_.size();
        Read(*synthetic_, synthetic_docs_[doc], tok, tgt);
        continue;
      }
    }
    Read(*train_, ChunkOf(int64_t(index)) * uint64_t(T), tok, tgt);
  }
}

void DataLoader::ValBatch(int64_t first, int64_t count, int32_t* tokens, int32_t* targets) const {
  if (!val_) throw std::logic_error("ValBatch without held-out data");
  const int64_t T = options_.seq;
  for (int64_t s = 0; s < count; ++s)
    Read(*val_, uint64_t((first + s) % val_sequences()) * uint64_t(T), tokens + s * T, targets + s * T);
}

}  // namespace swan
