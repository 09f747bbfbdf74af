"""Fuzz repro (aot_eager): compiled-did-not-raise:RuntimeError

Seed 98612, shrunk: t3 = t2.unsqueeze(0).squeeze(0) made under no_grad, t2 an
intermediate requiring grad; t3[-1, :].mul_(2) breaks the graph (capture's fakes refuse
it), so the graph returns t3[-1, :], a no-grad view of a value the user cannot reach.
It came back as the compiled node's output, a plain tensor with history, so mul_ ran
where eager refuses an in-place op on a no-grad view. Such an output is now returned as
a no-grad view of the node's output (aot::OutputInfo::no_grad_view).

Run: python3 no_grad_view_of_intermediate_output.py  (prints the mismatch; exit status 1 while it reproduces).
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
    t1 = buf * 3
    t2 = torch.minimum(t1, a)
    with torch.no_grad():
        t3 = t2.unsqueeze(0).squeeze(0)
    t3[-1, :].mul_(2)
    return t1

CALLS = [dict(R=3, C=6, dtype='float32', grad=True, k=0, seed=955, mode='compiled'),
         dict(R=3, C=6, dtype='float32', grad=False, k=1, seed=5, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
