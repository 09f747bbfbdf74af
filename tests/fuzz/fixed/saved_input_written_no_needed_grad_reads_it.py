"""Fuzz repro (aot_eager): mismatch:backward-exception

call 0: backward: compiled ('list', [...]) (None); eager ('raised', 'RuntimeError') (one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [5, 4]], which is input 'self' of MulBackward0, is at version 3; expected version 2 instead.)

Run: python3 saved_input_written_no_needed_grad_reads_it.py  (prints the mismatch; exit status 1 while it reproduces).
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
    buf.add_(a)
    print(k)
    t3 = buf * k
    buf[0].mul_(2)
    return [t3]

CALLS = [dict(R=5, C=4, dtype='float32', grad=True, k=3, seed=167, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
