// A reference-counted owning pointer whose count lives in the object.
//
// Tensors, storages and other runtime objects are shared freely between views,
// autograd nodes and Python wrappers; an intrusive count keeps each handle one
// pointer wide and each object one allocation.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace ignis {

class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;

  void incref() const { refcount_.fetch_add(1, std::memory_order_relaxed); }
  // Returns true when this was the last reference.
  bool decref() const {
    return refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }
  uint32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<uint32_t> refcount_{0};
};

template <typename T>
class intrusive_ptr {
 public:
  intrusive_ptr() = default;
  intrusive_ptr(std::nullptr_t) {}
  explicit intrusive_ptr(T* p) : p_(p) {
    if (p_) p_->incref();
  }
  intrusive_ptr(const intrusive_ptr& o) : p_(o.p_) {
    if (p_) p_->incref();
  }
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <typename U>
  intrusive_ptr(const intrusive_ptr<U>& o) : p_(o.get()) {
    if (p_) p_->incref();
  }
  ~intrusive_ptr() { reset(); }

  intrusive_ptr& operator=(const intrusive_ptr& o) {
    intrusive_ptr(o).swap(*this);
    return *this;
  }
  intrusive_ptr& operator=(intrusive_ptr&& o) noexcept {
    intrusive_ptr(std::move(o)).swap(*this);
    return *this;
  }
  void swap(intrusive_ptr& o) noexcept { std::swap(p_, o.p_); }
  void reset() {
    if (p_ && p_->decref()) delete p_;
    p_ = nullptr;
  }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const intrusive_ptr& o) const { return p_ == o.p_; }
  bool operator!=(const intrusive_ptr& o) const { return p_ != o.p_; }

 private:
  T* p_ = nullptr;
};

template <typename T, typename... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return intrusive_ptr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace ignis
