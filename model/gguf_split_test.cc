// Models cut into files by llama.cpp's gguf-split: three parts load as the
// whole file does, and parts that are missing, misnamed or not what their
// metadata says are refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/gguf_export.h"
#include "model/gguf_test_util.h"
#include "model/model.h"
#include "model/test_files.h"

namespace swan {
namespace {

// The parts of `whole` as gguf-split writes them, PREFIX-0000k-of-00003.gguf:
// the first with the model's metadata and the tensors in [0, cut[0]), the
// second [cut[0], cut[1]), the third the rest; each with split.no, split.count
// and split.tensors.count. Returns their paths.
std::vector<std::string> WriteParts(const test::GgufParts& whole, const std::string& prefix, const size_t (&cut)[2]) {
  std::vector<std::string> paths;  // [3]
  const size_t bounds[4] = {0, cut[0], cut[1], whole.tensors.size()};
  for (int k = 0; k < 3; ++k) {
    test::GgufParts part;
    if (k == 0) part.metadata = whole.metadata;
    part.metadata.push_back({"split.no", GgufNumber(GgufValue::kU16, k)});
    part.metadata.push_back({"split.count", GgufNumber(GgufValue::kU16, 3)});
    part.metadata.push_back({"split.tensors.count", GgufNumber(GgufValue::kI32, double(whole.tensors.size()))});
    part.tensors.assign(whole.tensors.begin() + ptrdiff_t(bounds[k]), whole.tensors.begin() + ptrdiff_t(bounds[k + 1]));
    paths.push_back(prefix + "-0000" + std::to_string(k + 1) + "-of-00003.gguf");
    test::WriteFile(paths.back(), part.Bytes());
  }
  return paths;
}

// What loading `path` throws; "loaded" when it loads.
std::string LoadError(const std::string& path) {
  try {
    LoadModel(path);
    return "loaded";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

TEST(GgufSplit, PartsLoadAsTheWholeFile) {
  const auto dir = test::TempDir("gguf_split");
  const std::string whole_path = (dir / "whole.gguf").string();
  test::WriteFile(whole_path, HfToGgufBytes(test::Stories260K(), WeightType::kQ8_0));
  const GgufFile whole(whole_path);
  const test::GgufParts parts = test::PartsOf(whole);
  const size_t n = parts.tensors.size();
  ASSERT_GT(n, 6u);
  const auto model = LoadModel(whole_path);
  const std::vector<float> want = test::Logits(*model, 16);
  // tensors in every part; and none in the first (gguf-split --no-tensor-first-split)
  for (const size_t first : {n / 3, size_t(0)}) {
    SCOPED_TRACE("first part's tensors: " + std::to_string(first));
    const auto paths = WriteParts(parts, (dir / ("m" + std::to_string(first))).string(), {first, 2 * n / 3});
    const GgufFile split(paths[0]);
    EXPECT_EQ(split.paths(), paths);
    ASSERT_EQ(split.tensors().size(), n);
    for (const GgufTensor& t : whole.tensors()) {
      const GgufTensor* s = split.Tensor(t.name);
      ASSERT_NE(s, nullptr) << t.name;
      EXPECT_EQ(s->ne, t.ne);
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(s->data), s->n_bytes),
                std::string(reinterpret_cast<const char*>(t.data), t.n_bytes))
          << t.name;
    }
    EXPECT_EQ(test::MaxDiff(test::Logits(*LoadModel(paths[0]), 16), want), 0.0);
  }
}

TEST(GgufSplit, RefusesPartsItCannotJoin) {
  const auto dir = test::TempDir("gguf_split_refused");
  const std::string whole_path = (dir / "whole.gguf").string();
  test::WriteFile(whole_path, HfToGgufBytes(test::Stories260K(), WeightType::kF32));
  const test::GgufParts parts = test::PartsOf(GgufFile(whole_path));
  const size_t n = parts.tensors.size();
  const auto paths = WriteParts(parts, (dir / "m").string(), {n / 3, 2 * n / 3});
  auto expect_error = [](const std::string& path, const std::vector<std::string>& says) {
    const std::string error = LoadError(path);
    for (const std::string& s : says) EXPECT_NE(error.find(s), std::string::npos) << error;
  };
  // a later part, not the first
  expect_error(paths[1], {"part 2 of 3", "load its first part, " + paths[0]});
  // the first, renamed: the others cannot be found
  const std::string renamed = (dir / "renamed.gguf").string();
  std::filesystem::copy_file(paths[0], renamed);
  expect_error(renamed, {"first of 3 parts", "does not end in -00001-of-00003.gguf"});
  // a part missing
  const std::string kept = test::ReadFile(paths[2]);
  std::filesystem::remove(paths[2]);
  expect_error(paths[0], {"part 3 of 3", paths[2] + ", is missing"});
  // a part that says it is another
  test::GgufParts third;
  third.metadata = {{"split.no", GgufNumber(GgufValue::kU16, 1)}, {"split.count", GgufNumber(GgufValue::kU16, 3)}};
  third.tensors.assign(parts.tensors.begin() + ptrdiff_t(2 * n / 3), parts.tensors.end());
  test::WriteFile(paths[2], third.Bytes());
  expect_error(paths[0], {paths[2] + ": not part 3 of 3"});
  // a tensor in two parts
  third.metadata[0].second = GgufNumber(GgufValue::kU16, 2);
  third.tensors.push_back(parts.tensors.front());
  test::WriteFile(paths[2], third.Bytes());
  expect_error(paths[0], {"tensor '" + parts.tensors.front().name + "' is in an earlier part"});
  // fewer tensors than split.tensors.count
  third.tensors.pop_back();
  third.tensors.pop_back();
  test::WriteFile(paths[2], third.Bytes());
  expect_error(paths[0],
               {"hold " + std::to_string(n - 1) + " tensors where split.tensors.count says " + std::to_string(n)});
  // and the parts as written load
  test::WriteFile(paths[2], kept);
  EXPECT_EQ(LoadError(paths[0]), "loaded");
}

}  // namespace
}  // namespace swan
