"""Fuzz repro (aot_eager): mismatch:grads

call 0: grads[0]: values differ at 3 of 12 elements
  compiled: [[-1.6355  -0.9103  -1.28747 -0.09299]
 [-1.4278  -0.17039 -0.82252  0.74692]
 [ 0.89396  1.33247  0.76716 -0.0453 ]]
  eager:    [[-3.27099 -0.9103  -1.28747 -0.09299]
 [-2.8556  -0.17039 -0.82252  0.74692]
 [ 1.78792  1.33247  0.76716 -0.0453 ]]

Run: python3 inplace_on_view_of_graph_output_wrong_grad.py  (prints the mismatch; exit status 1 while it reproduces).
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
    t3 = a.sin()
    print('break')
    t3[:, 0].mul_(2)
    return t3 + 1

CALLS = [dict(R=3, C=4, dtype='float32', grad=True, k=1, seed=1, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
