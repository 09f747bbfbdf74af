"""Fuzz repro (aot_eager): mismatch:backward-exception

call 0: backward: compiled ('raised', 'RuntimeError') (one of the variables needed for gradient computation has been modified by an inplace operation: [ignis.float32, [4, 5]] is at version 1; expected version 0 instead (a tensor saved by a compiled graph)); eager ('list', [('tensor', 'ignis.float32', (4, 5), False, array([[ 5.41715670e+00, -2.27928715e+01, -9.01699364e-01,
        -4.57360172e+00, -9.77178395e-01],
       [-2.32217026e+00,  1.43810349e+01,  6.65981472e-01,
        -2.87474036e+00,  2.45207882e+00],
       [-1.05225468e+00, -1.01425610e-02,  1.32177532e+00,
         1.72485638e+01, -3.72901976e-01],
       [ 6.39176846e+00, -4.51351285e-01, -1.61289477e+00,
        -1.16838992e+00,  5.40049648e+00]])), ('tensor', 'ignis.float32', (4, 5), False, array([[ 1.78894579, -1.55763924,  1.39034534,  1.35142791,  2.2665627 ],
       [ 0.31809875, -0.92070585,  0.71913975, -0.84965384,  0.76862842],
       [-0.28815305,  0.82508183, -1.77102172, -0.00909611,  0.01203454],
       [-0.19790195,  0.44768357,  0.88924277, -0.15813211,  0.34662542]]))]) (None)

Run: python3 aot_eager_seed72063_mismatch-backward-exception.py  (prints the mismatch; exit status 1 while it reproduces).
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
    buf.t()[1].add_(1.0)
    t1 = a * (a.shape[0] + a.shape[1] * k) / a.numel()
    t2 = a.sigmoid()
    n3 = a.shape[0] * 2 + k
    t4 = t2 * n3 - n3 // 2
    print(f'{k}: {t1.shape[-1]} {len(g_log)}')
    t5 = t4.to(torch.float64).mul(1.5).to(t4.dtype)
    if a.requires_grad:
        v6 = b + 1
    else:
        v6 = b * 2
    s7 = v6.sum().item()
    with torch.no_grad():
        with torch.no_grad():
            t8 = t5.sigmoid()
    n9 = a.shape[0] * 2 + k
    t10 = a * n9 - n9 // 2
    t11 = sum(h_pair(t1, buf, k > 2))
    print(f'{k}: {t11.shape[-1]} {len(g_log)}')
    print(f'{k}: {t1.shape[-1]} {len(g_log)}')
    t2.sub_(v6)
    n12 = a.numel() % 7
    t13 = t11 * n12 - n12 // 2
    return [v6, t13, s7]

CALLS = [
    dict(R=4, C=5, dtype='float32', grad=True, k=3, seed=451, mode='compiled'),
    dict(R=3, C=6, dtype='float32', grad=True, k=3, seed=378, mode='compiled'),
    dict(R=3, C=6, dtype='float32', grad=False, k=2, seed=556, mode='compiled'),
    dict(R=3, C=6, dtype='float32', grad=False, k=1, seed=745, mode='compiled'),
    dict(R=5, C=4, dtype='float32', grad=False, k=2, seed=689, mode='compiled'),
]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
