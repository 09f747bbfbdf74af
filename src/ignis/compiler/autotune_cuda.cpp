#include "ignis/compiler/autotune_cuda.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>
#include <unordered_map>

#include "ignis/compiler/autotune.h"
#include "ignis/compiler/codegen_cuda.h"
#include "ignis/compiler/compiled_graph.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/runtime/cache_dir.h"
#include "ignis/runtime/sha256.h"

namespace ignis::compiler {

namespace {

// A variant must beat the default by this much to replace it: closer than
// that, the two are the same speed and the timing's noise would choose.
constexpr double kMinGain = 0.02;
// Launches timed together (one pair of events), and how long to keep
// measuring a variant.
constexpr int kBatch = 10;
constexpr double kMeasureMs = 20.0;

bool same_knobs(const CompilerOptions& a, const CompilerOptions& b) {
  return a.cuda_row_vectors == b.cuda_row_vectors && a.cuda_row_prefetch == b.cuda_row_prefetch &&
         a.cuda_row_one_wave == b.cuda_row_one_wave;
}

// The requested options first (the default every winner is compared with),
// then every combination of the row knobs.
std::vector<CompilerOptions> variants(const CompilerOptions& base) {
  std::vector<CompilerOptions> out = {base};
  for (int64_t vectors : {1, 2, 4, 8})
    for (bool prefetch : {true, false})
      for (bool one_wave : {false, true}) {
        CompilerOptions o = base;
        o.cuda_row_vectors = vectors;
        o.cuda_row_prefetch = prefetch;
        o.cuda_row_one_wave = one_wave;
        if (std::none_of(out.begin(), out.end(),
                         [&](const CompilerOptions& q) { return same_knobs(q, o); }))
          out.push_back(o);
      }
  return out;
}

std::string describe(const CompilerOptions& o) {
  return "vectors=" + std::to_string(o.cuda_row_vectors) +
         " prefetch=" + (o.cuda_row_prefetch ? "on" : "off") +
         " one_wave=" + (o.cuda_row_one_wave ? "on" : "off");
}

// Winners on disk (autotune_entry): "cuda <vectors> <prefetch> <one_wave>\n".

bool read_winner(const std::filesystem::path& path, CompilerOptions* o) {
  std::optional<std::string> text = runtime::read_file(path);
  if (!text) return false;
  long long vectors = 0;
  int prefetch = -1, one_wave = -1;
  if (std::sscanf(text->c_str(), "cuda %lld %d %d", &vectors, &prefetch, &one_wave) != 3 ||
      vectors < 1 || vectors > 8 || (prefetch != 0 && prefetch != 1) ||
      (one_wave != 0 && one_wave != 1))
    return false;  // a corrupt entry is measured again, never trusted
  o->cuda_row_vectors = vectors;
  o->cuda_row_prefetch = prefetch == 1;
  o->cuda_row_one_wave = one_wave == 1;
  return true;
}

// The launch of one variant's kernel, as the executable would hold it.
Executable::Kern as_kern(const CudaKernel& k) {
  Executable::Kern e;
  e.symbol = k.symbol;
  e.params = k.params;
  e.threads = k.launch.threads;
  e.blocks = k.launch.blocks;
  e.workspace_bytes = k.launch.workspace_bytes;
  e.zeroed_bytes = k.launch.zeroed_bytes;
  e.one_round = k.launch.one_round;
  e.size_params = k.size_params;
  return e;
}

// Milliseconds a launch, the median of batches of kBatch launches.
double time_launches(cuda::CUfunction f, const Executable::Kern& k,
                     const std::vector<char*>& ptrs, int device) {
  const int64_t round = round_blocks(f, k, device);
  launch_cuda_kernel(f, k, ptrs, device, round);  // warm-up: the module's first launch
  const cuda::Stream stream = cuda::current_stream(device);
  cuda::synchronize_stream(stream);
  std::vector<double> batches;
  double total = 0;
  while (batches.size() < 3 || (total < kMeasureMs && batches.size() < 50)) {
    cuda::Event start(true), end(true);
    start.record(stream);
    for (int i = 0; i < kBatch; ++i) launch_cuda_kernel(f, k, ptrs, device, round);
    end.record(stream);
    end.synchronize();
    const double ms = start.elapsed_ms(end);
    batches.push_back(ms / kBatch);
    total += ms;
  }
  std::sort(batches.begin(), batches.end());
  return batches[batches.size() / 2];
}

}  // namespace

CudaAutotuneResult autotune_cuda(const Program& p, const CompilerOptions& requested,
                                 const std::filesystem::path& cache_dir) {
  CudaAutotuneResult result;
  result.per_kernel.assign(p.kernels.size(), requested);
  if (p.kernels.empty()) return result;
  // Variants are measured as static code, whatever the program is printed
  // as afterwards (its sizes are these; the winner's knobs carry over).
  CompilerOptions base = requested;
  base.size_generic = false;
  const std::vector<CompilerOptions> vs = variants(base);
  std::vector<CudaProgramCode> codes;
  for (const CompilerOptions& o : vs) codes.push_back(generate_cuda(p, o));

  const int device = p.device.index < 0 ? cuda::current_device() : int(p.device.index);
  const cuda::DeviceProperties& props = cuda::device_properties(device);
  const std::string gpu = props.name + " sm_" + std::to_string(props.major * 10 + props.minor);

  // Per kernel: the variants that print a text of their own (the first of
  // each key), and the key of its default text.
  std::vector<std::vector<size_t>> distinct(p.kernels.size());
  std::vector<std::string> keys(p.kernels.size());
  std::vector<size_t> todo;
  std::unordered_map<std::string, size_t> first_of_key;  // default key -> first kernel
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    std::vector<std::string> seen;
    for (size_t v = 0; v < vs.size(); ++v) {
      const std::string& key = codes[v].kernels[i].key;
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      distinct[i].push_back(v);
    }
    if (distinct[i].size() < 2) continue;  // nothing to choose
    keys[i] = runtime::sha256_hex("cuda|" + codes[0].kernels[i].key + "|" + gpu);
    CompilerOptions o = requested;
    if (read_winner(autotune_entry(cache_dir, keys[i]), &o)) {
      result.per_kernel[i] = o;
      result.report.push_back(p.kernels[i].name + ": " + describe(o) + " (cached)");
    } else if (auto [first, fresh] = first_of_key.emplace(codes[0].kernels[i].key, i); fresh) {
      todo.push_back(i);
    }
  }
  if (todo.empty()) return result;
  result.measured = true;

  // Every (kernel, variant) to time, compiled in one go: a unit per variant
  // holding that variant's prelude and the kernels it prints.
  std::vector<cuda::KernelRequest> units(vs.size());
  std::vector<std::vector<std::string>> symbols(vs.size());
  std::map<std::pair<size_t, size_t>, size_t> slot;  // (kernel, variant) -> index in its unit
  for (size_t v = 0; v < vs.size(); ++v) {
    const CudaProgramCode& c = codes[v];
    units[v].source = c.source.substr(0, c.prelude_bytes);
    units[v].label = "autotune_variant" + std::to_string(v) + ".cu";
    units[v].options = cuda_compile_options();
    // A kernel whose text an earlier kernel of this variant printed runs
    // that kernel's code (Note [Kernels of one text]).
    std::unordered_map<std::string, size_t> printed;  // symbol -> index in the unit
    for (size_t i : todo) {
      if (std::find(distinct[i].begin(), distinct[i].end(), v) == distinct[i].end()) continue;
      const CudaKernel& k = c.kernels[i];
      auto [at, fresh] = printed.emplace(k.symbol, symbols[v].size());
      if (fresh) {
        size_t first = i;  // the kernel whose text is the code
        for (size_t j = 0; j < c.kernels.size(); ++j)
          if (c.kernels[j].symbol == k.symbol) {
            first = j;
            break;
          }
        const CudaKernel& f = c.kernels[first];
        units[v].source.append(c.source, f.source_begin, f.source_end - f.source_begin);
        symbols[v].push_back(k.symbol);
      }
      slot[{i, v}] = at->second;
    }
  }
  std::vector<size_t> used;  // the units with kernels
  std::vector<cuda::KernelRequest> requests;
  std::vector<std::vector<std::string>> request_symbols;
  for (size_t v = 0; v < vs.size(); ++v)
    if (!symbols[v].empty()) {
      used.push_back(v);
      requests.push_back(units[v]);
      request_symbols.push_back(symbols[v]);
    }
  const int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::vector<cuda::CUfunction>> found =
      cuda::get_kernels(device, requests, request_symbols, threads);
  std::vector<const std::vector<cuda::CUfunction>*> functions(vs.size(), nullptr);
  for (size_t u = 0; u < used.size(); ++u) functions[used[u]] = &found[u];

  // Device buffers of the program's shapes.
  cuda::DeviceGuard guard(device);
  ProgramBuffers bufs = allocate_program_buffers(p, p.device);
  for (const Tensor& t : bufs.tensors)
    if (t.defined()) fill_tensor(t, is_floating(t.dtype()) ? Scalar(0.5) : Scalar(int64_t(0)));
  const std::vector<char*>& ptrs = bufs.ptrs;

  for (size_t i : todo) {
    const Kernel& k = p.kernels[i];
    double best = -1, first = -1;
    size_t best_v = 0;
    for (size_t v : distinct[i]) {
      const CudaKernel& ck = codes[v].kernels[i];
      const double t =
          time_launches((*functions[v])[slot.at({i, v})], as_kern(ck), ptrs, device);
      if (first < 0) first = t;
      if (best < 0 || t < best) {
        best = t;
        best_v = v;
      }
    }
    if (best > first * (1.0 - kMinGain)) {
      best_v = 0;
      best = first;
    }
    result.per_kernel[i] = vs[best_v];
    result.per_kernel[i].size_generic = requested.size_generic;
    char line[200];
    std::snprintf(line, sizeof line, ": %s %.1f us (default %.1f us, %zu variants)",
                  describe(vs[best_v]).c_str(), best * 1e3, first * 1e3, distinct[i].size());
    result.report.push_back(k.name + line);
    std::filesystem::path path = autotune_entry(cache_dir, keys[i]);
    runtime::make_dirs(path.parent_path());
    runtime::write_file_atomic(path, "cuda " + std::to_string(vs[best_v].cuda_row_vectors) + " " +
                                         (vs[best_v].cuda_row_prefetch ? "1" : "0") + " " +
                                         (vs[best_v].cuda_row_one_wave ? "1" : "0") + "\n");
  }
  // A kernel of an earlier one's text (another layer) takes its winner.
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    if (keys[i].empty() || std::find(todo.begin(), todo.end(), i) != todo.end()) continue;
    auto it = first_of_key.find(codes[0].kernels[i].key);
    if (it == first_of_key.end() || it->second == i) continue;
    if (std::find(todo.begin(), todo.end(), it->second) == todo.end()) continue;
    result.per_kernel[i] = result.per_kernel[it->second];
    result.report.push_back(p.kernels[i].name + ": " + describe(result.per_kernel[i]) + " (as " +
                            p.kernels[it->second].name + ")");
  }
  return result;
}

}  // namespace ignis::compiler
