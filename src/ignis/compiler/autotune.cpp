#include "ignis/compiler/autotune.h"

#include <omp.h>

#include <algorithm>
#include <unordered_map>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "ignis/compiler/codegen_cpp.h"
#include "ignis/kernels/cpu/gemm.h"
#include "ignis/runtime/cache_dir.h"
#include "ignis/runtime/sha256.h"

namespace ignis::compiler {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<CompilerOptions> variants(const CompilerOptions& base) {
  int all = omp_get_max_threads();
  // Serial or every thread: a team of some other size makes libgomp's
  // surplus workers exit and the next full team create them again
  // (kernels/cpu/parallel.h), a cost a kernel timed alone does not show.
  std::vector<int64_t> threads = {base.threads};
  if (all > 1) threads.push_back(1);
  std::vector<CompilerOptions> out;
  for (int64_t t : threads)
    for (int64_t lanes : {base.lanes(), int64_t(8), int64_t(16), int64_t(32)}) {
      CompilerOptions o = base;
      o.threads = t;
      o.reduction_lanes = lanes;
      bool seen = false;
      for (const CompilerOptions& q : out)
        if (q.threads == o.threads && q.reduction_lanes == o.reduction_lanes) seen = true;
      if (!seen) out.push_back(o);
    }
  return out;
}

std::string describe(const CompilerOptions& o) {
  return "threads=" + (o.threads == 0 ? std::string("all") : std::to_string(o.threads)) +
         " lanes=" + std::to_string(o.reduction_lanes);
}


// Winners on disk (autotune_entry): "<threads> <lanes>\n".
bool read_winner(const std::filesystem::path& path, CompilerOptions* o) {
  std::optional<std::string> text = runtime::read_file(path);
  if (!text) return false;
  long long threads = -1, lanes = -1;
  if (std::sscanf(text->c_str(), "%lld %lld", &threads, &lanes) != 2 || threads < 0 || lanes < 1 ||
      lanes > 1024)
    return false;  // a corrupt entry is measured again, never trusted
  o->threads = threads;
  o->reduction_lanes = lanes;
  return true;
}

// Random floats in [-1, 1), zero elsewhere: enough for timing.
void fill(const Tensor& t) {
  char* p = static_cast<char*>(t.data_ptr());
  size_t bytes = t.impl()->storage()->nbytes();
  std::memset(p, 0, bytes);
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return float(int32_t(state >> 32)) * (1.0f / 2147483648.0f);
  };
  if (t.dtype() == ScalarType::Float32)
    for (size_t i = 0; i < bytes / 4; ++i) reinterpret_cast<float*>(p)[i] = next();
  else if (t.dtype() == ScalarType::Float64)
    for (size_t i = 0; i < bytes / 8; ++i) reinterpret_cast<double*>(p)[i] = next();
}

double time_kernel(KernelFn* fn, char* const* ptrs) {
  const cpu::KernelRuntime* rt = cpu::kernel_runtime();
  fn(ptrs, rt);  // warm-up: page faults, the thread team
  int calls = 0;
  auto start = Clock::now();
  double elapsed = 0;
  while (calls < 3 || (elapsed < 0.02 && calls < 200)) {
    fn(ptrs, rt);
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return elapsed / calls;
}

}  // namespace

std::filesystem::path autotune_entry(const std::filesystem::path& cache_dir,
                                     const std::string& key) {
  return cache_dir / "autotune" / key.substr(0, 2) / key;
}

ProgramBuffers allocate_program_buffers(const Program& p, Device device) {
  ProgramBuffers out;
  out.tensors.resize(p.buffers.size());
  out.ptrs.assign(p.buffers.size(), nullptr);
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const Buffer& buf = p.buffers[b];
    if (buf.eliminated || buf.written_as >= 0) continue;
    DimVector sizes, strides;
    for (size_t d = 0; d < buf.sizes.size(); ++d) {
      sizes.push_back(buf.sizes[d].value());
      strides.push_back(buf.strides[d].value());
    }
    out.tensors[b] = empty_strided_tensor(sizes, strides, buf.dtype, device);
    out.ptrs[b] = static_cast<char*>(out.tensors[b].data_ptr());
  }
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (!p.buffers[b].eliminated && p.buffers[b].written_as >= 0)
      out.ptrs[b] = out.ptrs[size_t(p.buffers[b].written_as)];
  return out;
}

AutotuneResult autotune(const Program& p, const CompilerOptions& requested,
                        runtime::CodeCache& cache) {
  AutotuneResult result;
  result.per_kernel.assign(p.kernels.size(), requested);
  // Variants are measured as static code, whatever the program is printed
  // as afterwards (its sizes are these; the winner's knobs carry over).
  CompilerOptions base = requested;
  base.size_generic = false;
  std::vector<CompilerOptions> vs = variants(base);
  // Which kernels still need measuring.
  std::vector<std::string> keys(p.kernels.size());
  std::vector<size_t> todo;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    keys[i] = runtime::sha256_hex(generate_kernel_cpp(p, p.kernels[i], base) + "|threads " +
                                  std::to_string(omp_get_max_threads()));
    CompilerOptions o = base;
    if (read_winner(autotune_entry(cache.dir(), keys[i]), &o)) {
      o.size_generic = requested.size_generic;
      result.per_kernel[i] = o;
      result.report.push_back(p.kernels[i].name + ": " + describe(o) + " (cached)");
    } else {
      todo.push_back(i);
    }
  }
  if (todo.empty()) return result;
  result.measured = true;

  std::vector<std::string> sources;
  std::vector<CppProgramCode> codes;  // each kernel's function and buffers, per variant
  for (const CompilerOptions& o : vs) {
    codes.push_back(generate_cpp_code(p, std::vector<CompilerOptions>(p.kernels.size(), o)));
    sources.push_back(codes.back().source);
  }
  runtime::CompileOptions co;
  co.name = "autotune";
  co.prelude = cpp_includes();
  std::vector<runtime::LoadedLibrary> libs = cache.compile_many(sources, co);

  ProgramBuffers bufs = allocate_program_buffers(p, Device());
  for (const Tensor& t : bufs.tensors)
    if (t.defined()) fill(t);
  const std::vector<char*>& ptrs = bufs.ptrs;
  std::unordered_map<std::string, size_t> measured;  // key -> the kernel measured for it
  for (size_t i : todo) {
    const Kernel& k = p.kernels[i];
    // A kernel of an earlier one's text (another layer) takes its winner.
    if (auto m = measured.find(keys[i]); m != measured.end()) {
      result.per_kernel[i] = result.per_kernel[m->second];
      result.report.push_back(k.name + ": " + describe(result.per_kernel[i]) + " (as " +
                              p.kernels[m->second].name + ")");
      continue;
    }
    measured.emplace(keys[i], i);
    std::vector<std::string> seen;
    double best = -1, first = -1;
    size_t best_v = 0;
    for (size_t v = 0; v < vs.size(); ++v) {
      std::string src = generate_kernel_cpp(p, k, vs[v]);
      if (std::find(seen.begin(), seen.end(), src) != seen.end()) continue;
      seen.push_back(src);
      std::vector<char*> args;  // the kernel's own buffers (Note [Kernels of one text])
      for (int b : codes[v].params[i]) args.push_back(ptrs[size_t(b)]);
      double t = time_kernel(libs[v].function<KernelFn>(codes[v].symbols[i]), args.data());
      if (first < 0) first = t;
      if (best < 0 || t < best) {
        best = t;
        best_v = v;
      }
    }
    result.per_kernel[i] = vs[best_v];
    result.per_kernel[i].size_generic = requested.size_generic;
    char line[160];
    std::snprintf(line, sizeof line, ": %s %.3f ms (default %.3f ms, %zu variants)",
                  describe(vs[best_v]).c_str(), best * 1e3, first * 1e3, seen.size());
    result.report.push_back(k.name + line);
    std::filesystem::path path = autotune_entry(cache.dir(), keys[i]);
    runtime::make_dirs(path.parent_path());
    runtime::write_file_atomic(path, std::to_string(vs[best_v].threads) + " " +
                                         std::to_string(vs[best_v].reduction_lanes) + "\n");
  }
  return result;
}

}  // namespace ignis::compiler
