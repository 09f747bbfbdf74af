"""Fuzz repro (aot_eager): mismatch:backward-exception

call 0: backward: compiled ('list', [('tensor', 'ignis.float32', (3, 4), False, array([[-3.28452945, -3.04694605, -2.87780261, -0.12071592],
       [-4.61115122, -0.19908684, -2.66322494,  1.79031277],
       [ 1.98788881,  2.85501885,  0.68870509, -0.09738666]])), None]) (None); eager ('raised', 'RuntimeError') (one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3, 4]], which is input 'self' of SinBackward0, is at version 1; expected version 0 instead. Hint: the operation that saved it is SinBackward0; clone() the tensor before modifying it in)

Run: python3 saved_output_mutated_no_error.py  (prints the mismatch; exit status 1 while it reproduces).
Each call gets a, b, buf: (R, C) normal tensors from `seed`, a and b requiring grad
when `grad`; k an int (tests/fuzz/runner.py, make_inputs); `mode` says whether the
compiled run calls f compiled or eagerly.
"""
import sys
from pathlib import Path
sys.path.insert(0, str(next((p for p in Path(__file__).resolve().parents
                             if (p / "tests" / "fuzz" / "runner.py").is_file()), '/work/wt-fuzz')))
from tests.fuzz.runner import repro_main  # noqa: E402  (also selects the checkout's ignis)

BACKEND = 'aot_eager'
PROGRAM = r'''
import ignis as torch

def f(a, b, buf, k):
    t1 = a + 1
    t2 = t1.sin()
    print('break')
    t1.mul_(2)
    return t1, t2

CALLS = [dict(R=3, C=4, dtype='float32', grad=True, k=1, seed=1, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
