"""Fuzz repro (eager): mismatch:globals

Seed 92969, shrunk: g_log.append(k), then v3 = a.t(); v3[v3 > 0.5] = 0.5 with a a leaf
that requires grad. Eager raises at the assignment, after the append. Capture did not
run a boolean-mask index assignment on its fakes (the count is unknown to them), so
autograd's in-place check did not raise while tracing: the graph raised at run time,
before the plan replayed the append, which was lost. Capture now makes autograd's
in-place check of such an assignment on the fakes (check_masked_assignment in
src/ignis/capture/tracer_calls.cpp): the graph breaks before it, and the assignment
raises eagerly after the append.

Run: python3 bool_mask_assignment_into_leaf_view_after_side_effect.py  (prints the mismatch; exit status 1 while it reproduces).
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
    g_log.append(k)
    v3 = a.t()
    v3[v3 > 0.5] = 0.5
    return v3

CALLS = [dict(R=5, C=4, dtype='float32', grad=True, k=2, seed=966, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
