"""The differential fuzzer (tests/fuzz, docs/fuzzing.md) in CI.

test_fuzz_sample: per backend, a fixed range of generated programs runs eagerly
and compiled in a worker process; a program that disagrees, crashes or hangs
fails the test with its repro file's path and text. Each backend runs two
samples: every statement kind with no input requiring grad, and every kind
with inputs requiring grad in about half the calls. About a minute in all on
two cores (the compiler builds C++ per program, hence fewer inductor
programs).

test_known_failure: each repro in tests/fuzz/repros, a known bug listed in
docs/fuzzing.md, is a strict xfail: when a fix lands the test says so, and
the repro moves to tests/fuzz/fixed.

test_fixed: each repro in tests/fuzz/fixed, a bug the fuzzer found and that
was fixed, agrees with eager on every backend (and on CUDA where there is a GPU).

test_fuzz_sample_on_cuda: on a GPU, a sample with the inputs on CUDA.

test_fuzz_eager_against_torch: the oracle itself, eager ignis, agrees with
torch's eager mode on a sample (when torch is installed).
"""
import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.fuzz.__main__ import fuzz  # noqa: E402
from tests.fuzz.runner import check  # noqa: E402

# backend -> (first seed, programs)
SAMPLE = {"eager": (0, 300), "aot_eager": (0, 300), "inductor": (0, 12)}
# Two samples per backend: every statement kind with no input requiring grad, and
# every statement kind with about half the calls' inputs requiring grad.
NO_GRAD = ("grad",)
SAMPLES = {"no_grad": NO_GRAD, "grad": ()}
REPROS = sorted((ROOT / "tests" / "fuzz" / "repros").glob("*.py"))
FIXED = sorted((ROOT / "tests" / "fuzz" / "fixed").glob("*.py"))


def _fail_on(failures, count, where=""):
    """Fails the test with the first failure's repro when a sample had any."""
    if failures:
        cat, items = sorted(failures.items())[0]
        s, path = items[0]
        pytest.fail(f"{sum(map(len, failures.values()))} of {count} programs disagree{where} "
                    f"({', '.join(sorted(failures))}); first: seed {s}, {cat}, repro {path}:\n"
                    f"{Path(path).read_text()}")


@pytest.mark.parametrize("sample", list(SAMPLES))
@pytest.mark.parametrize("backend", list(SAMPLE))
def test_fuzz_sample(backend, sample, tmp_path):
    seed, count = SAMPLE[backend]
    failures = fuzz(backend, count, seed, out=tmp_path, log=lambda *a: None, skip=SAMPLES[sample])
    _fail_on(failures, count)


def test_fuzz_sample_with_size_thresholds_lowered(tmp_path):
    """The programs' tensors have 2-7 rows, under the sizes some schedules
    wait for (column sums folded in a row kernel from 64 rows: Note [Column
    sums in a row kernel]); with the threshold lowered (--knob) the same
    random programs reach them. Two bugs were found this way."""
    failures = fuzz("inductor", 12, 4520000, out=tmp_path, log=lambda *a: None,
                    knobs={"column_sums_min_rows": 2})
    _fail_on(failures, 12, " with column_sums_min_rows=2")


# On a GPU: the inputs on CUDA, eager on the GPU as the reference (seeds 0..99 and
# 0..11 for the compiler, which builds CUDA C++ per program).
CUDA_SAMPLE = {"eager": (0, 100), "aot_eager": (0, 100), "inductor": (0, 12)}


def _cuda_available():
    import ignis
    return ignis.cuda.is_available()


@pytest.mark.parametrize("backend", list(CUDA_SAMPLE))
def test_fuzz_sample_on_cuda(backend, tmp_path):
    if not _cuda_available():
        pytest.skip("ignis.cuda.is_available() is False: no GPU or driver here")
    seed, count = CUDA_SAMPLE[backend]
    failures = fuzz(backend, count, seed, out=tmp_path, log=lambda *a: None, device="cuda")
    _fail_on(failures, count, " on CUDA")


# Programs of the torch sample where torch's eager mode is the odd one out
# (docs/fuzzing.md, "Known differences"): seed -> why.
TORCH_QUIRKS = {
    151: "torch raises 'a leaf Variable ... in-place' on an in-place op on a view whose base "
         "gained history after the view was made, unless the view's grad_fn was read first",
}


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_fuzz_eager_against_torch(tmp_path):
    # Eager ignis, the oracle of the samples above, against torch's eager mode
    # (--backend torch), every statement kind, grads included.
    failures = fuzz("torch", 300, 0, out=tmp_path, log=lambda *a: None)
    failures = {cat: kept for cat, items in failures.items()
                if (kept := [(s, p) for s, p in items if s not in TORCH_QUIRKS])}
    if failures:
        cat, items = sorted(failures.items())[0]
        s, path = items[0]
        pytest.fail(f"eager ignis differs from torch on {sum(map(len, failures.values()))} of "
                    f"300 programs; first: seed {s}, {cat}, repro {path}:\n"
                    f"{Path(path).read_text()}")


def _repro(path):
    """(program source, backend) of a repro file: its PROGRAM and BACKEND constants."""
    consts = {n.targets[0].id: n.value.value for n in ast.parse(path.read_text()).body
              if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)}
    return consts["PROGRAM"], consts["BACKEND"]


@pytest.mark.xfail(strict=True, reason="a known ignis bug (docs/fuzzing.md); when this passes, "
                   "move the repro to tests/fuzz/fixed and update its line in the doc")
@pytest.mark.parametrize("path", REPROS, ids=[p.stem for p in REPROS])
def test_known_failure(path):
    src, backend = _repro(path)
    fail = check(src, backend)
    assert fail is None, f"{path.name}: {fail.category}\n{fail.detail}"


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("backend", list(SAMPLE))
@pytest.mark.parametrize("path", FIXED, ids=[p.stem for p in FIXED])
def test_fixed(path, backend, device):
    if device == "cuda" and not _cuda_available():
        pytest.skip("ignis.cuda.is_available() is False: no GPU or driver here")
    src, _ = _repro(path)
    fail = check(src, backend, device)
    assert fail is None, f"{path.name} on {backend} ({device}): {fail.category}\n{fail.detail}"
