"""Runs one program eagerly and compiled and compares what every call did.

A run executes the program's source in a fresh namespace, then makes the
calls in its `CALLS` list. For each call it records: the exception type (or
the result, normalized: tensors as dtype, shape, requires_grad and values),
what the call printed, the arguments afterwards (mutated inputs), the `g_*`
globals afterwards and, when inputs require grad, the gradients of `a` and
`b` after a backward of a weighted sum of the outputs (or the type of the
exception backward raised). The reference run calls `f` eagerly every time;
the compiled run calls `ignis.compile(f, backend=...)`, except for calls
marked `mode='eager'`, which call `f` itself between the compiled ones.

`check(src, backend)` returns None when the runs agree, else a `Failure`.
A `Worker` runs checks in a child process, so that a crash (a signal) or a
hang is a failure of that program, not of the fuzzer.
"""
import contextlib
import io
import json
import math
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARK = "@@FUZZ@@ "


@dataclass
class Failure:
    category: str  # short class: "mismatch:out", "compiled-raised:TypeError", "crash:SIGSEGV"
    detail: str    # what differed, readable


# --------------------------------------------------------------------------------------------
# Running (in the process that imports ignis)
# --------------------------------------------------------------------------------------------
def _ignis():
    from . import _checkout  # noqa: F401  (this checkout's ignis, not an installed one)
    import ignis
    return ignis


def make_inputs(ignis, spec, device="cpu"):
    import numpy as np
    g = np.random.default_rng(spec["seed"])
    R, C = spec["R"], spec["C"]
    dt = np.float32 if spec["dtype"] == "float32" else np.float64
    a = ignis.tensor(g.standard_normal((R, C)).astype(dt), requires_grad=spec["grad"], device=device)
    b = ignis.tensor(g.standard_normal((R, C)).astype(dt), requires_grad=spec["grad"], device=device)
    buf = ignis.tensor(g.standard_normal((R, C)).astype(dt), device=device)
    return a, b, buf, spec["k"]


def normalize(ignis, v, depth=0):
    """A comparable form of a call's result (plain data, tensors as arrays)."""
    if depth > 6:
        return ("deep",)
    if isinstance(v, ignis.Tensor):
        t = v.detach()
        device = t.device.type
        t = t.cpu()
        return ("tensor", str(t.dtype), tuple(t.shape), bool(v.requires_grad),
                t.to(ignis.float64).numpy().copy() if t.is_floating_point() else t.numpy().copy(),
                device)
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [normalize(ignis, x, depth + 1) for x in v])
    if isinstance(v, dict):
        return ("dict", [(repr(k), normalize(ignis, x, depth + 1)) for k, x in v.items()])
    if isinstance(v, (bool, int, float, str, type(None))):
        return v
    if hasattr(v, "__dict__") and not callable(v):  # a user object: its attributes
        return ("object", type(v).__name__, normalize(ignis, dict(vars(v)), depth + 1))
    return ("object", type(v).__name__)


def _grad_loss(ignis, result, seed):
    import numpy as np
    g = np.random.default_rng(seed + 7)
    outs, stack = [], [result]
    while stack:
        v = stack.pop(0)
        if isinstance(v, ignis.Tensor):
            if v.requires_grad and v.is_floating_point():
                outs.append(v)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    loss = None
    for o in outs:
        w = ignis.tensor(g.standard_normal(tuple(o.shape))).to(o.dtype).to(o.device)
        term = (o * w).sum()
        loss = term if loss is None else loss + term
    return loss


def run_program(src, backend=None, filename="<fuzz program>", lib=None, device="cpu"):
    """Runs `src`'s calls; backend None = all eager. Returns one record per call.
    `lib`: the library the program imports as `torch` (default ignis; torch itself for
    torch_ref.py, which then passes the program with `import torch`). `device`: where
    the inputs live (the program's factories follow its inputs' device)."""
    ignis = lib or _ignis()
    ns = {"__name__": "fuzz_program"}
    exec(compile(src, filename, "exec"), ns)
    f = ns["f"]
    cf = ignis.compile(f, backend=backend) if backend else f
    records = []
    with _every_size_compiled(ignis, backend and ns.get("COMPILE_EVERY_SIZE")):
        _run_calls(ignis, ns, f, cf, device, records)
    return records


@contextlib.contextmanager
def _every_size_compiled(ignis, on):
    """A program generated with --sizes compiles each size at its first call (Note
    [Compiling a size on its second call] would run it eagerly) and never stops."""
    if not on:
        yield
        return
    import importlib
    comp = importlib.import_module(ignis.__name__ + "._compile")
    saved = comp.PER_SIZE_COMPILE_AFTER, comp.PER_SIZE_CHURN_COMPILES
    comp.PER_SIZE_COMPILE_AFTER, comp.PER_SIZE_CHURN_COMPILES = 1, 1 << 30
    try:
        yield
    finally:
        comp.PER_SIZE_COMPILE_AFTER, comp.PER_SIZE_CHURN_COMPILES = saved


def _run_calls(ignis, ns, f, cf, device, records):
    for i, spec in enumerate(ns["CALLS"]):
        a, b, buf, k = make_inputs(ignis, spec, device)
        rec = {"call": i}
        out = io.StringIO()
        fn = cf if spec.get("mode", "compiled") == "compiled" else f
        result = None
        try:
            with contextlib.redirect_stdout(out):
                result = fn(a, b, buf, k)
            rec["exc"] = None
            rec["out"] = normalize(ignis, result)
        except Exception as e:  # noqa: BLE001 - the exception type is what is compared
            rec["exc"] = type(e).__name__
            rec["exc_msg"] = str(e)[:300]
        # The grad mode a call leaves (a compiled call must leave eager's);
        # reset, so that one program's leak does not change the next calls.
        rec["grad_mode"] = ignis.is_grad_enabled()
        ignis.set_grad_enabled(True)
        rec["stdout"] = out.getvalue()
        rec["args"] = normalize(ignis, [a, b, buf])
        rec["globals"] = normalize(ignis, {n: v for n, v in ns.items() if n.startswith("g_")})
        if rec["exc"] is None and spec["grad"]:
            try:
                loss = _grad_loss(ignis, result, spec["seed"])
                if loss is not None:
                    loss.backward()
                rec["grads"] = normalize(ignis, [a.grad, b.grad])
            except Exception as e:  # noqa: BLE001
                rec["grads"] = ("raised", type(e).__name__)
                rec["grads_msg"] = str(e)[:300]
        records.append(rec)


def float32_inside(src):
    """Whether a program computes in float32 on the way (`.float()`, `torch.float32`): its
    float64 results then carry float32 rounding, which a fused kernel may place
    differently (a multiply-add contracted into an fma, an intermediate kept wider), so
    they compare with
    float32's tolerance (seed 510102 on CUDA: `a.float() * n - c` cat with a float64
    tensor)."""
    return bool(re.search(r"\.float\(\)|float32", src))


def _close(x, y, dtype, loose64=False):
    import numpy as np
    if x.shape != y.shape:
        return False
    if x.size == 0:
        return True
    if "float" not in dtype:  # bool and integer tensors compare exactly
        return bool(np.array_equal(x, y))
    rtol = 1e-4 if "float64" not in dtype or loose64 else 1e-9
    scale = max(1.0, float(np.nanmax(np.abs(np.where(np.isfinite(y), y, 0)))))
    return bool(np.allclose(x, y, rtol=rtol, atol=rtol * scale, equal_nan=True))


def diff(got, want, path="", loose64=False):
    """The first difference between two normalized values, as text, or None."""
    import numpy as np
    if isinstance(want, tuple) and want and want[0] == "tensor":
        if not (isinstance(got, tuple) and got and got[0] == "tensor"):
            return f"{path}: expected a tensor, got {_short(got)}"
        for i, what in ((1, "dtype"), (2, "shape"), (3, "requires_grad"), (5, "device")):
            if got[i] != want[i]:
                return f"{path}: {what} {got[i]} != eager's {want[i]}"
        if not _close(got[4], want[4], want[1], loose64):
            bad = got[4] != want[4] if "float" not in want[1] else \
                ~np.isclose(got[4], want[4], rtol=1e-4, atol=1e-4, equal_nan=True)
            return (f"{path}: values differ at {int(bad.sum())} of {bad.size} elements\n"
                    f"  compiled: {np.array2string(got[4], precision=5, threshold=30)}\n"
                    f"  eager:    {np.array2string(want[4], precision=5, threshold=30)}")
        return None
    if isinstance(want, float) and isinstance(got, float) and type(got) is type(want):
        if math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-4) or (math.isnan(got) and math.isnan(want)):
            return None
        return f"{path}: {got!r} != eager's {want!r}"
    if isinstance(want, tuple) and len(want) == 2 and isinstance(want[1], list):
        if not (isinstance(got, tuple) and len(got) == 2 and got[0] == want[0]):
            return f"{path}: {_short(got)} != eager's {_short(want)}"
        if len(got[1]) != len(want[1]):
            return f"{path}: {got[0]} of length {len(got[1])} != eager's {len(want[1])}"
        for i, (x, y) in enumerate(zip(got[1], want[1])):
            if want[0] == "dict":
                if x[0] != y[0]:
                    return f"{path}: key {x[0]} != eager's {y[0]}"
                d = diff(x[1], y[1], f"{path}[{y[0]}]", loose64)
            else:
                d = diff(x, y, f"{path}[{i}]", loose64)
            if d:
                return d
        return None
    if type(got) is not type(want) or got != want:
        return f"{path}: {_short(got)} != eager's {_short(want)}"
    return None


def _short(v):
    s = repr(v)
    return s if len(s) < 200 else s[:200] + "..."


def _none_as_zeros(got, want):
    """None where the other run has a tensor reads as that tensor's zeros: a compiled
    graph is one autograd node, so an input with no path to the loss gets zeros from
    it (torch.compile's AOTAutograd does the same), where eager leaves .grad None; and a
    gradient that cancels exactly in eager ((a - a) * a) may leave rounding in a fused
    kernel, which the tolerance then judges."""
    if not (isinstance(got, tuple) and got[:1] == ("list",) and isinstance(want, tuple)
            and want[:1] == ("list",) and len(got[1]) == len(want[1])):
        return got, want

    def is_tensor(v):
        return isinstance(v, tuple) and v[:1] == ("tensor",)

    def zeros_like(t):
        import numpy as np
        return t[:4] + (np.zeros_like(t[4]),) + t[5:]

    g, w = list(got[1]), list(want[1])
    for i, (x, y) in enumerate(zip(g, w)):
        if x is None and is_tensor(y):
            g[i] = zeros_like(y)
        elif y is None and is_tensor(x):
            w[i] = zeros_like(x)
    return ("list", g), ("list", w)


def compare(got, want, loose64=False):
    """A Failure for the first call whose records differ, or None. loose64: float64
    values compare with float32's tolerance (float32_inside)."""
    for g, w in zip(got, want):
        i = w["call"]
        if g["exc"] != w["exc"]:
            if w["exc"] is None:
                return Failure(f"compiled-raised:{g['exc']}",
                               f"call {i}: compiled raised {g['exc']}: {g.get('exc_msg')}; eager returned")
            if g["exc"] is None:
                return Failure(f"compiled-did-not-raise:{w['exc']}",
                               f"call {i}: eager raised {w['exc']}: {w.get('exc_msg')}; compiled returned")
            return Failure("mismatch:exception-type",
                           f"call {i}: compiled raised {g['exc']}: {g.get('exc_msg')}; "
                           f"eager raised {w['exc']}: {w.get('exc_msg')}")
        if g["stdout"] != w["stdout"]:
            return Failure("mismatch:stdout", f"call {i}: printed\n{g['stdout']}eager printed\n{w['stdout']}")
        for key in ("grad_mode", "out", "args", "globals", "grads"):
            if key not in w and key not in g:
                continue
            gv, wv = g.get(key, ("missing",)), w.get(key, ("missing",))
            if key == "grads" and isinstance(wv, tuple) and wv[:1] == ("raised",) or \
                    key == "grads" and isinstance(gv, tuple) and gv[:1] == ("raised",):
                if gv != wv:
                    return Failure("mismatch:backward-exception",
                                   f"call {i}: backward: compiled {gv} ({g.get('grads_msg')}); "
                                   f"eager {wv} ({w.get('grads_msg')})")
                continue
            if key == "grads":  # torch.compile gives zeros where eager gives None too
                gv, wv = _none_as_zeros(gv, wv)
            d = diff(gv, wv, key, loose64)
            if d:
                return Failure(f"mismatch:{key}", f"call {i}: {d}")
    return None


def check(src, backend, device="cpu", knobs=None):
    """None when the compiled run of `src` agrees with the eager one, else a Failure.
    backend "torch": eager ignis against torch's eager mode (tests/fuzz/torch_ref.py).
    device "cuda": the inputs live on the GPU (eager on the GPU is the reference).
    knobs: ignis._inductor.config settings for the compiled run (thresholds lowered
    so that the fuzzer's few rows reach size-dependent schedules)."""
    if backend == "torch":
        from .torch_ref import eager_verdict
        return eager_verdict(src, device=device)
    ignis = _ignis()
    ignis.compiler.reset()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = run_program(src, None, device=device)
        except Exception as e:  # noqa: BLE001 - the program itself is broken (module level)
            return Failure("invalid-program", f"{type(e).__name__}: {e}")
        try:
            from ignis._inductor import config as inductor_config
            with inductor_config.patch(**(knobs or {})):
                got = run_program(src, backend, device=device)
        except Exception as e:  # noqa: BLE001 - compile() itself or the module raised
            return Failure(f"harness-raised:{type(e).__name__}", str(e)[:500])
    return compare(got, want, float32_inside(src))


def repro_main(src, backend, device="cpu", knobs=None):
    """Entry point of a repro file: prints the mismatch; exit status 1 when it reproduces."""
    fail = check(src, backend, device, knobs)
    if fail is None:
        print(f"FUZZ-OK: compiled ({backend}, {device}) agrees with eager")
        sys.exit(0)
    print(f"FUZZ-FAILURE: {fail.category}\n{fail.detail}")
    sys.stdout.flush()
    sys.exit(1)


# --------------------------------------------------------------------------------------------
# The child process
# --------------------------------------------------------------------------------------------
def worker_main():
    """Reads {"src", "backend"} lines on stdin, answers MARK + json on the original stdout."""
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the programs' and the C++ side's own output must not mix with answers
    _ignis()
    for line in sys.stdin:
        req = json.loads(line)
        t0 = time.time()
        fail = check(req["src"], req["backend"], req.get("device", "cpu"), req.get("knobs"))
        ans = {"ok": fail is None, "secs": time.time() - t0}
        if fail:
            ans.update(category=fail.category, detail=fail.detail)
        proto.write(MARK + json.dumps(ans) + "\n")
        proto.flush()


class Worker:
    """A child process that runs checks; restarted after a crash or a hang."""

    def __init__(self, timeout=120.0, knobs=None):
        self.timeout = timeout
        self.knobs = knobs or {}  # config settings for every compiled run (check's)
        self.proc = None
        self.err = None

    def _start(self):
        self.err = tempfile.TemporaryFile()
        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        self.proc = subprocess.Popen([sys.executable, "-c", "from tests.fuzz.runner import worker_main; "
                                      "worker_main()"], cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, env=env, text=True)

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def _stderr_tail(self):
        self.err.seek(0)
        return self.err.read().decode(errors="replace")[-1500:]

    def check(self, src, backend, device="cpu"):
        """(Failure or None, seconds)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        t0 = time.time()
        self.proc.stdin.write(json.dumps({"src": src, "backend": backend, "device": device,
                                          "knobs": self.knobs}) + "\n")
        self.proc.stdin.flush()
        fd = self.proc.stdout
        while True:
            left = self.timeout - (time.time() - t0)
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                self.close()
                return Failure("timeout", f"no answer in {self.timeout:.0f} s"), time.time() - t0
            line = fd.readline()
            if not line:  # the child died
                rc = self.proc.wait()
                tail = self._stderr_tail()
                self.proc = None
                sig = _signame(rc)
                return Failure(f"crash:{sig}", f"worker exited with {sig}\n{tail}"), time.time() - t0
            if line.startswith(MARK):
                ans = json.loads(line[len(MARK):])
                fail = None if ans["ok"] else Failure(ans["category"], ans["detail"])
                return fail, time.time() - t0


def _signame(rc):
    import signal
    if rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return f"signal{-rc}"
    return f"exit{rc}"


# --------------------------------------------------------------------------------------------
# Repro files
# --------------------------------------------------------------------------------------------
REPRO = '''"""Fuzz repro ({backend}{on_device}): {category}

{detail}

Run: python3 {name}  (prints the mismatch; exit status 1 while it reproduces).
Each call gets a, b, buf: (R, C) normal tensors from `seed`, a and b requiring grad
when `grad`; k an int (tests/fuzz/runner.py, make_inputs); `mode` says whether the
compiled run calls f compiled or eagerly.
"""
import sys
from pathlib import Path
sys.path.insert(0, str(next((p for p in Path(__file__).resolve().parents
                             if (p / "tests" / "fuzz" / "runner.py").is_file()), {root!r})))
from tests.fuzz.runner import repro_main  # noqa: E402  (also selects the checkout's ignis)

BACKEND = {backend!r}
DEVICE = {device!r}
KNOBS = {knobs!r}  # ignis._inductor.config settings of the compiled run
PROGRAM = r\'\'\'
{src}\'\'\'

if __name__ == "__main__":
    repro_main(PROGRAM, BACKEND, DEVICE, KNOBS)
'''


def write_repro(path, src, backend, fail, device="cpu", knobs=None):
    detail = "\n".join(fail.detail.replace('"""', "'''").splitlines()[:12])
    on_device = "" if device == "cpu" else f", {device}"
    Path(path).write_text(REPRO.format(backend=backend, category=fail.category, detail=detail,
                                       device=device, on_device=on_device, knobs=knobs or {},
                                       name=Path(path).name, root=str(ROOT), src=src))
    return path


def run_repro(path, timeout=120.0):
    """Runs a repro file in a fresh process: its failure category, or None when it passes."""
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    try:
        p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "timeout"
    if p.returncode < 0:
        return f"crash:{_signame(p.returncode)}"
    for line in p.stdout.splitlines():
        if line.startswith("FUZZ-FAILURE: "):
            return line[len("FUZZ-FAILURE: "):]
    return None if p.returncode == 0 else f"crash:{_signame(p.returncode)}"
