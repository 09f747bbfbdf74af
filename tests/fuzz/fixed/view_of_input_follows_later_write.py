"""Fuzz repro (aot_eager): mismatch:out

call 0: out[0]: requires_grad False != eager's True

Run: python3 view_of_input_follows_later_write.py  (prints the mismatch; exit status 1 while it reproduces).
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
    t3 = buf.unsqueeze(0).squeeze(0)
    t4 = buf / (a * a + 1.0)
    print('shape', t3.shape, k)
    buf.add_(t4)
    return (t3, a * 2)

CALLS = [dict(R=4, C=5, dtype='float32', grad=True, k=1, seed=255, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
