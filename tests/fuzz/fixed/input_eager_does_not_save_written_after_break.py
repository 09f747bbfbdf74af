"""Fuzz repro (aot_eager): mismatch:backward-exception

Seed 71182, shrunk: tanh saves its result, not its input; the partitioner
saved the input a (to recompute tanh in the backward), which the program then
wrote into: the compiled backward raised where eager's does not.

Run: python3 input_eager_does_not_save_written_after_break.py  (prints the mismatch; exit status 1 while it reproduces).
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
    t1 = a.tanh() * 0.5 + b
    print(k)
    with torch.no_grad():
        a.mul_(0.9)
    return [t1]

CALLS = [dict(R=3, C=6, dtype='float32', grad=True, k=3, seed=959, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
