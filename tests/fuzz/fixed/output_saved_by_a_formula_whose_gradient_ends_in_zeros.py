"""Fuzz repro (aot_eager): mismatch:backward-exception

Seed 374742, shrunk: t1.fill_(k) makes every gradient reaching b zeros; t6 =
t5.square().sqrt() saves t5, an output of the graph, which the program writes
(t5.sub_(a)) after a break. Eager's backward runs SquareBackward and raises
"modified by an inplace operation"; the compiled backward did not: the joint
graph's dead code elimination dropped square's backward (nothing in it reached
b), and the record of what eager's formulas saved named its nodes, so the check
of t5 went with them. The tangents of what eager saves are now resolved on the
whole trace (resolve_tangents in src/ignis/aot/aot.cpp). torch.compile's aot_eager
raises as eager does; its inductor does not.

Run: python3 aot_eager_seed374742_mismatch-backward-exception.py  (prints the mismatch; exit status 1 while it reproduces).
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
F = torch.nn.functional
g_count = 0

def f(a, b, buf, k):
    t1 = F.silu(b)
    t1.fill_(k)
    t4 = t1 * 2
    t5 = (t4 + t1).sin()
    t6 = t5.square().sqrt()
    print('g', g_count)
    t5.sub_(a)
    v15 = t6.tanh()
    t25 = a.sum(0, keepdim=True)
    return [t6, v15, t25]
CALLS = [dict(R=5, C=4, dtype='float32', grad=True, k=4, seed=958, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND, DEVICE)
