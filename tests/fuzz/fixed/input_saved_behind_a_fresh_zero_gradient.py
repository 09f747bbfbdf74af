"""Fuzz repro (aot_eager): mismatch:backward-exception

Seed 736182 (CPU, found on 2026-12-03 on the GPU machine's host), shrunk: t2 = (a - b) * b
(mul saves b), t2.zero_(), a graph break, then b.mul_(0.9) under no_grad. Eager's engine runs
MulBackward with the zeros zero_'s formula makes and raises (b modified in place); the compiled
backward did not check b: zeros_like(grad) traces as a fresh empty + fill that no tangent flows
into, so the record of b had no tangent. Fixed: a backward node's results depend on the
gradients it ran with (EagerSavedRecorder::applied, src/ignis/aot/aot.cpp);
test_aot.py::test_an_input_saved_behind_a_fresh_zero_gradient_is_checked.

Run: python3 input_saved_behind_a_fresh_zero_gradient.py  (prints the mismatch; exit status 1 while it reproduces).
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
DEVICE = 'cpu'
PROGRAM = r'''
import ignis as torch

def f(a, b, buf, k):
    c1 = {'p': a, 'q': b}
    c1['r'] = c1['p'] - c1.get('q', a)
    t2 = c1['r'] * c1['q']
    t2.zero_()
    s3 = a.amax().item()
    t4 = torch.minimum(t2, a)
    with torch.no_grad():
        b.mul_(0.9)
    s6 = buf.mean().item()
    v9 = t4 + 1
    t15 = a.index_select(0, torch.tensor([0, 0], device=a.device))[:1]
    return (t4, v9, t15, s6)
CALLS = [dict(R=4, C=5, dtype='float32', grad=True, k=2, seed=452, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND, DEVICE)
