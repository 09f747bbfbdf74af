// DimVector: sizes and strides, inline up to kInline dims so that creating a
// tensor of ordinary rank allocates nothing beyond the tensor itself.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <type_traits>
#include <vector>

namespace ignis {

class DimVector {
 public:
  static constexpr int kInline = 6;

  DimVector() = default;
  explicit DimVector(size_t n, int64_t v = 0) { assign(n, v); }
  DimVector(std::initializer_list<int64_t> l) { assign(l.begin(), l.end()); }
  DimVector(const std::vector<int64_t>& v) { assign(v.begin(), v.end()); }
  template <typename It>
    requires(!std::is_integral_v<It>)
  DimVector(It b, It e) { assign(b, e); }
  DimVector(const DimVector& o) { assign(o.begin(), o.end()); }
  DimVector(DimVector&& o) noexcept { steal(o); }
  DimVector& operator=(const DimVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  DimVector& operator=(DimVector&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  ~DimVector() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_ ? heap_ : inline_; }
  const int64_t* data() const { return heap_ ? heap_ : inline_; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& back() { return data()[size_ - 1]; }
  int64_t back() const { return data()[size_ - 1]; }
  int64_t& front() { return data()[0]; }

  void resize(size_t n, int64_t v = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = v;
    size_ = n;
  }
  void push_back(int64_t v) {
    reserve(size_ + 1);
    data()[size_++] = v;
  }
  void pop_back() { --size_; }
  void insert(size_t pos, int64_t v) {
    reserve(size_ + 1);
    int64_t* d = data();
    std::memmove(d + pos + 1, d + pos, (size_ - pos) * sizeof(int64_t));
    d[pos] = v;
    ++size_;
  }
  void erase(size_t pos) {
    int64_t* d = data();
    std::memmove(d + pos, d + pos + 1, (size_ - pos - 1) * sizeof(int64_t));
    --size_;
  }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n <= capacity()) return;
    size_t cap = std::max(n, capacity() * 2);
    int64_t* h = new int64_t[cap];
    std::memcpy(h, data(), size_ * sizeof(int64_t));
    delete[] heap_;
    heap_ = h;
    heap_cap_ = cap;
  }
  size_t capacity() const { return heap_ ? heap_cap_ : kInline; }

  bool operator==(const DimVector& o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }
  bool operator!=(const DimVector& o) const { return !(*this == o); }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }

 private:
  template <typename It>
  void assign(It b, It e) {
    size_t n = static_cast<size_t>(std::distance(b, e));
    size_ = 0;
    reserve(n);
    std::copy(b, e, data());
    size_ = n;
  }
  void assign(size_t n, int64_t v) {
    size_ = 0;
    reserve(n);
    std::fill(data(), data() + n, v);
    size_ = n;
  }
  void release() {
    delete[] heap_;
    heap_ = nullptr;
  }
  void steal(DimVector& o) {
    size_ = o.size_;
    if (o.heap_) {
      heap_ = o.heap_;
      heap_cap_ = o.heap_cap_;
      o.heap_ = nullptr;
    } else {
      heap_ = nullptr;
      std::memcpy(inline_, o.inline_, size_ * sizeof(int64_t));
    }
    o.size_ = 0;
  }

  int64_t inline_[kInline];
  int64_t* heap_ = nullptr;
  size_t heap_cap_ = 0;
  size_t size_ = 0;
};

}  // namespace ignis
