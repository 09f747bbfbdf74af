"""Which kernels a call launched, from the fake CUDA driver's launch log
(tests/cuda_fake: with FAKE_CUDA_LOG=1 it writes "launch <kernel>" and
"grid <kernel> <x> <y>" to stderr for each launch, "memset <bytes>" for each
asynchronous memset). Tests of the launchers' choices read it through
`launched`; on a real GPU they skip."""
import os

import pytest

import ignis


def require_fake_gpu():
    if ignis.cuda.get_device_name(0) != "Fake GPU":
        pytest.skip("reads the fake driver's launch log (tests/cuda_fake)")


def _launch_log(capfd, run):
    os.environ["FAKE_CUDA_LOG"] = "1"
    try:
        capfd.readouterr()
        run()
        ignis.cuda.synchronize()
        return capfd.readouterr().err
    finally:
        del os.environ["FAKE_CUDA_LOG"]


def launched(capfd, run):
    """The names of the kernels `run()` launched, in order (capfd: pytest's
    fixture; what it held before is dropped)."""
    err = _launch_log(capfd, run)
    return [line[len("launch "):] for line in err.splitlines() if line.startswith("launch ")]


def launched_grids(capfd, run):
    """(kernel, blocks along x) of each launch of `run()`, in order."""
    err = _launch_log(capfd, run)
    return [(w[1], int(w[2])) for w in (line.split() for line in err.splitlines())
            if len(w) == 4 and w[0] == "grid"]


def memsets(capfd, run):
    """The bytes of each asynchronous memset `run()` made, in order."""
    err = _launch_log(capfd, run)
    return [int(line.split()[1]) for line in err.splitlines() if line.startswith("memset ")]
