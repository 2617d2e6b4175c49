// Training checkpoints that survive a crash: everything a run needs to
// continue exactly (weights, AdamW moments, step, data position, seed),
// written atomically (temporary file, fsync, rename, fsync of the
// directory), so a checkpoint on disk is always a complete one.
//
// File layout (little-endian):
//   "SWANCKPT"                 8 bytes
//   uint32 version (1), uint32 0
//   uint64 header bytes H, then H bytes of JSON: step, sequences consumed,
//     seed, AdamW step count, parameter count, and the run's fingerprint
//     (model shape and attention plan) that a resume must match
//   float32 params [P], AdamW m [P], AdamW v [P]
//   uint64 FNV-1a hash of every byte before it
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swan {

struct CheckpointState {
  int64_t step = 0;       // optimizer steps done
  int64_t sequences = 0;  // training sequences consumed (the data position)
  uint64_t seed = 0;      // the run's seed (init and data order)
  int64_t adam_steps = 0;
  std::string fingerprint;          // JSON text: shape and plan; must match on resume
  std::vector<float> params, m, v;  // [P] each
};

// Writes `state` to `path` atomically. Throws std::runtime_error on I/O errors.
void SaveCheckpoint(const std::string& path, const CheckpointState& state);

// Reads and verifies a checkpoint. Throws std::runtime_error with the path
// and the reason for a missing, truncated or corrupt file (bad magic,
// version, size, hash).
CheckpointState LoadCheckpoint(const std::string& path);

// Throws std::runtime_error naming the first field that differs when a
// checkpoint's fingerprint does not match the run's.
void CheckFingerprint(const std::string& path, const std::string& saved, const std::string& run);

// Writes `bytes` to `path` atomically (the same temporary-file protocol).
// `durable` = false skips the fsyncs: readers still never see a partial
// file, but a power loss may lose the update (fine for logs).
void WriteFileAtomic(const std::string& path, const std::string& bytes, bool durable = true);

}  // namespace swan
