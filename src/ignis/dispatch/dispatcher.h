// The dispatcher: a kernel table per operator, indexed by dispatch key.
//
// Calling an op computes a DispatchKeySet from its tensor arguments (or, for
// factories, from its device argument), adds the thread-local included keys,
// removes the thread-local excluded keys, and runs table[op][highest key].
// A functional layer (autograd, functionalization, tracing) does its work,
// excludes itself with ExcludeDispatchKeyGuard (or passes on the set below
// its key) and redispatches. See Note [Dispatch key order].
//
// Resolution of one table slot, in order:
//   1. a kernel registered for this op at this key;
//   2. an explicit per-op fallthrough at this key: skip to the next key;
//   3. a boxed fallback registered for this key (one kernel for every op);
//   4. for a backend key (CPU, CUDA, Meta): an error naming op and backend;
//      for any other key: fall through.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ignis/dispatch/dispatch_key.h"
#include "ignis/dispatch/schema.h"

namespace ignis {

struct OpDef;  // the op's declaration (ops/op_def.h)
class OpHandle;

using KernelFn = std::function<void(const OpHandle& op, DispatchKeySet ks, Stack& stack)>;

// ---------------------------------------------------------------------------
// Thread-local included / excluded keys
// ---------------------------------------------------------------------------
struct LocalDispatchKeySet {
  DispatchKeySet included;
  DispatchKeySet excluded;
};
LocalDispatchKeySet& tls_dispatch_keys();

class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet ks)
      : prev_(tls_dispatch_keys().excluded) {
    tls_dispatch_keys().excluded = prev_ | ks;
  }
  explicit ExcludeDispatchKeyGuard(DispatchKey k) : ExcludeDispatchKeyGuard(DispatchKeySet(k)) {}
  ~ExcludeDispatchKeyGuard() { tls_dispatch_keys().excluded = prev_; }
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet prev_;
};

class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet ks)
      : prev_(tls_dispatch_keys().included) {
    tls_dispatch_keys().included = prev_ | ks;
  }
  explicit IncludeDispatchKeyGuard(DispatchKey k) : IncludeDispatchKeyGuard(DispatchKeySet(k)) {}
  ~IncludeDispatchKeyGuard() { tls_dispatch_keys().included = prev_; }
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet prev_;
};

// ---------------------------------------------------------------------------
// One operator
// ---------------------------------------------------------------------------
class OpHandle {
 public:
  explicit OpHandle(FunctionSchema schema);

  const FunctionSchema& schema() const { return schema_; }
  const std::string& name() const { return full_name_; }
  const OpDef* def() const { return def_; }
  void set_def(const OpDef* d) { def_ = d; }

  // --- invoke -------------------------------------------------------------
  // Runs the op on a full stack of arguments (defaults already filled in);
  // leaves the results on the stack.
  void call(Stack& stack) const { redispatch(compute_keys(stack), stack); }
  // Runs the kernel for the highest key of `ks` (TLS is not re-applied:
  // a layer passes ks.below(its key)).
  void redispatch(DispatchKeySet ks, Stack& stack) const;
  // The key set a call with this stack would dispatch on.
  DispatchKeySet compute_keys(const Stack& stack) const;
  // The key whose kernel would run for `ks`, after fallthroughs.
  DispatchKey resolve(DispatchKeySet ks) const;

  // --- register -----------------------------------------------------------
  void set_kernel(DispatchKey k, KernelFn fn);
  void set_fallthrough(DispatchKey k);
  bool has_kernel(DispatchKey k) const { return static_cast<bool>(kernels_[idx(k)]); }

 private:
  friend class Dispatcher;
  static size_t idx(DispatchKey k) { return static_cast<size_t>(k); }
  void rebuild_table();
  [[noreturn]] void fail_missing(DispatchKey k, DispatchKeySet ks) const;

  FunctionSchema schema_;
  std::string full_name_;
  const OpDef* def_ = nullptr;
  std::array<KernelFn, kNumDispatchKeys> kernels_;
  uint64_t explicit_fallthrough_ = 0;
  // Effective table: pointer to the kernel or fallback for each key, or null.
  std::array<const KernelFn*, kNumDispatchKeys> table_{};
  uint64_t skip_mask_ = 0;     // keys that fall through for this op
  std::vector<int> tensor_args_;  // indices of Tensor-like arguments
  int device_arg_ = -1;           // index of a Device argument, if any
};

// ---------------------------------------------------------------------------
// The registry of operators and fallbacks
// ---------------------------------------------------------------------------
class Dispatcher {
 public:
  static Dispatcher& get();

  // --- lookup -------------------------------------------------------------
  // Null when no op of that name ("add.Tensor" or "add" for no overload).
  // Aliases resolve: find("multiply") is find("mul").
  OpHandle* find(const std::string& full_name) const;
  // Throws an internal error naming the op when it is missing.
  OpHandle& find_or_throw(const std::string& full_name) const;
  // All overloads of one base name (or alias), in registration order.
  const std::vector<OpHandle*>& overloads(const std::string& base_name) const;
  // The base name an alias stands for; null when `name` is no alias.
  const std::string* alias_target(const std::string& name) const;
  // (alias, base name) pairs, in registration order.
  const std::vector<std::pair<std::string, std::string>>& aliases() const { return alias_list_; }
  const std::vector<std::unique_ptr<OpHandle>>& ops() const { return ops_; }

  // --- register -----------------------------------------------------------
  // Throws if an op of the same full name exists.
  OpHandle& register_op(const std::string& schema_text);
  // Makes `alias` another name of the op `base_name` (PyTorch's aliases:
  // multiply for mul). It is no op of its own: lookups by that name reach
  // the op itself, so graphs and kernel tables only ever see `base_name`.
  void register_alias(const std::string& alias, const std::string& base_name);
  // One boxed kernel for every op at `k` (ops with their own kernel at k keep
  // it). Pass an empty KernelFn to remove it.
  void register_fallback(DispatchKey k, KernelFn fn);
  const KernelFn* fallback(DispatchKey k) const {
    return fallbacks_[static_cast<size_t>(k)] ? &fallbacks_[static_cast<size_t>(k)] : nullptr;
  }

 private:
  Dispatcher() = default;
  std::vector<std::unique_ptr<OpHandle>> ops_;
  std::unordered_map<std::string, OpHandle*> by_name_;
  std::unordered_map<std::string, std::vector<OpHandle*>> by_base_;
  std::unordered_map<std::string, std::string> alias_to_;
  std::vector<std::pair<std::string, std::string>> alias_list_;
  std::array<KernelFn, kNumDispatchKeys> fallbacks_;
};

// Appends schema defaults for trailing arguments missing from `stack`;
// throws a TypeError naming the first missing required argument.
void fill_defaults(const FunctionSchema& schema, Stack& stack);

// A lazily resolved reference to an op, for C++ callers:
//   static OpRef add("add.Tensor");  Tensor c = add.call1(a, b, 1).to_tensor();
class OpRef {
 public:
  explicit OpRef(const char* name) : name_(name) {}
  const OpHandle& handle() const {
    if (!h_) h_ = &Dispatcher::get().find_or_throw(name_);
    return *h_;
  }
  // Calls with the given arguments (defaults filled in); returns the stack.
  template <typename... Args>
  Stack call(Args&&... args) const {
    Stack s;
    s.reserve(sizeof...(Args) + 4);
    (s.emplace_back(std::forward<Args>(args)), ...);
    const OpHandle& h = handle();
    fill_defaults(h.schema(), s);
    h.call(s);
    return s;
  }
  template <typename... Args>
  Tensor tensor(Args&&... args) const {
    Stack s = call(std::forward<Args>(args)...);
    return s.at(0).to_tensor();
  }

 private:
  const char* name_;
  mutable const OpHandle* h_ = nullptr;
};

}  // namespace ignis
