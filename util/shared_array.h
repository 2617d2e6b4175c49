// Read-only values that are either owned or borrowed from memory another
// object keeps alive (`owner`): model weights used in place from a mapped
// checkpoint file, so that they are resident once.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace swan {

template <typename T>
class SharedArray {
 public:
  SharedArray() = default;
  // Owns `values`.
  explicit SharedArray(std::vector<T> values) {
    auto owned = std::make_shared<const std::vector<T>>(std::move(values));
    data_ = owned->data();
    size_ = owned->size();
    owner_ = std::move(owned);
  }
  // Borrows data [size], alive as long as `owner` is.
  SharedArray(std::shared_ptr<const void> owner, const T* data, size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }
  const std::shared_ptr<const void>& owner() const { return owner_; }

 private:
  std::shared_ptr<const void> owner_;
  const T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace swan
