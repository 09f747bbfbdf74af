// A fake libcuda.so.1 for testing ignis's CUDA runtime on machines without a
// GPU (tests/cuda_fake/run.sh): one device ("Fake GPU", sm_80 or $FAKE_CUDA_CC, 4 SMs,
// $FAKE_CUDA_CAP_MB of memory, default 1024) whose memory is host memory,
// copies that are memcpy, streams that are always done, events that read the
// host clock, and kernels run on the host: copies and fills from
// $IGNIS_FAKE_CUDA_KERNELS (their CUDA C++ compiled as host C++), generated
// kernels compiled from $IGNIS_CUDA_DUMP_SOURCES on first use (launches of
// unknown kernels fail). NVRTC still compiles every kernel, so its cache path is exercised;
// NVRTC asks the driver for an export table when libcuda is loaded, which
// this fake declines. Not a driver: nothing here is asynchronous.
//
// Stream capture and CUDA graphs: while a stream captures, kernel launches,
// copies and memsets on it are recorded (a launch's argument values copied,
// as the driver copies them) instead of run; cuGraphInstantiate copies the
// list and cuGraphLaunch replays it in order. What a real capture refuses
// is refused here too, with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the
// capture invalidated (cuStreamEndCapture then fails with
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED): synchronizing or querying the
// capturing stream, and, unless the thread's capture mode is relaxed,
// cuCtxSynchronize, cuEventQuery, cuEventSynchronize, cuMemAlloc, cuMemFree
// and copies between the device and pageable (not cuMemHostAlloc'ed) host
// memory. fake_libcublaslt.cpp records its products through
// fake_cuda_capture_host_work.
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <cstdint>
#include <cstdio>
#include <dlfcn.h>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <map>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>
extern "C" {
typedef int CUresult;
static size_t g_cap = size_t(1) << 30, g_used = 0;
static std::map<void*, size_t> g_sizes;
static std::mutex g_mu;
static thread_local void* g_ctx = nullptr;
// ---- stream capture --------------------------------------------------------------
struct Capture { std::vector<std::function<void()>> work; int mode; std::thread::id thread; bool invalid = false; };
struct Graph { std::vector<std::function<void()>> work; };
static std::map<void*, Capture*> g_captures;  // capturing stream -> its capture
static std::map<void*, size_t> g_pinned;       // cuMemHostAlloc'ed blocks
static thread_local int g_thread_mode = 0;     // CU_STREAM_CAPTURE_MODE_GLOBAL
static std::recursive_mutex g_cap_mu;
// The capture `s` belongs to, or null.
static Capture* capturing(void* s) {
  std::lock_guard<std::recursive_mutex> l(g_cap_mu);
  auto it = g_captures.find(s);
  return it == g_captures.end() ? nullptr : it->second;
}
// FAKE_CUDA_NO_WORK: no device work at all (launches, copies on the device,
// memsets), device memory zeroed, device reads zeros: a run times the host
// side alone (bench/host_overhead.py).
static bool no_work() {
  static const bool on = getenv("FAKE_CUDA_NO_WORK") != nullptr;
  return on;
}

// A "potentially unsafe" call (cuMemAlloc, a synchronization, ...): refused,
// invalidating the captures it conflicts with, when this thread's mode is
// not relaxed and this thread captures (not relaxed) or another thread
// captures in global mode.
static bool unsafe_call_refused() {
  if (g_thread_mode == 2) return false;
  std::lock_guard<std::recursive_mutex> l(g_cap_mu);
  bool refused = false;
  for (auto& [s, c] : g_captures) {
    if (c->mode == 2) continue;
    if (c->thread == std::this_thread::get_id() || c->mode == 0) { c->invalid = true; refused = true; }
  }
  return refused;
}
// Work on stream `s`: recorded when it captures (returns 900/901 for a
// refused or invalidated capture, 0 when recorded), else -1: run it now.
static int record_or_run(void* s, std::function<void()> work) {
  Capture* c = capturing(s);
  if (!c) return -1;
  if (c->invalid) return 901;
  c->work.push_back(std::move(work));
  return 0;
}
static bool is_pinned_host(const void* p) {
  std::lock_guard<std::recursive_mutex> l(g_cap_mu);
  auto it = g_pinned.upper_bound(const_cast<void*>(p));
  if (it == g_pinned.begin()) return false;
  --it;
  return (const char*)p < (const char*)it->first + it->second;
}
struct Ev { double t = 0; };
static double now_ms() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
CUresult cuInit(unsigned) { if (const char* c = getenv("FAKE_CUDA_CAP_MB")) g_cap = size_t(atoll(c)) << 20; return 0; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult r, const char** s) {
  *s = r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : r == 900 ? "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"
     : r == 901 ? "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED" : "CUDA_ERROR_FAKE"; return 0; }
CUresult cuGetErrorString(CUresult r, const char** s) {
  *s = r == 2 ? "out of memory" : r == 900 ? "operation not permitted when stream is capturing"
     : r == 901 ? "operation failed due to a previous error during capture" : "fake error"; return 0; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }
CUresult cuDeviceGet(int* d, int i) { if (i != 0) return 101; *d = 0; return 0; }
CUresult cuDeviceGetName(char* s, int n, int) { strncpy(s, "Fake GPU", n); return 0; }
CUresult cuDeviceTotalMem_v2(size_t* b, int) { *b = g_cap; return 0; }
// Compute capability 8.0, or $FAKE_CUDA_CC (e.g. 90): the kernels written
// for compute capability 9.0 alone (the Hopper flash forward's wgmma,
// emulated by block_threads_host.h) are selected only with FAKE_CUDA_CC=90,
// and the others (the mma.sync forward) only without it, so the fake
// driver's flash tests run once each way (tests/cuda_fake/run.sh's header).
static int fake_cc() {
  const char* e = getenv("FAKE_CUDA_CC");
  return e && *e ? atoi(e) : 80;
}
CUresult cuDeviceGetAttribute(int* v, int a, int) {
  // (19, 41: it maps host memory, at the host's addresses: one address space)
  *v = a == 16 ? 4 : a == 75 ? fake_cc() / 10 : a == 76 ? fake_cc() % 10 : a == 19 || a == 41 ? 1 : 0;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void** c, int) { static int ctx; *c = &ctx; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int) { return 0; }
CUresult cuCtxSetCurrent(void* c) { g_ctx = c; return 0; }
CUresult cuCtxGetCurrent(void** c) { *c = g_ctx; return 0; }
CUresult cuCtxSynchronize() { if (unsafe_call_refused()) return 900; return g_ctx ? 0 : 201; }
CUresult cuMemGetInfo_v2(size_t* f, size_t* t) { *f = g_cap - g_used; *t = g_cap; return 0; }
CUresult cuMemAlloc_v2(unsigned long long* p, size_t n) {
  if (!g_ctx) return 201;
  if (unsafe_call_refused()) return 900;
  std::lock_guard<std::mutex> l(g_mu);
  if (g_used + n > g_cap) return 2;
  // Fresh device memory holds garbage on a GPU; here it holds NaN bytes
  // (0xFF), so that a kernel reading what nothing wrote shows as NaN
  // instead of the zeros a fresh host page would give. Under
  // FAKE_CUDA_NO_WORK zeros: what kernels would have written stays valid
  // (an index a host-side check reads is 0, in range). Aligned as the
  // driver's allocations are (at least 256 bytes; 512 here): malloc's 16
  // would make pointer alignments, which cuBLASLt's plans are keyed by,
  // change from run to run.
  void* q = nullptr;
  if (posix_memalign(&q, 512, n ? n : 1) != 0) return 2;
  memset(q, no_work() ? 0 : 0xFF, n);
  g_used += n; g_sizes[q] = n; *p = (unsigned long long)q; return 0; }
CUresult cuMemFree_v2(unsigned long long p) { if (unsafe_call_refused()) return 900; std::lock_guard<std::mutex> l(g_mu); g_used -= g_sizes[(void*)p]; g_sizes.erase((void*)p); free((void*)p); return 0; }
CUresult cuMemHostAlloc(void** p, size_t n, unsigned) {
  if (unsafe_call_refused()) return 900;
  *p = malloc(n); std::lock_guard<std::recursive_mutex> l(g_cap_mu); g_pinned[*p] = n; return 0; }
CUresult cuMemFreeHost(void* p) {
  if (unsafe_call_refused()) return 900;
  { std::lock_guard<std::recursive_mutex> l(g_cap_mu); g_pinned.erase(p); } free(p); return 0; }
// A captured copy between the device and pageable host memory is refused (a
// graph's memcpy node needs pinned memory); one from pinned memory reads it
// when replayed.
CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void* s, size_t n, void* st) {
  if (capturing(st) && !is_pinned_host(s)) { capturing(st)->invalid = true; return 900; }
  int r = record_or_run(st, [=] { memcpy((void*)d, s, n); });
  if (r >= 0) return r;
  memcpy((void*)d, s, n); return 0; }
CUresult cuMemcpyDtoHAsync_v2(void* d, unsigned long long s, size_t n, void* st) {
  if (capturing(st) && !is_pinned_host(d)) { capturing(st)->invalid = true; return 900; }
  // With no kernel run, what the device holds is garbage: the host reads
  // zeros (an index a host-side check reads is in range).
  if (no_work()) { memset(d, 0, n); return 0; }
  int r = record_or_run(st, [=] { memcpy(d, (void*)s, n); });
  if (r >= 0) return r;
  memcpy(d, (void*)s, n); return 0; }
CUresult cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long s, size_t n, void* st) {
  if (no_work()) return 0;
  int r = record_or_run(st, [=] { memmove((void*)d, (void*)s, n); });
  if (r >= 0) return r;
  memmove((void*)d, (void*)s, n); return 0; }
CUresult cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n, void* st) {
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "memset %zu\n", n);
  if (no_work()) return 0;
  int r = record_or_run(st, [=] { memset((void*)d, v, n); });
  if (r >= 0) return r;
  memset((void*)d, v, n); return 0; }
CUresult cuStreamCreate(void** s, unsigned) { *s = malloc(1); return 0; }
CUresult cuStreamDestroy_v2(void* s) { free(s); return 0; }
// Synchronizing or querying a capturing stream is never legal.
CUresult cuStreamSynchronize(void* s) {
  if (Capture* c = capturing(s)) { c->invalid = true; return 900; }
  if (!s && unsafe_call_refused()) return 900;  // the legacy stream syncs with all
  return 0; }
CUresult cuStreamQuery(void* s) { if (Capture* c = capturing(s)) { c->invalid = true; return 900; } return 0; }
CUresult cuStreamWaitEvent(void*, void*, unsigned) { return 0; }
CUresult cuEventCreate(void** e, unsigned) { *e = new Ev; return 0; }
CUresult cuEventDestroy_v2(void* e) { delete (Ev*)e; return 0; }
CUresult cuEventRecord(void* e, void*) { ((Ev*)e)->t = now_ms(); return 0; }
CUresult cuEventSynchronize(void*) { return unsafe_call_refused() ? 900 : 0; }
CUresult cuEventQuery(void*) { return unsafe_call_refused() ? 900 : 0; }
CUresult cuStreamBeginCapture_v2(void* s, int mode) {
  if (!s) return 900;  // the legacy stream cannot capture
  std::lock_guard<std::recursive_mutex> l(g_cap_mu);
  if (g_captures.count(s)) return 1;
  g_captures[s] = new Capture{{}, mode, std::this_thread::get_id()};
  return 0; }
CUresult cuStreamEndCapture(void* s, void** graph) {
  std::lock_guard<std::recursive_mutex> l(g_cap_mu);
  auto it = g_captures.find(s);
  if (it == g_captures.end()) return 1;  // CUDA_ERROR_ILLEGAL_STATE on a real driver
  Capture* c = it->second;
  g_captures.erase(it);
  *graph = nullptr;
  CUresult r = c->invalid ? 901 : 0;
  if (!c->invalid) *graph = new Graph{std::move(c->work)};
  delete c;
  return r; }
CUresult cuStreamIsCapturing(void* s, int* status) {
  Capture* c = capturing(s);
  *status = !c ? 0 : c->invalid ? 2 : 1; return 0; }
CUresult cuThreadExchangeStreamCaptureMode(int* mode) { std::swap(*mode, g_thread_mode); return 0; }
CUresult cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long) {
  *exec = new Graph{((Graph*)graph)->work}; return 0; }
CUresult cuGraphLaunch(void* exec, void* s) {
  if (capturing(s)) return 900;  // (a real driver can capture a child graph; ignis never asks)
  for (auto& w : ((Graph*)exec)->work) w();
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "graph launch: %zu nodes\n", ((Graph*)exec)->work.size());
  return 0; }
CUresult cuGraphExecDestroy(void* exec) { delete (Graph*)exec; return 0; }
CUresult cuGraphDestroy(void* graph) { delete (Graph*)graph; return 0; }
// For fake_libcublaslt.cpp: host work for stream `s`, recorded when it
// captures (returns 1, taking `data`) or not (returns 0: the caller runs it).
int fake_cuda_capture_host_work(void* s, void (*run)(void*), void* data, void (*destroy)(void*)) {
  Capture* c = capturing(s);
  if (!c) return 0;
  std::shared_ptr<void> owned(data, destroy);
  c->work.push_back([run, owned] { run(owned.get()); });
  return 1; }
CUresult cuEventElapsedTime_v2(float* ms, void* a, void* b) { *ms = float(((Ev*)b)->t - ((Ev*)a)->t); return 0; }
CUresult cuModuleLoadData(void** m, const void*) { *m = malloc(1); return 0; }
// A function's dynamic shared memory is capped at 48 KiB until
// cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8)
// raises it, and a launch asking for more fails as on a GPU
// (CUDA_ERROR_INVALID_VALUE), so a kernel that forgets the attribute fails here too.
struct Fn { std::string name; void* host; void (*wrapper)(void**, unsigned, unsigned, unsigned, unsigned); int (*arg_sizes)(size_t*) = nullptr; unsigned max_dynamic_shared = 48 * 1024; };
CUresult cuFuncSetAttribute(void* f, int attr, int v) {
  if (attr == 8) ((Fn*)f)->max_dynamic_shared = unsigned(v);
  return 0;
}
// Hopper's limits by threads alone (the fake has no registers to count).
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, void*, int threads, size_t) {
  *n = threads > 0 ? std::min(32, 2048 / threads) : 0;
  return 0;
}
struct Geometry { int64_t sizes[16]; int64_t dst_strides[16]; int64_t src_strides[16]; int32_t ndim; };
}  // extern "C"

// Generated kernels (pointwise, reductions, row kernels): ignis writes each
// one's source to $IGNIS_CUDA_DUMP_SOURCES/<name>.cu when it asks for it;
// here it is compiled as host C++ with a wrapper that unpacks the launch's
// argument array and walks the grid (one thread a block), then cached as
// <name>.so beside it.
static std::vector<std::string> split_params(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '<') ++depth;
    if (c == '>') --depth;
    if (c == ',' && depth == 0) { out.push_back(cur); cur.clear(); continue; }
    cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}
static std::string param_type(std::string p) {
  while (!p.empty() && p.back() == ' ') p.pop_back();
  size_t i = p.size();
  while (i > 0 && (isalnum((unsigned char)p[i - 1]) || p[i - 1] == '_')) --i;
  return p.substr(0, i);
}
// With $FAKE_CUDA_BLOCK_THREADS set, a kernel runs instead with real threads
// for the launch's block (block_threads_host.h: barriers and warp shuffles
// between them), built as <name>.threads.so: slow, for the tests of the
// warp and block code (tests/python/test_cuda_rows.py).
// `*sizes` receives the wrapper's report of its argument sizes (for capture).
static void* generated_wrapper(const std::string& name, bool threads, int (**sizes)(size_t*)) {
  const char* dir = getenv("IGNIS_CUDA_DUMP_SOURCES");
  const char* kernel_host = getenv("IGNIS_FAKE_CUDA_HOST_HEADER");
  if (!dir || !kernel_host) return nullptr;
  std::string header = kernel_host;
  if (threads) header = header.substr(0, header.rfind('/') + 1) + "block_threads_host.h";
  std::string base = std::string(dir) + "/" + name;
  FILE* f = fopen((base + ".cu").c_str(), "rb");
  if (!f) return nullptr;
  std::string src;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) src.append(buf, n);
  fclose(f);
  // extern "C" __global__ void [__launch_bounds__(n)] <name>(params)
  std::string sig = " " + name + "(";
  size_t at = src.find(sig);
  if (at == std::string::npos || src.rfind("extern \"C\"", at) == std::string::npos) return nullptr;
  size_t open = at + sig.size(), close = src.find(')', open);
  std::vector<std::string> params = split_params(src.substr(open, close - open));
  std::string args;
  for (size_t i = 0; i < params.size(); ++i)
    args += (i ? ", " : "") + std::string("*(") + param_type(params[i]) + "*)a[" + std::to_string(i) + "]";
  // Kernels that need a block's threads to meet (warp shuffles, mma.sync:
  // the flash-attention kernels) always run as fibers per block
  // (block_threads_host.h's ig_launch_blocks).
  const bool fibers = src.find("IG_NEEDS_BLOCK_THREADS") != std::string::npos;
  if (fibers) header = header.substr(0, header.rfind('/') + 1) + "block_threads_host.h";
  std::string w = "\nextern \"C\" void " + name +
                  "__host(void** a, unsigned gx, unsigned gy, unsigned bx, unsigned by) {\n";
  if (fibers) {
    w += "  (void)by;\n  ig_launch_blocks(gx, gy, bx, [a] { " + name + "(" + args + "); });\n}\n";
  } else if (threads) {
    w += "  ig_launch_2d(" + name + ", gx, gy, bx, by" + (args.empty() ? "" : ", ") + args + ");\n}\n";
  } else {
    w += "  (void)bx; (void)by;\n  gridDim = {gx, gy, 1};\n  for (unsigned y = 0; y < gy; ++y)\n"
         "    for (unsigned x = 0; x < gx; ++x) {\n      blockIdx = {x, y, 0};\n      " + name +
         "(" + args + ");\n    }\n}\n";
  }
  w += "extern \"C\" int " + name + "__arg_sizes(size_t* s) {\n";
  for (size_t i = 0; i < params.size(); ++i)
    w += "  s[" + std::to_string(i) + "] = sizeof(" + param_type(params[i]) + ");\n";
  w += "  return " + std::to_string(params.size()) + ";\n}\n";
  // (".v2": wrappers built before they reported argument sizes are rebuilt.)
  const std::string tag = std::string(fibers ? ".fibers" : threads ? ".threads" : "") + ".v2";
  std::string host = base + tag + ".host.cpp", so = base + tag + ".so";
  if (FILE* h = fopen(host.c_str(), "wb")) { fwrite(src.data(), 1, src.size(), h); fwrite(w.data(), 1, w.size(), h); fclose(h); }
  std::string cmd = "g++ -std=c++20 -O1 -w -shared -fPIC -include " + header + " -x c++ " + host +
                    " -o " + so + (threads || fibers ? " -pthread" : "");
  struct stat cu_st, so_st;  // rebuilt when ignis wrote a newer text of the kernel
  bool fresh = stat((base + ".cu").c_str(), &cu_st) == 0 && stat(so.c_str(), &so_st) == 0 &&
               so_st.st_mtime >= cu_st.st_mtime;
  if (!fresh && system(cmd.c_str()) != 0) return nullptr;
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return nullptr;
  *sizes = (int (*)(size_t*))dlsym(lib, (name + "__arg_sizes").c_str());
  return dlsym(lib, (name + "__host").c_str());
}

extern "C" {
CUresult cuModuleGetFunction(void** f, void*, const char* name) {
  if (no_work()) {  // (no kernel is built for the host)
    *f = new Fn{name, nullptr, nullptr};
    return 0;
  }
  static void* emu = getenv("IGNIS_FAKE_CUDA_KERNELS") ? dlopen(getenv("IGNIS_FAKE_CUDA_KERNELS"), RTLD_NOW | RTLD_LOCAL) : nullptr;
  void* h = emu ? dlsym(emu, name) : nullptr;
  int (*sizes)(size_t*) = nullptr;
  void* w = h ? nullptr : generated_wrapper(name, getenv("FAKE_CUDA_BLOCK_THREADS") != nullptr, &sizes);
  if (!h && !w) return 500;
  *f = new Fn{name, h, (void (*)(void**, unsigned, unsigned, unsigned, unsigned))w, sizes};
  return 0; }
static CUresult launch_now(Fn* fn, unsigned gx, unsigned gy, unsigned bx, unsigned by, void** a) {
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "launch %s\ngrid %s %u %u\n", fn->name.c_str(), fn->name.c_str(), gx, gy);
  if (no_work()) return 0;
  if (fn->wrapper) { fn->wrapper(a, gx, gy, bx, by); return 0; }
  const std::string& n = fn->name;
  if (n.rfind("copy_strided", 0) == 0) ((void(*)(void*, const void*, int64_t, Geometry))fn->host)(*(void**)a[0], *(const void**)a[1], *(int64_t*)a[2], *(Geometry*)a[3]);
  else if (n.rfind("copy_contiguous", 0) == 0) ((void(*)(void*, const void*, int64_t))fn->host)(*(void**)a[0], *(const void**)a[1], *(int64_t*)a[2]);
  else if (n.rfind("fill_strided", 0) == 0) ((void(*)(void*, uint64_t, int64_t, Geometry))fn->host)(*(void**)a[0], *(uint64_t*)a[1], *(int64_t*)a[2], *(Geometry*)a[3]);
  else if (n.rfind("fill_contiguous", 0) == 0) ((void(*)(void*, uint64_t, int64_t))fn->host)(*(void**)a[0], *(uint64_t*)a[1], *(int64_t*)a[2]);
  else return 500;
  return 0; }
// The byte size of each kernel argument, for capture (the driver copies the
// values at launch): the built-in kernels' are known, a generated kernel's
// wrapper reports them.
static std::vector<size_t> arg_sizes(Fn* fn) {
  if (fn->arg_sizes) { size_t s[64]; int n = fn->arg_sizes(s); return std::vector<size_t>(s, s + n); }
  const std::string& n = fn->name;
  if (n.rfind("copy_strided", 0) == 0 || n.rfind("fill_strided", 0) == 0) return {8, 8, 8, sizeof(Geometry)};
  return {8, 8, 8};
}
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned, unsigned bx, unsigned by, unsigned, unsigned shared, void* st, void** a, void**) {
  Fn* fn = (Fn*)f;
  if (shared > fn->max_dynamic_shared) return 1;
  if (Capture* c = capturing(st)) {
    if (c->invalid) return 901;
    std::vector<std::vector<char>> values;
    const std::vector<size_t> sizes = arg_sizes(fn);
    for (size_t i = 0; i < sizes.size(); ++i)
      values.emplace_back((const char*)a[i], (const char*)a[i] + sizes[i]);
    c->work.push_back([fn, gx, gy, bx, by, values]() mutable {
      std::vector<void*> ptrs;
      for (auto& v : values) ptrs.push_back(v.data());
      launch_now(fn, gx, gy, bx, by, ptrs.data());
    });
    return 0;
  }
  return launch_now(fn, gx, gy, bx, by, a); }
}
extern "C" {
int cuGetExportTable(const void**, const void*) { return 500; }
int cuGetProcAddress(const char*, void**, int, unsigned long long, int*) { return 500; }
int cuGetProcAddress_v2(const char*, void**, int, unsigned long long, int*) { return 500; }
}
