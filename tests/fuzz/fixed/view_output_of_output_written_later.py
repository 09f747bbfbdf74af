"""Fuzz repro (aot_eager): mismatch:grads

Seed 73511, shrunk: t3 = t2.t() and t2 leave the first graph (a .item() break) as its
outputs; the second writes into t2 (t2.sub_(b)). In eager, t3 is t2's view and the write
rebases its history (the gradient through t3 is 2 - 1 = 1); the compiled t3 was an
output of its own, untouched by the write (2: **wrong gradients**). An output viewing
another output is now remade as that output's view (aot::OutputInfo::aliased_output).

Run: python3 view_output_of_output_written_later.py  (prints the mismatch; exit status 1 while it reproduces).
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

def f(a, b, buf, k):
    t2 = b * 2
    t3 = t2.t()
    s = b.sum().item()
    t2.sub_(b)
    return (t3, s)

CALLS = [dict(R=5, C=4, dtype='float64', grad=True, k=1, seed=276, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
