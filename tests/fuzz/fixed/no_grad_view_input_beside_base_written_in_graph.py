"""Fuzz repro (aot_eager): compiled-raised:RuntimeError

Seed 405889, shrunk: t1 = b[:, :] under no_grad; after a graph break (.item()) t1
enters the next graph beside b; t9 = t1 - t6, then b.clamp_(max=2.0) under no_grad.
Eager's t1 has no gradient edge (a no-grad view requires grad only through its base;
what reaches it is dropped). The trace made t1's fake a leaf that requires grad, so the
joint graph gave it a gradient, and the runtime asked for its edge after the graph had
written b: a stale no-grad view refuses that, and the compiled call raised where eager's
returned. A no-grad view input's fake no longer requires grad of its own
(src/ignis/aot/aot.cpp, the view inputs' loop).

Run: python3 aot_eager_seed405889_compiled-raised-RuntimeError.py  (prints the mismatch; exit status 1 while it reproduces).
Each call gets a, b, buf: (R, C) normal tensors from `seed`, a and b requiring grad
when `grad`; k an int (tests/fuzz/runner.py, make_inputs); `mode` says whether the
compiled run calls f compiled or eagerly.
"""
import sys
from pathlib import Path
sys.path.insert(0, str(next((p for p in Path(__file__).resolve().parents
                             if (p / "tests" / "fuzz" / "runner.py").is_file()), '/work/main')))
from tests.fuzz.runner import repro_main  # noqa: E402  (also selects the checkout's ignis)

BACKEND = 'aot_eager'
DEVICE = 'cpu'
PROGRAM = r'''
import ignis as torch
g_log = []
g_scale = 1.0

def f(a, b, buf, k):
    with torch.no_grad():
        t1 = b[:, :]
    t3 = b * 2
    t4 = (t3 + b).sin()
    s5 = a.amax().item()
    t6 = t3 * g_scale + len(g_log)
    t9 = t1 - t6
    with torch.no_grad():
        b.clamp_(max=2.0)
    t4.add_(b)
    acc11 = t9 * 1.0
CALLS = [dict(R=4, C=5, dtype='float32', grad=True, k=3, seed=809, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND, DEVICE)
