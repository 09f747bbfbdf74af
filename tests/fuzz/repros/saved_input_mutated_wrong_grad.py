"""Fuzz repro (aot_eager): mismatch:grads

call 0: grads[1]: values differ at 12 of 12 elements
  compiled: [[-1.64459 -1.19557 -1.36067 -0.12653]
 [-1.75102 -0.18099 -0.88501  0.84292]
 [ 0.74683  1.32444  0.08038 -0.00947]]
  eager:    [[-1.05491 -1.30179 -1.088   -0.25051]
 [-2.30894 -0.17362 -0.54806  0.837  ]
 [ 0.95678  1.29164  0.1996  -0.02204]]

Run: python3 saved_input_mutated_wrong_grad.py  (prints the mismatch; exit status 1 while it reproduces).
Each call gets a, b, buf: (R, C) normal tensors from `seed`, a and b requiring grad
when `grad`; k an int (tests/fuzz/runner.py, make_inputs); `mode` says whether the
compiled run calls f compiled or eagerly.
"""
import sys
from pathlib import Path
sys.path.insert(0, str(next((p for p in Path(__file__).resolve().parents
                             if (p / "tests" / "fuzz" / "runner.py").is_file()), '/work/wt-fuzz')))
from tests.fuzz.runner import repro_main  # noqa: E402  (also selects the checkout's ignis)

BACKEND = 'aot_eager'
PROGRAM = r'''
import ignis as torch

def f(a, b, buf, k):
    t = b.tanh()
    print('break')
    with torch.no_grad():
        b.add_(0.5)
    return t

CALLS = [dict(R=3, C=4, dtype='float32', grad=True, k=1, seed=1, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
