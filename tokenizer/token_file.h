// A flat binary file of token ids for training, read by mmap.
//
// Layout (little-endian):
//   bytes 0..7    magic "SWANTOK\0"
//   bytes 8..11   uint32 version (1)
//   bytes 12..15  uint32 vocab_size (every id is < vocab_size)
//   bytes 16..19  uint32 dtype: bytes per id, 2 (uint16) or 4 (uint32)
//   bytes 20..23  uint32 the fingerprint of the tokenizer that wrote the ids
//                 (TokenizerFingerprint of its tokenizer.json; 0 = unknown)
//   bytes 24..31  uint64 count: number of ids that follow
//   bytes 32..    ids [count] of the dtype
// Documents are joined with an end-of-document id (the tokenizer's EOS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace swan {

inline constexpr char kTokenFileMagic[8] = {'S', 'W', 'A', 'N', 'T', 'O', 'K', '\0'};
inline constexpr uint32_t kTokenFileVersion = 1;
inline constexpr size_t kTokenFileHeaderBytes = 32;

// A 32-bit FNV-1a hash of a tokenizer.json's bytes, never 0: what token
// files record so that training refuses ids from another tokenizer.
uint32_t TokenizerFingerprint(const std::string& tokenizer_json);

// Bytes per id for a vocabulary: 2 when every id fits in uint16, else 4.
inline uint32_t TokenDtypeBytes(uint32_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

// Writes a token file; ids are appended as they come. Close() (or the
// destructor) writes the final count into the header.
class TokenFileWriter {
 public:
  // Throws std::runtime_error if the file cannot be created.
  TokenFileWriter(const std::string& path, uint32_t vocab_size, uint32_t tokenizer_fingerprint = 0);
  ~TokenFileWriter();
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;

  // Throws std::out_of_range if an id is negative or >= vocab_size.
  void Append(std::span<const int32_t> ids);
  void Close();
  uint64_t count() const { return count_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  uint32_t vocab_size_;
  uint32_t dtype_;
  uint32_t tokenizer_fingerprint_;
  uint64_t count_ = 0;
};

// A token file mapped read-only into memory.
class TokenFile {
 public:
  // Throws std::runtime_error naming the file if it is missing, truncated or
  // not a swan token file.
  explicit TokenFile(const std::string& path);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  uint64_t size() const { return count_; }
  uint32_t vocab_size() const { return vocab_size_; }
  uint32_t dtype_bytes() const { return dtype_; }
  uint32_t tokenizer_fingerprint() const { return tokenizer_fingerprint_; }  // 0 = unknown
  // The ids as stored: exactly one of these is non-null, by dtype_bytes().
  const uint16_t* data16() const { return dtype_ == 2 ? static_cast<const uint16_t*>(ids_) : nullptr; }
  const uint32_t* data32() const { return dtype_ == 4 ? static_cast<const uint32_t*>(ids_) : nullptr; }
  uint32_t operator[](uint64_t i) const {
    return dtype_ == 2 ? static_cast<const uint16_t*>(ids_)[i] : static_cast<const uint32_t*>(ids_)[i];
  }
  // Copies ids [begin, begin + out.size()) into out; throws std::out_of_range past the end.
  void Read(uint64_t begin, std::span<int32_t> out) const;

 private:
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const void* ids_ = nullptr;
  uint64_t count_ = 0;
  uint32_t vocab_size_ = 0;
  uint32_t dtype_ = 0;
  uint32_t tokenizer_fingerprint_ = 0;
};

// Keeps only the first `count` ids of a finished token file (header updated).
void TruncateTokenFile(const std::string& path, uint64_t count);

}  // namespace swan
