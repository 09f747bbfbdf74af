"""Fuzz repro (inductor, cuda): mismatch:grads

Seed 4522223 on the fake CUDA driver, which runs a kernel's blocks with one thread, so
the GPU's streaming-row path: t7 = t3.amax(dim=1) and its backward's mask (t3 == amax)
were one row kernel that also stored t8 over t3's dead input buffer (results written in
place), while the mask's pass recomputed t3 -- a value spilled to the row scratch, which a
streaming row has not -- from that buffer after t8 overwrote it: no element equalled the
max and every gradient of a was NaN. The memory plan no longer writes over a buffer that
a spilling loop loads (memory_plan.cpp, rewrites_element_for_element).

Run: python3 spilled_value_recomputed_after_write_in_place.py  (prints the mismatch; exit status 1 while it reproduces).
Each call gets a, b, buf: (R, C) normal tensors from `seed`, a and b requiring grad
when `grad`; k an int (tests/fuzz/runner.py, make_inputs); `mode` says whether the
compiled run calls f compiled or eagerly.
"""
import sys
from pathlib import Path
sys.path.insert(0, str(next((p for p in Path(__file__).resolve().parents
                             if (p / "tests" / "fuzz" / "runner.py").is_file()), '/work/main')))
from tests.fuzz.runner import repro_main  # noqa: E402  (also selects the checkout's ignis)

BACKEND = 'inductor'
DEVICE = 'cuda'
KNOBS = {}  # ignis._inductor.config settings of the compiled run
PROGRAM = r'''
import ignis as torch
F = torch.nn.functional

g_count = 0
g_log = []
g_state = {'calls': 0}
g_scale = 1.0
g_acc = torch.zeros(())


class Box:
    def __init__(self):
        self.n = 0
        self.items = []


g_box = Box()

def h_count(x, n=1):
    global g_count
    g_count += n
    return x + g_count

def f(a, b, buf, k):
    global g_count
    first, *rest = [a, a, a * 2]
    t1 = first * len(rest)
    t2 = (b * 4).to(torch.int64).to(b.dtype)
    t3 = torch.stack([t1.sin() + j for j in (0.5, 1.5)]).mean(0)
    t4 = (t1 > 0).float() * t1
    n5 = len(a) - 1 + k // 2
    t6 = t4 * n5 - n5 // 2
    buf.t()[1].add_(1.0)
    t7 = t3.amax(dim=1)
    t8 = h_count(t2)
    t9 = buf + b
    c10 = [t8, buf]
    c10.append(c10[0] * k)
    t11 = torch.stack(c10).amax(0)
    n12 = max(k, a.shape[1]) - min(k, 2)
    t13 = t8 * n12 - n12 // 2
    return [t2, t7, t13]

CALLS = [
    dict(R=4, C=5, dtype='float32', grad=True, k=4, seed=416, mode='compiled'),
    dict(R=4, C=5, dtype='float32', grad=True, k=3, seed=143, mode='eager'),
    dict(R=4, C=5, dtype='float32', grad=True, k=4, seed=836, mode='compiled'),
]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND, DEVICE, KNOBS)
