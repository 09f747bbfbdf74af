"""Fuzz repro (aot_eager): mismatch:backward-exception

call 0: backward: compiled ('list', [('tensor', 'ignis.float32', (3, 4), False, array([[ 1.28015327,  0.21775241,  0.65621585, -0.21056458],
       [-0.09186061,  0.05524426,  0.74846566, -0.22982705],
       [ 0.00779082, -0.38371044,  0.9931553 , -0.05338637]])), ('tensor', 'ignis.float32', (3, 4), False, array([[-0.5406456 , -0.9883889 , -0.40478411,  0.41239113],
       [-1.88433838, -0.07588701,  0.46258858,  0.46735847],
       [ 0.31395608,  0.36855757,  0.0196319 , -0.02609286]]))]) (None); eager ('raised', 'RuntimeError') (one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3, 4]], which is input 'other' of MulBackward0, is at version 1; expected version 0 instead. Hint: the operation that saved it is MulBackward0; clone() the tensor before modifying it i)

Run: python3 saved_input_mutated_no_error.py  (prints the mismatch; exit status 1 while it reproduces).
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
    t = b * a
    print('break')
    with torch.no_grad():
        a.mul_(0.9)
    return t

CALLS = [dict(R=3, C=4, dtype='float32', grad=True, k=1, seed=1, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND)
