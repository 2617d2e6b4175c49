#include "model/safetensors.h"
#include "util/f16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "model/test_files.h"
#include "util/bf16.h"

namespace swan {
namespace {

namespace fs = std::filesystem;
using test::F32Tensor;
using test::RawTensor;

// The message of the exception `fn` throws (fails the test if none).
template <typename Fn>
std::string ErrorOf(Fn fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception";
  return "";
}

RawTensor U16Tensor(const std::string& name, const std::string& dtype, const std::vector<uint16_t>& values) {
  RawTensor t{name, dtype, {int64_t(values.size())}, std::vector<uint8_t>(values.size() * 2)};
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

TEST(Safetensors, ReadsF32F16AndBF16) {
  const fs::path dir = test::TempDir("st_dtypes");
  // f16: 1.0 = 0x3c00, -2.5 = 0xc100, 65504 = 0x7bff, smallest subnormal 0x0001.
  test::WriteFile(dir / "model.safetensors",
                  test::SafetensorsBytes({F32Tensor("a", {2, 2}, {1, 2, 3, 4}),
                                          U16Tensor("h", "F16", {0x3c00, 0xc100, 0x7bff, 0x0001}),
                                          U16Tensor("b", "BF16", {F32ToBF16(1.5f), F32ToBF16(-3.0f)})}));
  const TensorStore store = TensorStore::OpenDirectory(dir.string());
  EXPECT_EQ(store.ReadF32("a", {2, 2}), (std::vector<float>{1, 2, 3, 4}));
  const std::vector<float> h = store.ReadF32("h", {4});
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.5f);
  EXPECT_EQ(h[2], 65504.0f);
  EXPECT_EQ(h[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(store.ReadF32("b", {2}), (std::vector<float>{1.5f, -3.0f}));
  EXPECT_TRUE(std::isinf(F16ToF32(0x7c00)));
  EXPECT_TRUE(std::isnan(F16ToF32(0x7e00)));
  fs::remove_all(dir);
}

TEST(Safetensors, MissingTensorNamesTensorAndDirectory) {
  const fs::path dir = test::TempDir("st_missing");
  test::WriteFile(dir / "model.safetensors", test::SafetensorsBytes({F32Tensor("a", {1}, {1})}));
  const TensorStore store = TensorStore::OpenDirectory(dir.string());
  const std::string msg = ErrorOf([&] { store.ReadF32("model.norm.weight", {1}); });
  EXPECT_NE(msg.find("model.norm.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.string()), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Safetensors, WrongShapeNamesFileTensorAndShapes) {
  const fs::path dir = test::TempDir("st_shape");
  test::WriteFile(dir / "model.safetensors", test::SafetensorsBytes({F32Tensor("w", {2, 3}, {1, 2, 3, 4, 5, 6})}));
  const TensorStore store = TensorStore::OpenDirectory(dir.string());
  const std::string msg = ErrorOf([&] { store.ReadF32("w", {3, 2}); });
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Safetensors, TruncatedFileNamesTensor) {
  const fs::path dir = test::TempDir("st_trunc");
  std::string bytes = test::SafetensorsBytes({F32Tensor("first", {2}, {1, 2}), F32Tensor("last", {4}, {1, 2, 3, 4})});
  bytes.resize(bytes.size() - 3);
  test::WriteFile(dir / "model.safetensors", bytes);
  const std::string msg = ErrorOf([&] { TensorStore::OpenDirectory(dir.string()); });
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'last'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;

  // Cut inside the header.
  bytes.resize(20);
  test::WriteFile(dir / "model.safetensors", bytes);
  const std::string msg2 = ErrorOf([&] { TensorStore::OpenDirectory(dir.string()); });
  EXPECT_NE(msg2.find("header length"), std::string::npos) << msg2;
  fs::remove_all(dir);
}

TEST(Safetensors, RejectsFilesThatAreNotSafetensors) {
  const fs::path dir = test::TempDir("st_garbage");
  test::WriteFile(dir / "model.safetensors", "abc");
  EXPECT_NE(ErrorOf([&] { TensorStore::OpenDirectory(dir.string()); }).find("not a safetensors file"),
            std::string::npos);
  // A plausible length but the header is not JSON: the message says where,
  // without quoting the file's (binary) bytes.
  std::string bytes(8, '\0');
  bytes[0] = 6;
  bytes += "{\x01\xfe\x07\x02\x03 and some more bytes";
  test::WriteFile(dir / "model.safetensors", bytes);
  const std::string msg = ErrorOf([&] { TensorStore::OpenDirectory(dir.string()); });
  EXPECT_NE(msg.find("not a safetensors file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("6-byte header is not JSON (error at byte 2)"), std::string::npos) << msg;
  for (char c : msg) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << "a raw byte in: " << msg;
  // Sizes in the header that do not match the shape.
  RawTensor t = F32Tensor("x", {3}, {1, 2, 3});
  t.shape = {4};
  test::WriteFile(dir / "model.safetensors", test::SafetensorsBytes({t}));
  const std::string msg3 = ErrorOf([&] { TensorStore::OpenDirectory(dir.string()); });
  EXPECT_NE(msg3.find("'x'"), std::string::npos) << msg3;
  fs::remove_all(dir);
}

TEST(Safetensors, UnsupportedDtypeNamesTensor) {
  const fs::path dir = test::TempDir("st_dtype");
  RawTensor t{"ids", "I32", {2}, std::vector<uint8_t>(8, 0)};
  test::WriteFile(dir / "model.safetensors", test::SafetensorsBytes({t}));
  const TensorStore store = TensorStore::OpenDirectory(dir.string());
  const std::string msg = ErrorOf([&] { store.ReadF32("ids", {2}); });
  EXPECT_NE(msg.find("'ids'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("I32"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Safetensors, MissingDirectoryContents) {
  const fs::path dir = test::TempDir("st_empty");
  const std::string msg = ErrorOf([&] { TensorStore::OpenDirectory(dir.string()); });
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Safetensors, ShardedDirectory) {
  const fs::path dir = test::TempDir("st_shards");
  test::WriteFile(dir / "model-00001-of-00002.safetensors", test::SafetensorsBytes({F32Tensor("a", {1}, {1})}));
  test::WriteFile(dir / "model-00002-of-00002.safetensors", test::SafetensorsBytes({F32Tensor("b", {2}, {2, 3})}));
  test::WriteFile(dir / "model.safetensors.index.json",
                  R"({"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                                     "b": "model-00002-of-00002.safetensors"}})");
  const TensorStore store = TensorStore::OpenDirectory(dir.string());
  EXPECT_EQ(store.ReadF32("a", {1}), (std::vector<float>{1}));
  EXPECT_EQ(store.ReadF32("b", {2}), (std::vector<float>{2, 3}));
  EXPECT_EQ(store.Names().size(), 2u);

  // The index promises a tensor its shard lacks.
  test::WriteFile(dir / "model.safetensors.index.json",
                  R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                     "c": "model-00002-of-00002.safetensors"}})");
  const std::string msg = ErrorOf([&] { TensorStore::OpenDirectory(dir.string()); });
  EXPECT_NE(msg.find("'c'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model-00002-of-00002.safetensors"), std::string::npos) << msg;

  // A shard that does not exist.
  test::WriteFile(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "nope.safetensors"}})");
  const std::string msg2 = ErrorOf([&] { TensorStore::OpenDirectory(dir.string()); });
  EXPECT_NE(msg2.find("nope.safetensors"), std::string::npos) << msg2;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace swan
