#include "ignis/runtime/cpu_info.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ignis::runtime {

namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\n");
  size_t e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The value of the first "key : value" line of /proc/cpuinfo whose key is one
// of `keys`, "" when there is none.
std::string proc_cpuinfo_field(std::initializer_list<const char*> keys) {
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return "";
  std::string result;
  char line[4096];
  while (result.empty() && std::fgets(line, sizeof(line), f)) {
    std::string l(line);
    size_t colon = l.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(l.substr(0, colon));
    for (const char* k : keys)
      if (key == k) result = trim(l.substr(colon + 1));
  }
  std::fclose(f);
  return result;
}

#if defined(__x86_64__) || defined(__i386__)

// Which register state the OS saves on context switch (XCR0): a CPU may have
// AVX-512 while the kernel leaves its registers off, and then using them
// faults. Only meaningful when cpuid reports OSXSAVE.
uint64_t xcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t(edx) << 32) | eax;
}

CpuInfo detect() {
  CpuInfo info;
  info.arch = "x86_64";
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return info;
  const bool osxsave = c & (1u << 27);
  const uint64_t xcr = osxsave ? xcr0() : 0;
  const bool os_avx = (xcr & 0x6) == 0x6;               // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr & 0xe0) == 0xe0;  // opmask, ZMM0-15 high, ZMM16-31
  const bool sse4_2 = c & (1u << 20), avx = (c & (1u << 28)) && os_avx;
  const bool fma = (c & (1u << 12)) && os_avx, f16c = (c & (1u << 29)) && os_avx;

  const unsigned a1 = a, c1 = c, d1 = d;  // leaf 1's EBX holds the core's APIC id: left out
  unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0, c81 = 0, d81 = 0;
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b7, c7, d7);
    unsigned x, y, z;
    __cpuid_count(7, 1, a71, x, y, z);
  }
  if (__get_cpuid_max(0x80000000, nullptr) >= 0x80000001) {
    unsigned x, y;
    __get_cpuid(0x80000001, &x, &y, &c81, &d81);
  }
  char sig[200];
  std::snprintf(sig, sizeof(sig),
                "cpuid1=%08x,%08x,%08x cpuid7=%08x,%08x,%08x cpuid7.1=%08x cpuid80000001=%08x,%08x "
                "xcr0=%llx",
                a1, c1, d1, b7, c7, d7, a71, c81, d81, static_cast<unsigned long long>(xcr));
  info.signature = sig;
  auto add = [&](bool present, const char* name) {
    if (present) info.features.emplace_back(name);
  };
  add(sse4_2, "sse4_2");
  add(avx, "avx");
  add(avx && (b7 & (1u << 5)), "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  const bool avx512f = os_avx512 && (b7 & (1u << 16));
  add(avx512f, "avx512f");
  add(avx512f && (b7 & (1u << 17)), "avx512dq");
  add(avx512f && (b7 & (1u << 30)), "avx512bw");
  add(avx512f && (b7 & (1u << 31)), "avx512vl");
  add(avx512f && (a71 & (1u << 5)), "avx512_bf16");
  add(avx512f && (d7 & (1u << 23)), "avx512_fp16");
  info.vector_bits = avx512f ? 512 : (avx ? 256 : 128);

  // The brand string: leaves 0x80000002..4, 16 bytes each.
  if (__get_cpuid_max(0x80000000, nullptr) >= 0x80000004) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned r[4];
      __get_cpuid(0x80000002 + leaf, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * leaf, r, 16);
    }
    info.model = trim(brand);
  }
  if (info.model.empty()) info.model = proc_cpuinfo_field({"model name"});
  return info;
}

#else

CpuInfo detect() {
  CpuInfo info;
#if defined(__aarch64__)
  info.arch = "aarch64";
#else
  info.arch = "unknown";
#endif
  info.model = proc_cpuinfo_field({"model name", "CPU part"});
  std::string raw = proc_cpuinfo_field({"Features", "flags"});
  info.signature = raw + " implementer=" + proc_cpuinfo_field({"CPU implementer"}) +
                   " part=" + proc_cpuinfo_field({"CPU part"});
  std::string flags = " " + raw + " ";
  for (const char* f : {"asimd", "asimdhp", "bf16", "sve", "sve2"})
    if (flags.find(std::string(" ") + f + " ") != std::string::npos)
      info.features.emplace_back(f);
  // NEON is 128 bits; an SVE width is only known at run time, so the
  // generated code does not count on more.
  info.vector_bits = 128;
  return info;
}

#endif

}  // namespace

bool CpuInfo::has(const std::string& feature) const {
  return std::find(features.begin(), features.end(), feature) != features.end();
}

std::string CpuInfo::describe() const {
  std::string s = arch + " " + model;
  for (const auto& f : features) s += " " + f;
  return s + " [" + signature + "]";
}

const CpuInfo& cpu_info() {
  static const CpuInfo info = detect();
  return info;
}

}  // namespace ignis::runtime
