#include "kv/reserved_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace swan {
namespace {

size_t OsPage() { return size_t(::sysconf(_SC_PAGESIZE)); }

}  // namespace

ReservedBuffer::ReservedBuffer(size_t max_bytes) : max_bytes_(max_bytes) {
  if (max_bytes == 0) return;
  const size_t page = OsPage();
  mapped_bytes_ = (max_bytes + page - 1) / page * page;
  void* p = ::mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error("cannot reserve " + std::to_string(max_bytes) +
                             " bytes of address space for the KV cache: " + std::strerror(errno) +
                             " (lower the maximum context)");
  data_ = static_cast<uint8_t*>(p);
}

ReservedBuffer::~ReservedBuffer() {
  if (data_) ::munmap(data_, mapped_bytes_);
}

ReservedBuffer::ReservedBuffer(ReservedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      max_bytes_(std::exchange(other.max_bytes_, 0)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)),
      committed_(std::exchange(other.committed_, 0)) {}

ReservedBuffer& ReservedBuffer::operator=(ReservedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, mapped_bytes_);
    data_ = std::exchange(other.data_, nullptr);
    max_bytes_ = std::exchange(other.max_bytes_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    committed_ = std::exchange(other.committed_, 0);
  }
  return *this;
}

void ReservedBuffer::Commit(size_t bytes) {
  const size_t page = OsPage();
  const size_t end = std::min(mapped_bytes_, (bytes + page - 1) / page * page);
  if (!data_ || end <= committed_) return;
#ifdef MADV_POPULATE_WRITE
  // Linux 5.14 and later; elsewhere (EINVAL) the pages fault in as written.
  ::madvise(data_ + committed_, end - committed_, MADV_POPULATE_WRITE);
#endif
  committed_ = end;
}

void ReservedBuffer::Release(size_t from) {
  const size_t page = OsPage();
  const size_t start = (from + page - 1) / page * page;
  committed_ = std::min(committed_, start);
  if (data_ && start < mapped_bytes_) ::madvise(data_ + start, mapped_bytes_ - start, MADV_DONTNEED);
}

}  // namespace swan
