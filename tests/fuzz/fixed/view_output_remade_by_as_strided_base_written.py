"""Fuzz repro (aot_eager): mismatch:backward-exception

Seed 74448, hand-reduced: buf gets history (buf.sub_(b)), a .item() break, then the
second graph returns t3 = buf[:, :] and writes into buf through another view. The
runtime remakes t3 as buf.as_strided(...) (a view output of an input), and
as_strided's formula version-checked its saved input, which the write moved: the
compiled backward raised where eager's (slice saves no tensor) did not. as_strided's
formula now reads only the input's geometry, as torch's saves only that.

Run: python3 view_output_remade_by_as_strided_base_written.py  (prints the mismatch; exit status 1 while it reproduces).
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
    buf.sub_(b * 2)
    s1 = buf.amax().item()
    t2 = a * k
    t3 = buf[:, :]
    buf[-1].copy_(t3[0])
    return {'t2': t2, 't3': t3, 's1': s1}

CALLS = [dict(R=4, C=5, dtype='float32', grad=True, k=2, seed=0, mode='compiled'),
         dict(R=6, C=6, dtype='float32', grad=True, k=3, seed=197, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
