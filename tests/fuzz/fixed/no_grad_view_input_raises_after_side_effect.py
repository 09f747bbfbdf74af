"""Fuzz repro (eager): mismatch:globals

Seed 80029, hand-reduced: t3 = a.narrow(1, 0, 1) made under no_grad, a written under
no_grad, then h_count(t3) (a frame of its own) increments g_count and adds to t3. Eager
raises at the add (a no-grad view whose base requiring grad was written) after the
increment. Capture's fake of t3 was a plain tensor, so the add did not raise while
tracing: the graph raised at run time, before the plan replayed the increment (lost).
Capture's fakes of no-grad views are now no-grad views of their base's fake, stale when
the real one is, so the graph breaks before the add, after the increment.

Run: python3 no_grad_view_input_raises_after_side_effect.py  (prints the mismatch; exit status 1 while it reproduces).
Each call gets a, b, buf: (R, C) normal tensors from `seed`, a and b requiring grad
when `grad`; k an int (tests/fuzz/runner.py, make_inputs); `mode` says whether the
compiled run calls f compiled or eagerly.
"""
import sys
from pathlib import Path
sys.path.insert(0, str(next((p for p in Path(__file__).resolve().parents
                             if (p / "tests" / "fuzz" / "runner.py").is_file()), '/work/main')))
from tests.fuzz.runner import repro_main  # noqa: E402  (also selects the checkout's ignis)

BACKEND = 'eager'
PROGRAM = r'''
import ignis as torch

g_count = 0


def h_count(x, n=1):
    global g_count
    g_count += n
    return x + g_count


def f(a, b, buf, k):
    with torch.no_grad():
        t3 = a.narrow(1, 0, 1)
    with torch.no_grad():
        a.mul_(0.9)
    print('n', t3.numel() + k)
    t6 = h_count(t3, n=k)
    return (t6, t3)

CALLS = [dict(R=3, C=6, dtype='float32', grad=True, k=3, seed=763, mode='compiled'),
         dict(R=5, C=4, dtype='float32', grad=False, k=1, seed=852, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
