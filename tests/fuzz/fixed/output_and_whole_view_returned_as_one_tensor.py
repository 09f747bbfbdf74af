"""Fuzz repro (aot_eager): mismatch:grads

call 0: grads[1]: expected a tensor, got None

Run: python3 aot_eager_seed301245_mismatch-grads.py  (prints the mismatch; exit status 1 while it reproduces).
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

def h_pair(x, y, flip=False):
    if flip:
        return y - x, x * y
    return x + y, (x - y).abs()

def f(a, b, buf, k):
    t1 = -b
    t2 = t1.contiguous().view(-1).view(t1.shape)
    t2[-1, :] = 0.75
    if t1.sum() > 0:
        n4 = int(a.shape[-1] / 2) + (k ** 2)
        t5 = t1 * n4 - n4 // 2
        t6 = torch.stack([t5, buf]).sum(0)
        v3 = torch.maximum(t2, a)
    else:
        s7 = b.mean().item()
        v3 = torch.maximum(t2, t1)
    t8 = v3 * (v3.shape[0] + v3.shape[1] * k) / v3.numel()
    t9 = sum(h_pair(b, a, k > 2))
    s10 = b.mean().item()
    w11 = t8.unsqueeze(0).squeeze(0)
    print('w', w11.shape, bool(t8.sum() > 0))
    t8.clamp_(max=1.5)
    t12 = w11 * k + 1
    with torch.no_grad():
        s13 = b.mean().item()
    buf[:, 1] = k
    t14 = torch.sin(t12)
    t15 = t12 / (t1 * t1 + 1.0)
    return t15

CALLS = [
    dict(R=3, C=6, dtype='float32', grad=True, k=4, seed=959, mode='compiled'),
    dict(R=3, C=6, dtype='float32', grad=True, k=2, seed=747, mode='compiled'),
    dict(R=3, C=6, dtype='float32', grad=False, k=4, seed=153, mode='compiled'),
    dict(R=3, C=6, dtype='float64', grad=False, k=2, seed=513, mode='compiled'),
    dict(R=3, C=6, dtype='float64', grad=True, k=4, seed=670, mode='compiled'),
]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
