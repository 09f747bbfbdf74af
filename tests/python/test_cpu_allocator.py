"""The CPU caching allocator (src/ignis/core/cpu_allocator.h) through ignis.cpu:
counters move as tensors are made and dropped, freed blocks are reused, the
cache stays under its limit, and results do not depend on reused memory.
Environment switches are checked in subprocesses (they are read once)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis

MiB = 1 << 20
CONFIG = ignis._C._cpu_allocator_config()
CACHING = CONFIG["caching"]
needs_cache = pytest.mark.skipif(not CACHING or CONFIG["cache_limit"] < 16 * MiB,
                                 reason="IGNIS_CPU_ALLOCATOR=malloc or a cache limit under 16 MiB")

KEYS = {
    "allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
    "reserved_bytes.all.peak", "cached_bytes.all.current",
    "cached_blocks.all.current", "num_cache_hits", "num_cache_misses", "num_cache_evictions",
    "num_alloc_retries", "num_ooms",
}


def test_memory_stats_keys_and_invariants():
    s = ignis.cpu.memory_stats()
    assert set(s) == KEYS
    assert list(s) == sorted(s)
    assert all(isinstance(v, int) and v >= 0 for v in s.values())
    assert s["reserved_bytes.all.current"] == (s["allocated_bytes.all.current"]
                                               + s["cached_bytes.all.current"])
    assert ignis.cpu.memory_allocated() == s["allocated_bytes.all.current"]
    assert ignis.cpu.memory_reserved() == s["reserved_bytes.all.current"]


def test_counters_follow_tensors():
    before = ignis.cpu.memory_allocated()
    x = ignis.empty(MiB, dtype=ignis.float32)  # 4 MiB: a size class of its own
    assert ignis.cpu.memory_allocated() == before + 4 * MiB
    assert ignis.cpu.max_memory_allocated() >= before + 4 * MiB
    v = x[10:20]  # a view holds the same block
    del x
    assert ignis.cpu.memory_allocated() == before + 4 * MiB
    del v
    assert ignis.cpu.memory_allocated() == before
    ignis.cpu.reset_peak_memory_stats()
    assert ignis.cpu.max_memory_allocated() == ignis.cpu.memory_allocated()
    assert ignis.cpu.max_memory_reserved() == ignis.cpu.memory_reserved()


@needs_cache
def test_freed_block_is_reused_and_empty_cache_releases():
    x = ignis.empty(3 * MiB // 4, dtype=ignis.float32)  # 3 MiB
    ptr = x.data_ptr()
    s0 = ignis.cpu.memory_stats()
    del x
    s1 = ignis.cpu.memory_stats()
    assert s1["cached_bytes.all.current"] == s0["cached_bytes.all.current"] + 3 * MiB
    assert s1["cached_blocks.all.current"] == s0["cached_blocks.all.current"] + 1
    assert s1["reserved_bytes.all.current"] == s0["reserved_bytes.all.current"]
    y = ignis.empty(3 * MiB // 8, dtype=ignis.float64)  # same bytes, another dtype
    assert y.data_ptr() == ptr
    assert ignis.cpu.memory_stats()["num_cache_hits"] == s1["num_cache_hits"] + 1
    del y
    ignis.cpu.empty_cache()
    s2 = ignis.cpu.memory_stats()
    assert s2["cached_bytes.all.current"] == 0
    assert s2["cached_blocks.all.current"] == 0
    assert s2["reserved_bytes.all.current"] == s2["allocated_bytes.all.current"]


def test_small_tensors_bypass_the_cache():
    s0 = ignis.cpu.memory_stats()
    for _ in range(100):
        ignis.ones(1000) + 1
    s1 = ignis.cpu.memory_stats()
    assert s1["num_cache_hits"] == s0["num_cache_hits"]
    assert s1["num_cache_misses"] == s0["num_cache_misses"]
    assert s1["allocated_bytes.all.current"] == s0["allocated_bytes.all.current"]


def test_reserved_bytes_stay_bounded_over_many_steps():
    limit = 4 * MiB
    old = ignis._C._cpu_set_cache_limit(limit)
    try:
        rng = np.random.default_rng(0)
        ignis.cpu.reset_peak_memory_stats()
        base = ignis.cpu.memory_reserved()
        for step in range(1000):
            # A step: three live tensors of varying sizes (16 KiB .. 2 MiB), dropped at the end.
            a = ignis.ones(int(rng.integers(4 << 10, 1 << 19)))
            b = a * 2
            c = ignis.empty(int(rng.integers(4 << 10, 1 << 19)))
            s = ignis.cpu.memory_stats()
            assert s["cached_bytes.all.current"] <= limit
            live = a.numel() * 4 + b.numel() * 4 + c.numel() * 4
            # Blocks are at most 25% larger than asked for.
            assert s["reserved_bytes.all.current"] - base <= 1.25 * live + limit
            del a, b, c
        s = ignis.cpu.memory_stats()
        assert s["cached_bytes.all.current"] <= limit
        assert s["reserved_bytes.all.peak"] - base <= 1.25 * 3 * 2 * MiB + limit
        if CACHING:
            assert s["num_cache_hits"] > 0 and s["num_cache_evictions"] > 0
    finally:
        ignis._C._cpu_set_cache_limit(old)


def test_results_do_not_depend_on_reused_blocks():
    rng = np.random.default_rng(1)
    for n in (300_000, 1 << 20, 3 << 20):  # 1.1 MiB, 4 MiB, 12 MiB of float32
        xn = rng.standard_normal(n).astype(np.float32)
        yn = rng.standard_normal(n).astype(np.float32)
        for _ in range(3):
            junk = ignis.full((n,), 7.0)
            del junk  # a block full of 7s goes back to the cache
            z = ignis.zeros(n)
            assert not z.numpy().any()
            x, y = ignis.from_numpy(xn), ignis.from_numpy(yn)
            np.testing.assert_array_equal((x + y).numpy(), xn + yn)
            np.testing.assert_allclose(x.exp().numpy(), np.exp(xn), rtol=1e-6)
            assert (ignis.empty(n).fill_(1.5).numpy() == 1.5).all()


@needs_cache
def test_failed_allocation_empties_the_cache_and_raises():
    keep = ignis.empty(MiB)
    del keep  # something in the cache
    before = ignis.cpu.memory_stats()
    with pytest.raises(RuntimeError, match="CPU out of memory"):
        ignis.empty(1 << 58, dtype=ignis.float32)  # an exabyte
    after = ignis.cpu.memory_stats()
    assert after["num_alloc_retries"] == before["num_alloc_retries"] + 1
    assert after["num_ooms"] == before["num_ooms"] + 1
    assert after["cached_blocks.all.current"] == 0


def _run(code, **env):
    tests_dir = str(Path(__file__).resolve().parent)
    prog = f"import sys; sys.path.insert(0, {tests_dir!r}); import _checkout, ignis\n" + code
    return subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, **env))


def test_environment_switches():
    r = _run("x = ignis.empty(1 << 20); del x\n"
             "print(ignis._C._cpu_allocator_config()['caching'],"
             " ignis.cpu.memory_stats()['cached_blocks.all.current'])",
             IGNIS_CPU_ALLOCATOR="malloc")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "0"]
    r = _run("print(ignis._C._cpu_allocator_config()['cache_limit'])",
             IGNIS_CPU_ALLOCATOR="caching", IGNIS_CPU_CACHE_LIMIT_MB="8")
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == 8 * MiB
    r = _run("ignis.ones(1 << 20)", IGNIS_CPU_ALLOCATOR="jemalloc")
    assert r.returncode != 0 and "IGNIS_CPU_ALLOCATOR must be" in r.stderr
    r = _run("ignis.ones(1 << 20)", IGNIS_CPU_CACHE_LIMIT_MB="lots")
    assert r.returncode != 0 and "IGNIS_CPU_CACHE_LIMIT_MB must be" in r.stderr


def test_fork_while_another_thread_allocates():
    # The allocator's mutex is held across fork() (pthread_atfork), so a child
    # never inherits it locked by a thread it does not have. Under the GIL this
    # rarely races; it checks that parent and child both go on allocating.
    code = """
import os, threading
stop = False
def churn():
    while not stop:
        x = ignis.empty(1 << 20)
        del x
t = threading.Thread(target=churn)
t.start()
for _ in range(20):
    pid = os.fork()
    if pid == 0:
        y = ignis.empty(3 << 20)
        del y
        os._exit(0 if ignis.cpu.memory_allocated() >= 0 else 1)
    assert os.waitpid(pid, 0)[1] == 0
stop = True
t.join()
print("ok")
"""
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


# Rounds of eight 512 KiB tensors (each under min_cached_size: from malloc's
# heap) made, written and dropped together, as a compiled step drops its
# temporaries; prints the minor page faults of the rounds after the first two.
_HEAP_ROUNDS = """
import resource
def rounds(n):
    for _ in range(n):
        ts = [ignis.empty(1 << 17).fill_(1.0) for _ in range(8)]
        del ts
rounds(2)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rounds(20)
print(ignis._C._cpu_allocator_config()['malloc_tuned'],
      resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap (Linux)")
def test_freed_small_blocks_stay_warm_in_mallocs_heap():
    # Note [Keeping malloc's heap]: with glibc's default thresholds each
    # round gave its 4 MiB back to the kernel and faulted it in again (about
    # 1000 faults a round); kept, later rounds fault nothing new.
    r = _run(_HEAP_ROUNDS)
    assert r.returncode == 0, r.stderr
    tuned, faults = r.stdout.split()
    if tuned != "True":
        pytest.skip("not glibc, or its malloc is tuned from the environment")
    assert int(faults) < 200, f"{faults} minor page faults in 20 rounds of 4 MiB"
    # The user's own settings win: nothing is changed then.
    r = _run(_HEAP_ROUNDS, MALLOC_TRIM_THRESHOLD_="131072")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "False"
    r = _run(_HEAP_ROUNDS, IGNIS_CPU_ALLOCATOR="malloc")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "False"
