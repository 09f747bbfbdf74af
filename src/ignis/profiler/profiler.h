// The eager profiler: a timed event per operator call, per backward node and
// per user-named range, on the thread that profiles (torch.profiler's CPU
// activity).
//
// Note [Profiling through the dispatcher]
// While a session runs, the thread's included keys hold Profiler, the
// highest dispatch key, so every op call reaches the profiler's boxed
// fallback first: it opens an event, redispatches below its key and closes
// the event. The key stays in the thread's included set, so the ops that a
// composite or a derivative formula calls through the dispatcher nest inside
// their caller's event; layers that redispatch (autograd, functionalization)
// do not make events of their own. Self time is an event's time minus its
// children's. Nothing runs when no session does: the key is then in no set,
// and op calls never look at the profiler.
//
// Kernels that a generated graph runs are not ops: a compiled graph is one
// event ("CompiledGraph [name]") on the thread that calls it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ignis::profiler {

enum class EventKind : uint8_t {
  Op,        // an operator call (named "aten::<op>", as torch's profiler names them)
  Backward,  // a backward node run by the autograd engine
  User,      // record_function(name)
  Compiled,  // a compiled graph's call
};

struct Event {
  std::string name;
  EventKind kind = EventKind::Op;
  int64_t start_ns = 0, end_ns = -1;  // since the session started (-1: still open)
  int32_t parent = -1;               // index of the enclosing event, -1 for none
  // record_shapes: one entry per argument, the sizes of a tensor argument
  // and [] for any other.
  std::vector<std::vector<int64_t>> shapes;
};

struct Options {
  bool record_shapes = false;
};

// Starts a session on this thread. Throws if one is running here already.
void start(const Options& opt);
// Ends this thread's session and returns its events in the order they
// started. Throws if none is running.
std::vector<Event> stop();
// Whether a session runs on this thread.
bool active();

// An event for the lifetime of the scope when a session runs on this thread
// (nothing otherwise). Used by the autograd engine, record_function and
// compiled graphs.
class Scope {
 public:
  Scope(EventKind kind, const std::string& name);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  int64_t handle_ = -1;
};

// record_function's begin/end as separate calls (Python context managers):
// begin returns a handle for end, -1 when no session runs. A handle names
// its session too, so ending a range after its session stopped (or in a
// later one) does nothing.
int64_t begin_range(const std::string& name);
void end_range(int64_t handle);

}  // namespace ignis::profiler
