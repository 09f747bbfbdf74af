"""Fuzz repro (aot_eager): mismatch:out

Seed 740872 (CPU, found on 2026-12-03 on this VM; it fails on 520169b too), shrunk:
t3 = buf.float() (buf itself), buf[1:].neg_() and a.add_ under no_grad in the same graph,
a graph break, then buf.mul_(a). Eager's t3 is buf and requires grad after the multiply; the
compiled t3 was a detached alias of buf (the written input's output came back fresh from the
functional graph, and an alias that is no view was taken for one without autograd relation).
Fixed: aot::AliasKind::Same, the runtime returns the input itself;
test_aot.py::test_an_output_that_is_an_input_is_returned_as_that_input.

Run: python3 output_that_is_an_input_written_in_graph.py  (prints the mismatch; exit status 1 while it reproduces).
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
    with torch.no_grad():
        a.unsqueeze(0).squeeze(0).add_(1.0)
    t2 = buf.masked_fill(buf < 0.8, 0.25)
    t3 = buf.float()
    buf[1:].neg_()
    w4 = t2.t()[1]
    print('w', w4.shape, bool(t2.sum() > 0))
    t5 = w4 * 2.0 + 1
    c6 = (t5, t5, k)
    p_, q_, n_ = c6
    t7 = p_ * n_ + q_
    buf.mul_(a)
    return {'t3': t3, 't7': t7, 'k': k}
CALLS = [dict(R=5, C=4, dtype='float32', grad=True, k=2, seed=601, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND, DEVICE)
