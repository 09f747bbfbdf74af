"""Fuzz repro (aot_eager): mismatch:stdout

Seed 95072, shrunk (found by the `view_write` kind): t2 = a.transpose(0, 1) under
no_grad, a break, then a graph that writes t2's data through t2.detach() and takes no
gradient to t2. Recording the compiled node asked for the edge of every input that
requires grad; t2, a no-grad view made stale by the write, refused: the compiled call
raised there, before the next print, where eager raises only at the later t2 + t2.
The node now takes no edge to an input the joint graph gives no gradient.

Run: python3 stale_no_grad_view_input_without_gradient.py  (prints the mismatch; exit status 1 while it reproduces).
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
    with torch.no_grad():
        t1 = a.amin(1, keepdim=True)
        t2 = a.transpose(0, 1)
    print('n', t2.numel() + k)
    t3 = b * 2
    t2.detach().unsqueeze(0).squeeze(0).fill_(k)
    print('n', t1.numel() + k)
    t4 = t2 + t2
    return (t3, t4)

CALLS = [dict(R=5, C=4, dtype='float32', grad=True, k=2, seed=312, mode='compiled'),
         dict(R=4, C=5, dtype='float32', grad=False, k=1, seed=3, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
