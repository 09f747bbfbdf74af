"""Fuzz repro (aot_eager): mismatch:grads

Seed 103824, shrunk: t10 = t7.unsqueeze(0).squeeze(0) and w15 = t10[:, :] are two views of
the intermediate t7 = b * a; a graph break (a print) makes both outputs of the graph, t7
not. Then t10[0].mul_(2): in eager, t10 and w15 are views of t7, so the write rebases
t7's history and w15's gradient goes through it (row 0 doubled); the compiled node returns
t10 and w15 as two outputs of its own, unrelated to autograd, so w15's gradient misses the
write (**wrong gradients**). Now the graph returns the intermediate base after the
user's outputs (aot::OutputInfo::intermediate_base) and the runtime remakes the views
from it. The second function is the same seed's other form: t10 written in place before
w15 is made, so the base's final value is t10's own tensor (the runtime gives the base
its own tensor object, or t10 came back not requiring grad).

Run: python3 views_of_one_intermediate_returned_by_a_graph.py  (prints the mismatch; exit status 1 while it reproduces).
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

def g(a, b):
    t7 = b * a
    t10 = t7.unsqueeze(0).squeeze(0)
    t10.masked_fill_(t10 > 1.0, 1.0)
    w15 = t10[:, :]
    print('w', w15.shape)
    return t10, w15 * -0.5 + 1


def f(a, b, buf, k):
    t7 = b * a
    t10 = t7.unsqueeze(0).squeeze(0)
    w15 = t10[:, :]
    print('w', w15.shape)
    t10[0].mul_(2)
    t16 = w15 * -0.5 + 1
    return {'t16': t16, 'g': g(a, buf)}

CALLS = [dict(R=5, C=4, dtype='float32', grad=True, k=1, seed=691, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
