#include "train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace swan {
namespace {

constexpr char kMagic[8] = {'S', 'W', 'A', 'N', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;

uint64_t Fnv1a(const char* data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  for (size_t i = 0; i < n; ++i) {
    h ^= uint8_t(data[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

template <typename T>
void Append(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

void AppendFloats(std::string& out, const std::vector<float>& v) {
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

[[noreturn]] void Fail(const std::string& path, const std::string& why) {
  throw std::runtime_error("checkpoint " + path + ": " + why);
}

}  // namespace

void WriteFileAtomic(const std::string& path, const std::string& bytes, bool durable) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      const std::string err = std::strerror(errno);
      ::close(fd);
      throw std::runtime_error("cannot write " + tmp + ": " + err);
    }
    done += size_t(w);
  }
  if ((durable && ::fsync(fd) != 0) || ::close(fd) != 0)
    throw std::runtime_error("cannot flush " + tmp + ": " + std::strerror(errno));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  if (!durable) return;
  // Make the rename itself durable.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void SaveCheckpoint(const std::string& path, const CheckpointState& s) {
  if (s.m.size() != s.params.size() || s.v.size() != s.params.size())
    throw std::logic_error("SaveCheckpoint: params, m and v differ in size");
  nlohmann::json h;
  h["step"] = s.step;
  h["sequences"] = s.sequences;
  h["seed"] = s.seed;
  h["adam_steps"] = s.adam_steps;
  h["num_params"] = s.params.size();
  h["fingerprint"] = s.fingerprint;
  const std::string header = h.dump();
  std::string out;
  out.reserve(32 + header.size() + 3 * s.params.size() * sizeof(float) + 8);
  out.append(kMagic, 8);
  Append(out, kVersion);
  Append(out, uint32_t(0));
  Append(out, uint64_t(header.size()));
  out += header;
  AppendFloats(out, s.params);
  AppendFloats(out, s.m);
  AppendFloats(out, s.v);
  Append(out, Fnv1a(out.data(), out.size()));
  WriteFileAtomic(path, out);
}

CheckpointState LoadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(path, "cannot open (no checkpoint to resume from; run without --resume)");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 32 || std::memcmp(bytes.data(), kMagic, 8) != 0) Fail(path, "not a swan checkpoint (bad magic)");
  uint32_t version;
  std::memcpy(&version, bytes.data() + 8, 4);
  if (version != kVersion)
    Fail(path, "version " + std::to_string(version) + ", this swan reads version " + std::to_string(kVersion));
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data() + 16, 8);
  if (header_len > bytes.size() - 32) Fail(path, "truncated (header runs past the end of the file)");
  uint64_t stored_hash;
  std::memcpy(&stored_hash, bytes.data() + bytes.size() - 8, 8);
  if (Fnv1a(bytes.data(), bytes.size() - 8) != stored_hash)
    Fail(path, "corrupt (checksum mismatch); resume from another checkpoint or start again");
  CheckpointState s;
  try {
    const nlohmann::json h = nlohmann::json::parse(bytes.substr(24, header_len));
    s.step = h.at("step").get<int64_t>();
    s.sequences = h.at("sequences").get<int64_t>();
    s.seed = h.at("seed").get<uint64_t>();
    s.adam_steps = h.at("adam_steps").get<int64_t>();
    s.fingerprint = h.at("fingerprint").get<std::string>();
    const size_t n = h.at("num_params").get<size_t>();
    if (bytes.size() != 24 + header_len + 3 * n * sizeof(float) + 8)
      Fail(path, "size does not match its parameter count " + std::to_string(n));
    const char* p = bytes.data() + 24 + header_len;
    for (std::vector<float>* v : {&s.params, &s.m, &s.v}) {
      v->resize(n);
      std::memcpy(v->data(), p, n * sizeof(float));
      p += n * sizeof(float);
    }
  } catch (const nlohmann::json::exception& e) {
    Fail(path, std::string("bad header (") + e.what() + ")");
  }
  return s;
}

void CheckFingerprint(const std::string& path, const std::string& saved, const std::string& run) {
  if (saved == run) return;
  nlohmann::json a, b;
  try {
    a = nlohmann::json::parse(saved);
    b = nlohmann::json::parse(run);
  } catch (const nlohmann::json::exception&) {
    Fail(path, "was written by a different run (unreadable fingerprint)");
  }
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (!a.contains(it.key()) || a[it.key()] != it.value())
      Fail(path, "was written for " + it.key() + " = " +
                     (a.contains(it.key()) ? a[it.key()].dump() : std::string("(none)")) + ", this run has " +
                     it.value().dump() + "; resume with the same settings or use another --out directory");
  }
  for (auto it = a.begin(); it != a.end(); ++it) {  // a setting this run leaves at its default
    if (!b.contains(it.key()))
      Fail(path, "was written for " + it.key() + " = " + it.value().dump() +
                     ", this run has the default; resume with the same settings or use another "
                     "--out directory");
  }
  Fail(path, "was written by a run with other settings");
}

}  // namespace swan
