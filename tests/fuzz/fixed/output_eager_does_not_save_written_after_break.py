"""Fuzz repro (aot_eager): mismatch:backward-exception

Seed 71362, shrunk: an output no formula saves (v2 feeds sin through v2 * 1.0)
was saved to recompute from; the program wrote into it after a graph break:
the compiled backward raised where eager's does not.

Run: python3 output_eager_does_not_save_written_after_break.py  (prints the mismatch; exit status 1 while it reproduces).
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
    v2 = b + 1
    acc = (v2 * 1.0 + 1).sin()
    print(k)
    v2.add_(-0.25)
    return [acc]

CALLS = [dict(R=3, C=6, dtype='float32', grad=True, k=3, seed=959, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
