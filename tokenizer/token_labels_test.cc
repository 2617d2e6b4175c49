#include "tokenizer/token_labels.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "util/bf16.h"

namespace swan {
namespace {

TEST(TokenLabels, RoundTripAndPaths) {
  EXPECT_EQ(LabelsPath("/d/train.bin"), "/d/train.labels");
  EXPECT_EQ(LabelsPath("/d/train.val.bin"), "/d/train.val.labels");
  EXPECT_EQ(LabelsPath("/d/tokens"), "/d/tokens.labels");
  TokenLabels labels;
  labels.doc_tokens = 513;
  for (int i = 0; i < 1000; ++i) {
    labels.weight.push_back(F32ToBF16(i % 7 == 0 ? 1.0f : i % 7 == 1 ? 0.25f : 0.0f));
    labels.distance.push_back(uint16_t(i % 7 == 0 ? i : 0));
  }
  const std::string path = (std::filesystem::temp_directory_path() / ("labels_" + std::to_string(getpid()))).string();
  WriteTokenLabels(path, labels);
  const TokenLabels back = ReadTokenLabels(path);
  EXPECT_EQ(back.doc_tokens, 513u);
  EXPECT_EQ(back.weight, labels.weight);
  EXPECT_EQ(back.distance, labels.distance);
  EXPECT_EQ(back.Weight(7), 1.0f);
  EXPECT_EQ(back.Weight(8), 0.25f);
  // Truncated and foreign files are refused with the file's name.
  std::filesystem::resize_file(path, 24 + 100);
  EXPECT_THROW(
      {
        try {
          ReadTokenLabels(path);
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
          throw;
        }
      },
      std::runtime_error);
  std::ofstream(path) << "SWANTOK and more bytes than a header";
  EXPECT_THROW(ReadTokenLabels(path), std::runtime_error);
  std::remove(path.c_str());
  labels.distance.pop_back();
  EXPECT_THROW(WriteTokenLabels(path, labels), std::invalid_argument);
}

}  // namespace
}  // namespace swan
