#include "tokenizer/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace swan {
namespace {

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

uint32_t TokenizerFingerprint(const std::string& tokenizer_json) {
  uint32_t h = 2166136261u;
  for (const char c : tokenizer_json) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return h ? h : 1;
}

TokenFileWriter::TokenFileWriter(const std::string& path, uint32_t vocab_size, uint32_t tokenizer_fingerprint)
    : path_(path),
      vocab_size_(vocab_size),
      dtype_(TokenDtypeBytes(vocab_size)),
      tokenizer_fingerprint_(tokenizer_fingerprint) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) throw std::runtime_error(path + ": cannot create file: " + std::strerror(errno));
  uint8_t header[kTokenFileHeaderBytes] = {};
  if (std::fwrite(header, 1, sizeof(header), file_) != sizeof(header))
    throw std::runtime_error(path + ": write failed");
}

TokenFileWriter::~TokenFileWriter() {
  try {
    Close();
  } catch (...) {
  }
}

void TokenFileWriter::Append(std::span<const int32_t> ids) {
  if (!file_) throw std::runtime_error(path_ + ": already closed");
  std::vector<uint8_t> buf(ids.size() * dtype_);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || static_cast<uint32_t>(id) >= vocab_size_)
      throw std::out_of_range("token id " + std::to_string(id) + " outside vocabulary of " +
                              std::to_string(vocab_size_));
    for (uint32_t b = 0; b < dtype_; ++b)
      buf[i * dtype_ + b] = static_cast<uint8_t>(static_cast<uint32_t>(id) >> (8 * b));
  }
  if (std::fwrite(buf.data(), 1, buf.size(), file_) != buf.size())
    throw std::runtime_error(path_ + ": write failed (disk full?)");
  count_ += ids.size();
}

void TokenFileWriter::Close() {
  if (!file_) return;
  uint8_t header[kTokenFileHeaderBytes] = {};
  std::memcpy(header, kTokenFileMagic, 8);
  PutU32(header + 8, kTokenFileVersion);
  PutU32(header + 12, vocab_size_);
  PutU32(header + 16, dtype_);
  PutU32(header + 20, tokenizer_fingerprint_);
  PutU64(header + 24, count_);
  const bool ok =
      std::fseek(file_, 0, SEEK_SET) == 0 && std::fwrite(header, 1, sizeof(header), file_) == sizeof(header);
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) throw std::runtime_error(path_ + ": could not finish writing");
}

TokenFile::TokenFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < kTokenFileHeaderBytes) {
    ::close(fd);
    throw std::runtime_error(path + ": too short to be a swan token file");
  }
  map_bytes_ = static_cast<size_t>(st.st_size);
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw std::runtime_error(path + ": mmap failed: " + std::strerror(errno));
  }
  const auto* h = static_cast<const uint8_t*>(map_);
  auto fail = [&](const std::string& why) {
    ::munmap(map_, map_bytes_);
    map_ = nullptr;
    throw std::runtime_error(path + ": " + why);
  };
  if (std::memcmp(h, kTokenFileMagic, 8) != 0) fail("not a swan token file (bad magic)");
  if (GetU32(h + 8) != kTokenFileVersion) fail("unsupported token file version " + std::to_string(GetU32(h + 8)));
  vocab_size_ = GetU32(h + 12);
  dtype_ = GetU32(h + 16);
  tokenizer_fingerprint_ = GetU32(h + 20);
  count_ = GetU64(h + 24);
  if (dtype_ != 2 && dtype_ != 4) fail("bad dtype " + std::to_string(dtype_));
  if (count_ > (map_bytes_ - kTokenFileHeaderBytes) / dtype_ || kTokenFileHeaderBytes + count_ * dtype_ != map_bytes_)
    fail("size does not match its header (" + std::to_string(count_) + " ids of " + std::to_string(dtype_) +
         " bytes): truncated or still being written?");
  ids_ = h + kTokenFileHeaderBytes;
}

TokenFile::~TokenFile() {
  if (map_) ::munmap(map_, map_bytes_);
}

void TokenFile::Read(uint64_t begin, std::span<int32_t> out) const {
  if (begin > count_ || out.size() > count_ - begin) throw std::out_of_range("token file read past the end");
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>((*this)[begin + i]);
}

void TruncateTokenFile(const std::string& path, uint64_t count) {
  uint32_t dtype;
  {
    const TokenFile file(path);
    if (count > file.size()) throw std::out_of_range(path + ": cannot truncate to more ids than it holds");
    dtype = file.dtype_bytes();
  }
  std::filesystem::resize_file(path, kTokenFileHeaderBytes + count * dtype);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  uint8_t bytes[8];
  PutU64(bytes, count);
  f.seekp(24);
  f.write(reinterpret_cast<const char*>(bytes), 8);
  if (!f) throw std::runtime_error(path + ": could not update the header");
}

}  // namespace swan
