#include "ignis/profiler/profiler.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <unordered_map>

#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"

namespace ignis::profiler {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::atomic<uint32_t> g_sessions{0};

struct Session {
  uint32_t id = ++g_sessions;
  Options opt;
  int64_t t0 = now_ns();
  std::vector<Event> events;
  int32_t current = -1;  // the innermost open event
  // "aten::<name>" per op, built once per session.
  std::unordered_map<const OpHandle*, std::string> op_names;

  int32_t begin(EventKind kind, std::string name) {
    Event e;
    e.name = std::move(name);
    e.kind = kind;
    e.parent = current;
    e.start_ns = now_ns() - t0;
    events.push_back(std::move(e));
    current = int32_t(events.size() - 1);
    return current;
  }
  void end(int32_t i) {
    if (i < 0 || size_t(i) >= events.size()) return;
    events[size_t(i)].end_ns = now_ns() - t0;
    current = events[size_t(i)].parent;
  }
  const std::string& name_of(const OpHandle& op) {
    auto it = op_names.find(&op);
    if (it == op_names.end()) it = op_names.emplace(&op, "aten::" + op.schema().name).first;
    return it->second;
  }
};

thread_local std::unique_ptr<Session> t_session;

std::vector<std::vector<int64_t>> shapes_of(const Stack& s) {
  std::vector<std::vector<int64_t>> out;
  out.reserve(s.size());
  for (const IValue& v : s) {
    if (v.is_tensor() && v.to_tensor().defined()) {
      const auto& sz = v.to_tensor().sizes();
      out.emplace_back(sz.begin(), sz.end());
    } else {
      out.emplace_back();
    }
  }
  return out;
}

// Note [Profiling through the dispatcher] (profiler.h).
void profiler_fallback(const OpHandle& op, DispatchKeySet ks, Stack& s) {
  Session* sess = t_session.get();
  if (!sess) {  // a thread that inherited the key without a session
    op.redispatch(ks.below(DispatchKey::Profiler), s);
    return;
  }
  const int32_t i = sess->begin(EventKind::Op, sess->name_of(op));
  if (sess->opt.record_shapes) sess->events[size_t(i)].shapes = shapes_of(s);
  try {
    op.redispatch(ks.below(DispatchKey::Profiler), s);
  } catch (...) {
    sess->end(i);
    throw;
  }
  sess->end(i);
}

void register_fallback_once() {
  static const bool done = [] {
    Dispatcher::get().register_fallback(DispatchKey::Profiler, profiler_fallback);
    return true;
  }();
  (void)done;
}

}  // namespace

void start(const Options& opt) {
  IGNIS_CHECK(!t_session, "the profiler is already running on this thread: stop it before "
                          "starting another (profilers do not nest)");
  register_fallback_once();
  t_session = std::make_unique<Session>();
  t_session->opt = opt;
  auto& tls = tls_dispatch_keys();
  tls.included = tls.included.add(DispatchKey::Profiler);
}

std::vector<Event> stop() {
  IGNIS_CHECK(t_session, "the profiler is not running on this thread");
  auto& tls = tls_dispatch_keys();
  tls.included = tls.included.remove(DispatchKey::Profiler);
  std::unique_ptr<Session> s = std::move(t_session);
  // Ranges still open (a record_function left without its exit) end now.
  const int64_t end = now_ns() - s->t0;
  for (Event& e : s->events)
    if (e.end_ns < 0) e.end_ns = std::max(e.start_ns, end);
  return std::move(s->events);
}

bool active() { return t_session != nullptr; }

namespace {
int64_t begin_handle(EventKind kind, const std::string& name) {
  Session* s = t_session.get();
  if (!s) return -1;
  return (int64_t(s->id) << 32) | int64_t(s->begin(kind, name));
}
}  // namespace

void end_range(int64_t handle) {
  Session* s = t_session.get();
  if (handle < 0 || !s || uint32_t(handle >> 32) != s->id) return;
  s->end(int32_t(handle & 0xffffffff));
}

int64_t begin_range(const std::string& name) { return begin_handle(EventKind::User, name); }

Scope::Scope(EventKind kind, const std::string& name) : handle_(begin_handle(kind, name)) {}

Scope::~Scope() { end_range(handle_); }

}  // namespace ignis::profiler
