"""Compiled functions and threads, on the real backends (test_capture_hook.py
covers the capture hook itself with a recording backend).

- one compiled function called from several threads at once gives eager's
  results and gradients on every call;
- threads that compile at the same time (the first calls of one compiled
  function, on shapes that each need their own graph, and separate compile()
  calls of one function) give eager's results too.

sys.setswitchinterval(1e-6) makes threads switch inside tracing and the
backends' Python, where a race would show.
"""
import sys
import threading

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn.functional as F

BACKENDS = ["eager", "aot_eager", "inductor"]


def f(a, b, buf):
    t = F.gelu(a @ b.t()) * 2
    buf.add_(1.0)
    if t.sum() > 0:  # a data-dependent branch: a graph break
        t = t + buf.sum()
    return t.tanh(), (a * b).sum(dim=1)


def inputs(n, seed):
    g = np.random.default_rng(seed)  # each thread its own generator
    a = ignis.tensor(g.standard_normal((n, 4)).astype(np.float32), requires_grad=True)
    b = ignis.tensor(g.standard_normal((n, 4)).astype(np.float32), requires_grad=True)
    return a, b, ignis.zeros(n, 4)


def eager_result(n, seed):
    a, b, buf = inputs(n, seed)
    outs = f(a, b, buf)
    sum(o.sum() for o in outs).backward()
    return [o.detach().numpy() for o in outs] + [buf.numpy(), a.grad.numpy(), b.grad.numpy()]


def compiled_result(cf, n, seed):
    a, b, buf = inputs(n, seed)
    outs = cf(a, b, buf)
    sum(o.sum() for o in outs).backward()
    return [o.detach().numpy() for o in outs] + [buf.numpy(), a.grad.numpy(), b.grad.numpy()]


def same(got, want):
    assert len(got) == len(want)
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


def run_threads(work, n):
    errors = []

    def guarded(i):
        try:
            work(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        assert not any(th.is_alive() for th in threads), "a thread hangs"
    finally:
        sys.setswitchinterval(interval)
    if errors:
        raise errors[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_compiled_function_called_from_threads_at_once(backend):
    cf = ignis.compile(f, backend=backend)
    want = {seed: eager_result(3, seed) for seed in range(4)}
    same(compiled_result(cf, 3, 0), want[0])  # compiled before the threads start

    def work(i):
        for k in range(15):
            seed = (i + k) % 4
            same(compiled_result(cf, 3, seed), want[seed])

    run_threads(work, 4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiles_racing_in_threads(backend):
    # One compiled function, first called from every thread at once, each
    # thread with its own shape (its own graphs); and one compile() per thread.
    shared = ignis.compile(f, backend=backend)
    want = {n: eager_result(n, n) for n in range(2, 6)}

    def work(i):
        n = 2 + i
        own = ignis.compile(f, backend=backend)
        for _ in range(3):
            same(compiled_result(shared, n, n), want[n])
            same(compiled_result(own, n, n), want[n])

    run_threads(work, 4)
