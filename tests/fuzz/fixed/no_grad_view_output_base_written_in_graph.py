"""Fuzz repro (aot_eager): mismatch:stdout

Seed 93448, hand-reduced: t3 = a[:, :] made under no_grad, then a written through
a.detach() in the same graph, which breaks at t2.sub_(t3) (capture's fakes refuse
it: the no-grad view is stale) and returns t3. The runtime remade t3 after the
graph's write, so it was fresh: sub_ ran and the call went on (printing) where
eager raised. A view output whose input the graph wrote after making it is now
made before the graph's writes (aot::OutputInfo::made_before_write).

Run: python3 no_grad_view_output_base_written_in_graph.py  (prints the mismatch; exit status 1 while it reproduces).
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
    t2 = torch.stack([b, a]).sum(0)
    with torch.no_grad():
        t3 = a[:, :]
    w4 = a[0]
    a.detach().t()[1].mul_(0.5)
    t5 = w4 * 2
    t2.sub_(t3)
    print('after', k)
    return (t2, t5)

CALLS = [dict(R=5, C=4, dtype='float32', grad=True, k=3, seed=810, mode='compiled'),
         dict(R=5, C=4, dtype='float32', grad=False, k=0, seed=57, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
