// Models that llama.cpp's gguf-split cut into files, read as one: the first
// part, PREFIX-00001-of-0000N.gguf, holds the model's metadata (and tensors,
// or none), each part split.no (0-based), split.count and
// split.tensors.count beside its tensors. llama.cpp finds the other parts
// by their names, and so does swan.
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "model/gguf.h"

namespace swan {
namespace {

// The end of the name of part `no` (0-based) of `count`: -%05d-of-%05d.gguf.
std::string PartSuffix(int64_t no, int64_t count) {
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), "-%05lld-of-%05lld.gguf", static_cast<long long>(no + 1),
                static_cast<long long>(count));
  return suffix;
}

}  // namespace

void GgufFile::JoinSplitParts() {
  const std::optional<int64_t> count = OptionalInt("split.count");
  if (!count || *count == 1) return;  // one file (gguf-split writes split.count 1 for a model it did not cut)
  const int64_t no = OptionalInt("split.no").value_or(0);
  if (*count < 1 || *count > 99999 || no < 0 || no >= *count)
    throw std::runtime_error(origin_ + ": split.no " + std::to_string(no) + " and split.count " +
                             std::to_string(*count) + " name no part of a split model");
  const std::string first_suffix = PartSuffix(0, *count), own_suffix = PartSuffix(no, *count);
  const std::string prefix = origin_.size() > own_suffix.size() && origin_.ends_with(own_suffix)
                                 ? origin_.substr(0, origin_.size() - own_suffix.size())
                                 : std::string();
  if (no != 0)
    throw std::runtime_error(origin_ + ": part " + std::to_string(no + 1) + " of " + std::to_string(*count) +
                             " of a model split by llama.cpp's gguf-split; load its first part" +
                             (prefix.empty() ? std::string("") : ", " + prefix + first_suffix));
  if (prefix.empty())
    throw std::runtime_error(origin_ + ": the first of " + std::to_string(*count) +
                             " parts of a model split by llama.cpp's gguf-split, but its name does not end in " +
                             first_suffix + ", the name by which the other parts are found");
  std::vector<std::shared_ptr<MappedFile>> maps{map_};  // [parts]
  for (int64_t k = 1; k < *count; ++k) {
    const std::string path = prefix + PartSuffix(k, *count);
    if (!std::filesystem::exists(path))
      throw std::runtime_error(origin_ + ": part " + std::to_string(k + 1) + " of " + std::to_string(*count) +
                               " of this split model, " + path + ", is missing");
    const GgufFile part(path, OnePart{});
    if (part.OptionalInt("split.no") != k || part.OptionalInt("split.count") != *count)
      throw std::runtime_error(path + ": not part " + std::to_string(k + 1) + " of " + std::to_string(*count) +
                               " (its split.no and split.count say otherwise)");
    for (const GgufTensor& t : part.tensors_) {
      if (index_.count(t.name))
        throw std::runtime_error(path + ": tensor '" + t.name + "' is in an earlier part of " + origin_ + " too");
      index_[t.name] = tensors_.size();
      tensors_.push_back(t);
    }
    maps.push_back(part.map_);
    paths_.push_back(path);
  }
  if (const std::optional<int64_t> expected = OptionalInt("split.tensors.count"))
    if (*expected != int64_t(tensors_.size()))
      throw std::runtime_error(origin_ + ": its " + std::to_string(*count) + " parts hold " +
                               std::to_string(tensors_.size()) + " tensors where split.tensors.count says " +
                               std::to_string(*expected));
  owner_ = std::make_shared<std::vector<std::shared_ptr<MappedFile>>>(std::move(maps));
}

}  // namespace swan
