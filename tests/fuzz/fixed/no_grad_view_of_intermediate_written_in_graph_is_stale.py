"""Fuzz repro (aot_eager): mismatch:backward-exception

Seed 500341 (found on CUDA, reproduces on the CPU), shrunk: t3 = acc1.transpose(0, 1)
under no_grad, then acc1.sub_(k) with grad mode on, t3 returned. Eager's t3 is a stale
no-grad view: the loss built from it raises "A view was created in no_grad mode and its
base ... has been modified inplace". The compiled runtime returned t3 as a fresh no-grad
view of the node's output, and the loss worked. A no-grad view output that is stale at
the end of the trace (aot::OutputInfo::stale_no_grad_view) is now marked stale by the
runtime (_C._mark_stale_view).

Run: python3 aot_eager_seed500341_mismatch-backward-exception.py  (prints the mismatch; exit status 1 while it reproduces).
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

def f(a, b, buf, k):
    acc1 = a * 1.0
    v2 = buf + 1
    with torch.no_grad():
        t3 = acc1.transpose(0, 1)
    w6 = b[:, :]
    t7 = w6 * 2.0 + 1
    acc1.sub_(k)
    t12 = v2 * (v2.shape[0] + v2.shape[1] * k) / v2.numel()
    t14 = b.masked_fill(b < 0.0, 0.25)
    return {'t3': t3, 't7': t7, 't12': t12, 't14': t14}
CALLS = [dict(R=4, C=5, dtype='float32', grad=True, k=3, seed=370, mode='compiled')]
'''

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND, DEVICE)
