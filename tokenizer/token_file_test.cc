#include "tokenizer/token_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

namespace swan {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("swan_token_file_" + name)).string();
}

TEST(TokenFile, WritesAndMapsUint16AndUint32) {
  for (const uint32_t vocab : {512u, 65536u, 200000u}) {
    const std::string path = TempPath(std::to_string(vocab));
    std::vector<int32_t> ids;
    for (int i = 0; i < 1000; ++i) ids.push_back(static_cast<int32_t>((i * 7919u) % vocab));
    {
      TokenFileWriter w(path, vocab);
      w.Append(std::span<const int32_t>(ids).first(300));
      w.Append(std::span<const int32_t>(ids).subspan(300));
      EXPECT_EQ(w.count(), 1000u);
    }
    const TokenFile f(path);
    EXPECT_EQ(f.size(), 1000u);
    EXPECT_EQ(f.vocab_size(), vocab);
    EXPECT_EQ(f.dtype_bytes(), vocab <= 65536 ? 2u : 4u);
    EXPECT_EQ(std::filesystem::file_size(path), kTokenFileHeaderBytes + 1000 * f.dtype_bytes());
    for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(f[i], static_cast<uint32_t>(ids[i]));
    std::vector<int32_t> back(10);
    f.Read(990, back);
    EXPECT_EQ(back, std::vector<int32_t>(ids.end() - 10, ids.end()));
    EXPECT_THROW(f.Read(995, back), std::out_of_range);
    std::filesystem::remove(path);
  }
}

TEST(TokenFile, RejectsBadFilesAndIds) {
  const std::string path = TempPath("bad");
  std::ofstream(path) << "definitely not a token file, long enough to hold a header";
  EXPECT_THROW(TokenFile{path}, std::runtime_error);
  {
    TokenFileWriter w(path, 100);
    const int32_t bad[] = {5, 100};
    EXPECT_THROW(w.Append(bad), std::out_of_range);
  }
  {
    TokenFileWriter w(path, 100);
    const int32_t ok[] = {1, 2, 3};
    w.Append(ok);
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);  // truncated
  EXPECT_THROW(TokenFile{path}, std::runtime_error);
  EXPECT_THROW(TokenFile{TempPath("missing")}, std::runtime_error);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace swan
