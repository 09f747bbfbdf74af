"""Fuzz repro (aot_eager): mismatch:grads

Seed 71758, hand-reduced: t1 = a[:, -1] leaves the first graph (a .item() break) as a
view of the leaf a, and the second graph gets both; it reads t1, then writes a under
no_grad. Traced as a view of a's fake, t1 went stale at the write, and the trace took
its gradient at the edge regenerated then, which nothing reached: t1 * 2 gave a no
gradient (**wrong gradients**). The trace now takes its inputs' gradient edges before
the function runs. Seed 90043 (the same with the view made by unsqueeze/squeeze) also
raised "a view of a leaf Variable ... in-place": the view input was written back on
its own besides its base.

Run: python3 view_input_base_written_under_no_grad.py  (prints the mismatch; exit status 1 while it reproduces).
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
    t1 = a[:, -1]
    w2 = a.unsqueeze(0).squeeze(0)
    s3 = b.sum().item()
    t4 = t1 * 2.0
    with torch.no_grad():
        a.mul_(0.9)
    t5 = w2 * -0.5 + 1
    return [t4, t5, s3]

CALLS = [dict(R=3, C=6, dtype='float32', grad=True, k=2, seed=974, mode='compiled'),
         dict(R=4, C=5, dtype='float32', grad=True, k=1, seed=34, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
