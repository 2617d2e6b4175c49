#include "tokenizer/token_labels.h"

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "util/bf16.h"

namespace swan {
namespace {

constexpr char kMagic[8] = {'S', 'W', 'A', 'N', 'L', 'B', 'L', '\0'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 24;

void Put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char(uint8_t(v >> (8 * i))));
}
uint64_t Get(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

}  // namespace

float TokenLabels::Weight(uint64_t i) const { return BF16ToF32(weight[i]); }

std::string LabelsPath(const std::string& token_path) {
  const std::string ext = ".bin";
  if (token_path.size() > ext.size() && token_path.compare(token_path.size() - ext.size(), ext.size(), ext) == 0)
    return token_path.substr(0, token_path.size() - ext.size()) + ".labels";
  return token_path + ".labels";
}

void WriteTokenLabels(const std::string& path, const TokenLabels& labels) {
  if (labels.weight.size() != labels.distance.size())
    throw std::invalid_argument("token labels: " + std::to_string(labels.weight.size()) + " weights but " +
                                std::to_string(labels.distance.size()) + " distances");
  std::string out(kMagic, 8);
  Put(out, kVersion, 4);
  Put(out, labels.doc_tokens, 4);
  Put(out, labels.size(), 8);
  out.reserve(kHeaderBytes + 4 * labels.size());
  for (uint16_t w : labels.weight) Put(out, w, 2);
  for (uint16_t d : labels.distance) Put(out, d, 2);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(out.data(), std::streamsize(out.size()));
  f.close();
  if (!f) throw std::runtime_error(path + ": could not write the labels file");
}

TokenLabels ReadTokenLabels(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open the labels file");
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < kHeaderBytes || std::memcmp(p, kMagic, 8) != 0)
    throw std::runtime_error(path + ": not a swan labels file (bad magic)");
  if (Get(p + 8, 4) != kVersion)
    throw std::runtime_error(path + ": unsupported labels version " + std::to_string(Get(p + 8, 4)));
  TokenLabels labels;
  labels.doc_tokens = uint32_t(Get(p + 12, 4));
  const uint64_t count = Get(p + 16, 8);
  if (count > (bytes.size() - kHeaderBytes) / 4 || kHeaderBytes + 4 * count != bytes.size())
    throw std::runtime_error(path + ": size does not match its header (" + std::to_string(count) +
                             " tokens): truncated?");
  labels.weight.resize(count);
  labels.distance.resize(count);
  const unsigned char* w = p + kHeaderBytes;
  const unsigned char* d = w + 2 * count;
  for (uint64_t i = 0; i < count; ++i) {
    labels.weight[i] = uint16_t(Get(w + 2 * i, 2));
    labels.distance[i] = uint16_t(Get(d + 2 * i, 2));
  }
  return labels;
}

}  // namespace swan
