"""Fuzz repro (aot_eager): mismatch:backward-exception

Seed 723884 (found on 2026-12-03 on the GPU machine's host, Python 3.12; it did not reproduce
on Python 3.11 here), the class of 736182 (input_saved_behind_a_fresh_zero_gradient.py) with
fill_ after mm: t4 = v1 @ b.t() saves b, t4.fill_(k), later b.add_(0.1) under no_grad. Eager
raises in the backward (MmBackward's mat2 modified in place); the compiled backward ran.

Run: python3 input_saved_by_mm_behind_fill_gradient.py  (prints the mismatch; exit status 1 while it reproduces).
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

def h_scale(x, y=None, scale=2.0, *rest, **kw):
    out = x * scale
    if y is not None:
        out = out + y
    for r in rest:
        out = out - r
    if kw.get('neg'):
        out = -out
    return out

def f(a, b, buf, k):
    buf.sub_(buf)
    if k > 3:
        raise RuntimeError('k too big')
    v1 = a.contiguous().view(-1).view(a.shape)
    if a.shape[0] > 3:
        t2 = torch.sin(a)
        if len(g_log) > 2:
            v3 = t2 + 1
        else:
            v3 = t2 * 2
        v1 = b * (b.shape[0] + b.shape[1] * k) / b.numel()
    t4 = v1 @ b.t()
    t4.fill_(k)
    print(f'{k}: {buf.shape[-1]} {len(g_log)}')
    t5 = torch.stack([v1, a]).sum(0)
    with torch.set_grad_enabled(k > 2):
        t6 = v1 * 2
        t7 = (t6 + v1).sin()
    n8 = len(a) - 1 + k // 2
    t9 = v1 * n8 - n8 // 2
    if a.sum() > 0:
        t11 = torch.stack([t5.sin() + j for j in (0.5, 1.5)]).mean(0)
        with torch.no_grad():
            b.add_(0.1)
        v10 = t6 @ v1.t()
    else:
        v10 = t4.tanh()
    with torch.no_grad():
        if a.dtype == torch.float64:
            v12 = v1 + 1
        else:
            v12 = v1 * 2
        t13 = h_scale(*[t4, t4])
    t14 = F.relu(b)
    return {'t4': t4, 't6': t6, 't14': t14}

CALLS = [
    dict(R=5, C=4, dtype='float32', grad=False, k=1, seed=420, mode='compiled'),
    dict(R=6, C=6, dtype='float32', grad=False, k=4, seed=861, mode='eager'),
    dict(R=5, C=4, dtype='float32', grad=False, k=1, seed=372, mode='compiled'),
    dict(R=5, C=4, dtype='float32', grad=True, k=3, seed=927, mode='compiled'),
]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND, DEVICE)
