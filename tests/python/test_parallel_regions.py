"""OpenMP teams: every parallel region is serial or uses every thread.

libgomp keeps one pool of worker threads sized by the last team; a team
smaller than the one before makes the surplus workers exit, and the next full
team creates them again (a pthread_create each, serially: about 300 us per
region for 15 workers on a 16-core host, which made every step of a small
GPT slower at 16 threads than at 4). kernels/cpu/parallel.h therefore gives
work either one thread or all of them. These tests run ops whose work spans
1 to 16 grains -- eager elementwise ops, reductions, GEMMs, attention and a
generated kernel -- and check that the process's threads are the same ones
afterwards: no worker exited and none was created.
"""
import os

import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn.functional as F

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                                reason="needs Linux's /proc/self/task to list threads")

GRAIN = 32768  # kernels/cpu/parallel.h's kGrain


def threads_now():
    return set(os.listdir("/proc/self/task"))


@pytest.fixture
def four_threads():
    old = ignis.get_num_threads()
    ignis.set_num_threads(4)
    yield
    ignis.set_num_threads(old)


def workloads():
    small = [ignis.randn(n * GRAIN) for n in (1, 2, 3)]  # 1-3 grains: 1-3 threads' worth
    big = ignis.randn(16 * GRAIN)
    a, b = ignis.randn(96, 64), ignis.randn(64, 96)  # a GEMM of a few tasks
    q = ignis.randn(2, 2, 64, 16)  # attention with 4 tasks
    rows = ignis.randn(3, GRAIN)  # a reduction over 3 rows

    def compiled_fn(x):
        return (x * 2 + 1).relu().sum()

    cf = ignis.compile(compiled_fn)

    def run():
        for x in small:
            x.exp()
            cf(x)
        big.exp()
        a @ b
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
        rows.sum(1)
        big.sum()
        cf(big)
    return run


def test_worker_threads_survive_ops_of_every_size(four_threads):
    run = workloads()
    run()  # compiles, and starts the full team
    before = threads_now()
    for _ in range(3):
        run()
    assert threads_now() == before
