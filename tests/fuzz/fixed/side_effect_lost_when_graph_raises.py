"""Fuzz repro (eager): mismatch:globals

call 0: globals['g_n']: 0 != eager's 1

Run: python3 side_effect_lost_when_graph_raises.py  (prints the mismatch; exit status 1 while it reproduces).
Each call gets a, b, buf: (R, C) normal tensors from `seed`, a and b requiring grad
when `grad`; k an int (tests/fuzz/runner.py, make_inputs); `mode` says whether the
compiled run calls f compiled or eagerly.
"""
import sys
from pathlib import Path
sys.path.insert(0, str(next((p for p in Path(__file__).resolve().parents
                             if (p / "tests" / "fuzz" / "runner.py").is_file()), '/work/wt-fuzz')))
from tests.fuzz.runner import repro_main  # noqa: E402  (also selects the checkout's ignis)

BACKEND = 'eager'
PROGRAM = r'''
g_n = 0

def f(a, b, buf, k):
    global g_n
    g_n += 1
    a[0] = 1.0
    return a

CALLS = [dict(R=3, C=4, dtype='float32', grad=True, k=1, seed=1, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
