// A fake libcuda.so.1 for testing ignis's CUDA runtime on machines without a
// GPU (tests/cuda_fake/run.sh): one device ("Fake GPU", sm_90, 4 SMs,
// $FAKE_CUDA_CAP_MB of memory, default 1024) whose memory is host memory,
// copies that are memcpy, streams that are always done, events that read the
// host clock, and kernels run on the host: copies and fills from
// $IGNIS_FAKE_CUDA_KERNELS (their CUDA C++ compiled as host C++), generated
// kernels compiled from $IGNIS_CUDA_DUMP_SOURCES on first use (launches of
// unknown kernels fail). NVRTC still compiles every kernel, so its cache path is exercised;
// NVRTC asks the driver for an export table when libcuda is loaded, which
// this fake declines. Not a driver: nothing here is asynchronous.
#include <chrono>
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
struct Ev { double t = 0; };
static double now_ms() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
CUresult cuInit(unsigned) { if (const char* c = getenv("FAKE_CUDA_CAP_MB")) g_cap = size_t(atoll(c)) << 20; return 0; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult r, const char** s) { *s = r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_FAKE"; return 0; }
CUresult cuGetErrorString(CUresult r, const char** s) { *s = r == 2 ? "out of memory" : "fake error"; return 0; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }
CUresult cuDeviceGet(int* d, int i) { if (i != 0) return 101; *d = 0; return 0; }
CUresult cuDeviceGetName(char* s, int n, int) { strncpy(s, "Fake GPU", n); return 0; }
CUresult cuDeviceTotalMem_v2(size_t* b, int) { *b = g_cap; return 0; }
CUresult cuDeviceGetAttribute(int* v, int a, int) { *v = a == 16 ? 4 : a == 75 ? 9 : 0; return 0; }
CUresult cuDevicePrimaryCtxRetain(void** c, int) { static int ctx; *c = &ctx; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int) { return 0; }
CUresult cuCtxSetCurrent(void* c) { g_ctx = c; return 0; }
CUresult cuCtxGetCurrent(void** c) { *c = g_ctx; return 0; }
CUresult cuCtxSynchronize() { return g_ctx ? 0 : 201; }
CUresult cuMemGetInfo_v2(size_t* f, size_t* t) { *f = g_cap - g_used; *t = g_cap; return 0; }
CUresult cuMemAlloc_v2(unsigned long long* p, size_t n) {
  if (!g_ctx) return 201;
  std::lock_guard<std::mutex> l(g_mu);
  if (g_used + n > g_cap) return 2;
  // Fresh device memory holds garbage on a GPU; here it holds NaN bytes
  // (0xFF), so that a kernel reading what nothing wrote shows as NaN
  // instead of the zeros a fresh host page would give.
  void* q = malloc(n); memset(q, 0xFF, n);
  g_used += n; g_sizes[q] = n; *p = (unsigned long long)q; return 0; }
CUresult cuMemFree_v2(unsigned long long p) { std::lock_guard<std::mutex> l(g_mu); g_used -= g_sizes[(void*)p]; g_sizes.erase((void*)p); free((void*)p); return 0; }
CUresult cuMemHostAlloc(void** p, size_t n, unsigned) { *p = malloc(n); return 0; }
CUresult cuMemFreeHost(void* p) { free(p); return 0; }
CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void* s, size_t n, void*) { memcpy((void*)d, s, n); return 0; }
CUresult cuMemcpyDtoHAsync_v2(void* d, unsigned long long s, size_t n, void*) { memcpy(d, (void*)s, n); return 0; }
CUresult cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long s, size_t n, void*) { memmove((void*)d, (void*)s, n); return 0; }
CUresult cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n, void*) { memset((void*)d, v, n); return 0; }
CUresult cuStreamCreate(void** s, unsigned) { *s = malloc(1); return 0; }
CUresult cuStreamDestroy_v2(void* s) { free(s); return 0; }
CUresult cuStreamSynchronize(void*) { return 0; }
CUresult cuStreamQuery(void*) { return 0; }
CUresult cuStreamWaitEvent(void*, void*, unsigned) { return 0; }
CUresult cuEventCreate(void** e, unsigned) { *e = new Ev; return 0; }
CUresult cuEventDestroy_v2(void* e) { delete (Ev*)e; return 0; }
CUresult cuEventRecord(void* e, void*) { ((Ev*)e)->t = now_ms(); return 0; }
CUresult cuEventSynchronize(void*) { return 0; }
CUresult cuEventQuery(void*) { return 0; }
CUresult cuEventElapsedTime_v2(float* ms, void* a, void* b) { *ms = float(((Ev*)b)->t - ((Ev*)a)->t); return 0; }
CUresult cuModuleLoadData(void** m, const void*) { *m = malloc(1); return 0; }
struct Fn { std::string name; void* host; void (*wrapper)(void**, unsigned, unsigned, unsigned, unsigned); };
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
static void* generated_wrapper(const std::string& name, bool threads) {
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
  const std::string tag = fibers ? ".fibers" : threads ? ".threads" : "";
  std::string host = base + tag + ".host.cpp", so = base + tag + ".so";
  if (FILE* h = fopen(host.c_str(), "wb")) { fwrite(src.data(), 1, src.size(), h); fwrite(w.data(), 1, w.size(), h); fclose(h); }
  std::string cmd = "g++ -std=c++20 -O1 -w -shared -fPIC -include " + header + " -x c++ " + host +
                    " -o " + so + (threads || fibers ? " -pthread" : "");
  struct stat cu_st, so_st;  // rebuilt when ignis wrote a newer text of the kernel
  bool fresh = stat((base + ".cu").c_str(), &cu_st) == 0 && stat(so.c_str(), &so_st) == 0 &&
               so_st.st_mtime >= cu_st.st_mtime;
  if (!fresh && system(cmd.c_str()) != 0) return nullptr;
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  return lib ? dlsym(lib, (name + "__host").c_str()) : nullptr;
}

extern "C" {
CUresult cuModuleGetFunction(void** f, void*, const char* name) {
  static void* emu = getenv("IGNIS_FAKE_CUDA_KERNELS") ? dlopen(getenv("IGNIS_FAKE_CUDA_KERNELS"), RTLD_NOW | RTLD_LOCAL) : nullptr;
  void* h = emu ? dlsym(emu, name) : nullptr;
  void* w = h ? nullptr : generated_wrapper(name, getenv("FAKE_CUDA_BLOCK_THREADS") != nullptr);
  if (!h && !w) return 500;
  *f = new Fn{name, h, (void (*)(void**, unsigned, unsigned, unsigned, unsigned))w};
  return 0; }
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned, unsigned bx, unsigned by, unsigned, unsigned, void*, void** a, void**) {
  Fn* fn = (Fn*)f;
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "launch %s\n", fn->name.c_str());
  if (fn->wrapper) { fn->wrapper(a, gx, gy, bx, by); return 0; }
  const std::string& n = fn->name;
  if (n.rfind("copy_strided", 0) == 0) ((void(*)(void*, const void*, int64_t, Geometry))fn->host)(*(void**)a[0], *(const void**)a[1], *(int64_t*)a[2], *(Geometry*)a[3]);
  else if (n.rfind("copy_contiguous", 0) == 0) ((void(*)(void*, const void*, int64_t))fn->host)(*(void**)a[0], *(const void**)a[1], *(int64_t*)a[2]);
  else if (n.rfind("fill_strided", 0) == 0) ((void(*)(void*, uint64_t, int64_t, Geometry))fn->host)(*(void**)a[0], *(uint64_t*)a[1], *(int64_t*)a[2], *(Geometry*)a[3]);
  else if (n.rfind("fill_contiguous", 0) == 0) ((void(*)(void*, uint64_t, int64_t))fn->host)(*(void**)a[0], *(uint64_t*)a[1], *(int64_t*)a[2]);
  else return 500;
  return 0; }
}
extern "C" {
int cuGetExportTable(const void**, const void*) { return 500; }
int cuGetProcAddress(const char*, void**, int, unsigned long long, int*) { return 500; }
int cuGetProcAddress_v2(const char*, void**, int, unsigned long long, int*) { return 500; }
}
