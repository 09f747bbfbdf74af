"""Fuzz repro (aot_eager): mismatch:backward-exception

call 0: backward: compiled ('raised', 'RuntimeError') (one of the variables needed for gradient computation has been modified by an inplace operation: [ignis.float32, [4, 5]] is at version 1; expected version 0 instead (a tensor saved by a compiled graph)); eager ('list', [('tensor', 'ignis.float32', (4, 5), False, array([[-0.91364831,  0.        , -0.43205306,  1.40184224,  0.        ],
       [ 0.86546737,  0.66889381,  0.16109504,  0.        ,  0.        ],
       [-0.56547689,  0.        , -0.1221325 ,  0.        ,  0.        ],
       [ 0.        ,  1.67724025,  0.        ,  1.41937983,  0.        ]])), ('tensor', 'ignis.float32', (4, 5), False, array([[-0.91364831, -0.7670961 , -0.43205306,  1.40184224,  0.804492  ],
       [ 0.86546737,  0.66889381,  0.16109504, -0.83457351,  0.03726636],
       [-0.56547689,  0.79369307, -0.1221325 , -1.3330605 ,  2.1345458 ],
       [-1.66819263,  1.67724025,  0.3123931 ,  1.41937983, -0.68709892]]))]) (None)

Run: python3 aot_eager_seed300293_mismatch-backward-exception.py  (prints the mismatch; exit status 1 while it reproduces).
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

def f(a, b, buf, k):
    w1 = buf[0]
    buf.clamp_(max=1.5)
    t2 = w1 * 2.0 + 1
    t3 = a.masked_fill(a < 0.1, 0.25)
    buf.t()[1].add_(1.0)
    c4 = {'p': a, 'q': a}
    c4['r'] = c4['p'] - c4.get('q', a)
    t5 = c4['r'] * c4['q']
    if bool(t2.amax() > 0.5):
        buf[0] = k
        v6 = torch.stack([b, t3]).sum(0)
    else:
        v6 = a / (t5 * t5 + 1.0)
    t5.mul_(t5)
    with torch.no_grad():
        a.mul_(0.9)
    return {'v6': v6, 'k': k}

CALLS = [
    dict(R=4, C=5, dtype='float32', grad=True, k=2, seed=894, mode='compiled'),
    dict(R=4, C=5, dtype='float32', grad=True, k=3, seed=333, mode='compiled'),
    dict(R=4, C=5, dtype='float32', grad=True, k=2, seed=135, mode='compiled'),
    dict(R=3, C=6, dtype='float32', grad=True, k=4, seed=47, mode='compiled'),
    dict(R=3, C=6, dtype='float32', grad=True, k=0, seed=123, mode='eager'),
]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
