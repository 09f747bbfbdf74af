// What libgomp's waiting costs: how long a parallel region takes after a serial gap, under
// the OpenMP wait settings in the environment (OMP_WAIT_POLICY, GOMP_SPINCOUNT). During the
// gap workers spin, then sleep; a region after a longer gap than the spin pays their wake.
// Three regions per gap: an empty one, three 15 us steps with barriers, and fixed arithmetic
// (slower only if a core's clock or a late thread slows it). Plain C, no ignis: it measures
// the machine and the OpenMP runtime (docs/benchmarks.md, "libgomp's waiting measured").
//
//   gcc -O2 -fopenmp bench/omp_wait.c -o /tmp/omp_wait
//   /tmp/omp_wait [THREADS]; OMP_WAIT_POLICY=active /tmp/omp_wait 16; GOMP_SPINCOUNT=30000000 ...
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void busy(double us) { double e = now() + us * 1e-6; while (now() < e) {} }
static float buf[64][1024];
int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : omp_get_max_threads();
  cpu_set_t s; sched_getaffinity(0, sizeof s, &s);
  printf("affinity %d cpus, num_procs %d, threads %d, OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s\n",
         CPU_COUNT(&s), omp_get_num_procs(), threads, getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "-",
         getenv("GOMP_SPINCOUNT") ? getenv("GOMP_SPINCOUNT") : "-");
  double gaps[] = {0, 5, 20, 100, 1000, 5000};
  for (int g = 0; g < 6; ++g) {
    int n = gaps[g] >= 1000 ? 200 : 2000;
    double region = 0, work = 0, flops = 0;
    for (int i = 0; i < n; ++i) {
      double a = now();
#pragma omp parallel num_threads(threads)
      {
        int t = omp_get_thread_num();
        for (int j = 0; j < 1024; ++j) buf[t][j] += 1.0f;
      }
      double b = now();
      // A region with ~50 us of work per thread and two barriers inside (a GEMM's shape).
#pragma omp parallel num_threads(threads)
      {
        int t = omp_get_thread_num();
        for (int r = 0; r < 3; ++r) {
          double e = now() + 15e-6; while (now() < e) buf[t][r] += 1.0f;
#pragma omp barrier
        }
      }
      double c = now();
      // Fixed arithmetic per thread (~100-200 us at full clock): slower
      // when a core runs below its clock or a thread starts late.
#pragma omp parallel num_threads(threads)
      {
        int t = omp_get_thread_num();
        volatile float vm = 0.9999f, va = 0.0001f;
        const float m = vm, ad = va;
        float acc[8];
        for (int l = 0; l < 8; ++l) acc[l] = buf[t][l];
        for (int r = 0; r < 100000; ++r)
          for (int l = 0; l < 8; ++l) acc[l] = acc[l] * m + ad;
        float s = 0; for (int l = 0; l < 8; ++l) s += acc[l];
        buf[t][5] += s;
      }
      double d = now();
      flops += d - c;
      region += b - a; work += c - b;
      busy(gaps[g]);
    }
    printf("  gap %6.0f us: empty region %8.2f us, 3x15us+barriers region %8.2f us (ideal 45), "
           "fixed arithmetic %8.2f us\n", gaps[g], region / n * 1e6, work / n * 1e6, flops / n * 1e6);
  }
  // Teams of changing size: a region of all threads after one of a quarter of them
  // (libgomp lets surplus pool threads go when a team shrinks, and makes new ones).
  {
    int n = 2000;
    double big = 0;
    for (int i = 0; i < n; ++i) {
#pragma omp parallel num_threads(threads > 4 ? threads / 4 : 1)
      { buf[omp_get_thread_num()][7] += 1.0f; }
      double a = now();
#pragma omp parallel num_threads(threads)
      { buf[omp_get_thread_num()][6] += 1.0f; }
      big += now() - a;
    }
    printf("  alternating teams of %d and %d: the full team's empty region %8.2f us\n",
           threads > 4 ? threads / 4 : 1, threads, big / n * 1e6);
  }
  return 0;
}
