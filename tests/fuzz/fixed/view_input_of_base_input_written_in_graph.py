"""Fuzz repro (aot_eager): mismatch:grads

Seed 78888, shrunk: t4 = buf[:, :] leaves the first graph (a .item() break) as an
autograd view of buf, and the second graph gets both; it writes a[0] into buf's last
row, then multiplies the view. The trace made the two inputs unrelated fakes, so the
product took no gradient to a (**wrong gradients**). Fixed: an input that is an autograd
view of another input is traced as that view of the base's fake (and the inputs'
gradient edges are taken before the trace runs: view_input_base_written_under_no_grad.py).

Run: python3 view_input_of_base_input_written_in_graph.py  (prints the mismatch; exit status 1 while it reproduces).
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
    t1 = b.sum(0, keepdim=True)
    t4 = buf[:, :]
    s5 = b.amax().item()
    buf[-1].copy_(a[0])
    t8 = t4 * t1
    return (t4, t8, s5)

CALLS = [dict(R=5, C=4, dtype='float32', grad=True, k=2, seed=50, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
