// Storage that grows in place: address space for the largest size is
// reserved up front (not committed), and the OS backs each page with memory
// when it is first written. So a KV buffer grows with the sequence without
// ever being copied or moved, and an unused reservation costs no memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swan {

class ReservedBuffer {
 public:
  ReservedBuffer() = default;
  // Throws std::runtime_error when the address space cannot be reserved.
  explicit ReservedBuffer(size_t max_bytes);
  ~ReservedBuffer();
  ReservedBuffer(ReservedBuffer&& other) noexcept;
  ReservedBuffer& operator=(ReservedBuffer&& other) noexcept;
  ReservedBuffer(const ReservedBuffer&) = delete;
  ReservedBuffer& operator=(const ReservedBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t max_bytes() const { return max_bytes_; }
  // Returns the memory of bytes [from, max_bytes) to the OS; they read as
  // zero afterwards.
  void Release(size_t from);
  // Backs bytes [0, bytes) with memory now, in one call for the pages not
  // yet backed, instead of a page fault per page as they are first written
  // (a fault cost 15 us in the virtual machine swan was measured on; one
  // call for a prefill's KV rows took about 6 us a page).
  void Commit(size_t bytes);

 private:
  uint8_t* data_ = nullptr;
  size_t max_bytes_ = 0;
  size_t mapped_bytes_ = 0;  // max_bytes rounded up to whole OS pages
  size_t committed_ = 0;     // bytes [0, committed_) backed by Commit since the last Release
};

}  // namespace swan
