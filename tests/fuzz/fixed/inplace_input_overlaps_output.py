"""Fuzz repro (eager): compiled-did-not-raise:RuntimeError

Seed 78034, hand-reduced: t2 = t1.unsqueeze(0), then t2.add_(t1): the input and the
written-to tensor partially overlap (t2 is a view of t1 with another geometry), which
eager refuses. The check compared data pointers, which fakes do not have, so capture
traced the op and the functionalized graph (which copies) did not raise; the append to
g_log before it was replayed. The check now judges tensors without data by storage and
offsets: it raises while tracing, the graph breaks there and the op raises on real values.

Run: python3 inplace_input_overlaps_output.py  (prints the mismatch; exit status 1 while it reproduces).
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

g_log = []


def f(a, b, buf, k):
    t1 = torch.arange(a.shape[1], dtype=a.dtype)
    t2 = t1.unsqueeze(0)
    g_log.append(len(g_log))
    t2.add_(t1)
    t3 = t1.unsqueeze(0) * a
    return {'t1': t1, 't2': t2, 't3': t3, 'k': k}

CALLS = [dict(R=4, C=5, dtype='float32', grad=False, k=2, seed=1, mode='compiled'),
         dict(R=3, C=1, dtype='float32', grad=True, k=1, seed=2, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
