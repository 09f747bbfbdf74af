"""Fuzz repro (aot_eager): mismatch:backward-exception

call 0: backward: compiled ('list', [('tensor', 'ignis.float32', (5, 4), False, array([[ 0.39606309,  0.24088584,  0.        ,  0.        ],
       [ 0.        ,  0.65075076,  0.07368041,  0.        ],
       [-0.76303405, -0.        , -0.        ,  0.        ],
       [ 0.15253125, -6.04053831, -0.34372085,  0.        ],
       [ 1.28915906,  0.        ,  0.        ,  0.        ]])), None]) (None); eager ('raised', 'RuntimeError') (one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [5, 4]], which is input 'self' of AmaxBackward0, is at version 1; expected version 0 instead. Hint: the operation that saved it is AmaxBackward0; clone() the tensor before modifying it )

Run: python3 aot_eager_seed72589_mismatch-backward-exception.py  (prints the mismatch; exit status 1 while it reproduces).
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

def h_kw(x, **opts):
    out = x
    for key in sorted(opts):
        out = out + opts[key]
    return out.sin()

def h_pair(x, y, flip=False):
    if flip:
        return y - x, x * y
    return x + y, (x - y).abs()

def f(a, b, buf, k):
    t1 = a.amax(dim=1)
    t2 = t1.tanh()
    t3 = h_pair(a, 0.69, flip=True)[1]
    t4 = h_kw(t1, p=t1, q=k)
    with torch.no_grad():
        a.clamp_(max=2.0)
    t5 = (t3 > 0).float() * t3
    n6 = max(k, a.shape[1]) - min(k, 2)
    t7 = b * n6 - n6 // 2
    t7[0].mul_(2)
    buf.t()[1].add_(1.0)
    print(t2.dtype, t2.dim())
    acc8 = t5 * 1.0
    for i, row in enumerate(a):
        if i == 1:
            break
        acc8 = (acc8 + i).sin()
        if acc8.sum() > 8:
            break
    t9 = t4.unsqueeze(1)
    t10 = torch.where(t9 > 0, t9, t9)
    c11 = (t1, t4, k)
    p_, q_, n_ = c11
    t12 = p_ * n_ + q_
    return {'t1': t1, 'acc8': acc8, 't12': t12}

CALLS = [
    dict(R=5, C=4, dtype='float32', grad=True, k=3, seed=297, mode='compiled'),
    dict(R=5, C=4, dtype='float32', grad=True, k=1, seed=362, mode='compiled'),
    dict(R=5, C=4, dtype='float32', grad=True, k=3, seed=702, mode='compiled'),
    dict(R=5, C=4, dtype='float32', grad=False, k=1, seed=655, mode='compiled'),
]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
