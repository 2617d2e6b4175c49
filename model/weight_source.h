// Where a model's weights come from: a checkpoint directory, or seeded
// random values in the shapes of a real model (so performance can be
// measured without downloading weights).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "model/safetensors.h"
#include "ops/linear.h"

namespace swan {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual bool Has(const std::string& name) const = 0;
  // A norm weight or an embedding table as float32. Throws when it is missing
  // or its shape differs.
  virtual std::vector<float> F32(const std::string& name, const std::vector<int64_t>& shape) const = 0;
  // A linear layer [out, in] in its stored precision (F32, BF16 or F16;
  // another becomes float32), used in place in a checkpoint's mapping.
  virtual LinearWeight Linear(const std::string& name, int64_t out, int64_t in) const = 0;
  // The type Linear(name) gives (for rows that type can hold).
  virtual WeightType LinearType(const std::string& name) const = 0;
  // Called when the tensor has been copied into another type and will not
  // be read again: a mapped checkpoint lets its pages go.
  virtual void Evict(const std::string& name) const {}
};

// lm_head [vocab, hidden]: the embedding table itself when tied (one copy,
// in whatever type the table is held), else Linear("lm_head.weight").
LinearWeight HeadWeight(const WeightSource& w, bool tied, const LinearWeight& embed, int64_t vocab, int64_t hidden);

// Tensors of a Hugging Face directory (model.safetensors or shards).
class CheckpointWeights : public WeightSource {
 public:
  explicit CheckpointWeights(const std::string& dir) : store_(TensorStore::OpenDirectory(dir)) {}
  bool Has(const std::string& name) const override { return store_.Has(name); }
  std::vector<float> F32(const std::string& name, const std::vector<int64_t>& shape) const override;
  LinearWeight Linear(const std::string& name, int64_t out, int64_t in) const override;
  WeightType LinearType(const std::string& name) const override;
  void Evict(const std::string& name) const override { store_.EvictPages(name); }
  // Throws when the checkpoint holds tensors the model did not read (a
  // config of 3 layers on a file of 5: the config and the weights are of
  // different models). Ignored: rotary_emb.inv_freq buffers, and lm_head
  // beside tied embeddings.
  void RequireAllUsed(bool tied_embeddings, const std::string& origin) const;

 private:
  TensorStore store_;
  mutable std::set<std::string> read_;  // names F32 and Linear were asked for
};

// Every tensor exists: norms are 1, everything else uniform with standard
// deviation 0.02 from a seeded counter-based generator (fast enough to fill
// billions of values), linear layers stored as `linear_type`.
class RandomWeights : public WeightSource {
 public:
  RandomWeights(uint64_t seed, WeightType linear_type) : seed_(seed), linear_type_(linear_type) {}
  bool Has(const std::string&) const override { return true; }
  std::vector<float> F32(const std::string& name, const std::vector<int64_t>& shape) const override;
  LinearWeight Linear(const std::string& name, int64_t out, int64_t in) const override;
  WeightType LinearType(const std::string&) const override { return linear_type_; }

 private:
  uint64_t seed_;
  WeightType linear_type_;
};

// Another source's weights with the linear layers (the embedding table
// among them) held as `type` (an f32 or f16 checkpoint run as Q8_0, say),
// converted one layer at a time as they load. Rows that a block format cannot hold (not a multiple of 32
// values) stay in the stored type.
class ConvertedWeights : public WeightSource {
 public:
  ConvertedWeights(const WeightSource& stored, WeightType type) : stored_(stored), type_(type) {}
  bool Has(const std::string& name) const override { return stored_.Has(name); }
  std::vector<float> F32(const std::string& name, const std::vector<int64_t>& shape) const override {
    return stored_.F32(name, shape);
  }
  LinearWeight Linear(const std::string& name, int64_t out, int64_t in) const override;
  WeightType LinearType(const std::string&) const override { return type_; }

 private:
  const WeightSource& stored_;
  WeightType type_;
};

}  // namespace swan
