"""Throws thousands of random, mostly wrong, calls at every op in
ignis._ops._table: wrong argument types, shapes, dims, dtypes, devices,
huge and negative numbers, bogus keywords, strided/expanded/0-dim/empty/meta
tensors. Each call must either succeed or raise one of TypeError,
ValueError, IndexError, RuntimeError or NotImplementedError, and never crash
the interpreter. The calls run in a subprocess so that a crash fails the
test (with the offending call) instead of killing pytest.

Run one seed by hand:  python tests/python/test_bad_input_fuzz.py SEED NCALLS
"""
import json
import os
import random
import subprocess
import sys

import pytest

ALLOWED = ("TypeError", "ValueError", "IndexError", "RuntimeError", "NotImplementedError")
CALLS_PER_SEED = 2500
SEEDS = [1, 2, 3, 4]


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzz_bad_calls(seed, tmp_path):
    log = tmp_path / "calls.log"
    env = dict(os.environ, IGNIS_FUZZ_LOG=str(log))
    proc = subprocess.run([sys.executable, __file__, str(seed), str(CALLS_PER_SEED)],
                          capture_output=True, text=True, timeout=120, env=env)
    if proc.returncode != 0:
        last = log.read_text().splitlines()[-3:] if log.exists() else []
        pytest.fail(f"fuzz process died (exit {proc.returncode}); last calls:\n"
                    + "\n".join(last) + "\nstderr:\n" + proc.stderr[-3000:])
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["calls"] == CALLS_PER_SEED
    assert report["ops"] > 100, "the fuzzer should reach most ops"
    assert not report["bad"], "calls raised exceptions outside the allowed types:\n" + \
        "\n".join(report["bad"][:20])


# --------------------------------------------------------------------------------
# The fuzz body (runs in the child process)
# --------------------------------------------------------------------------------
def _parse_schema(schema):
    """[(type, name, has_default, kwarg_only)] of one schema string."""
    inside = schema[schema.index("(") + 1:schema.rindex(") ->")]
    args, kw = [], False
    for part in [p.strip() for p in inside.split(",") if p.strip()]:
        if part == "*":
            kw = True
            continue
        decl, _, default = part.partition("=")
        typ, name = decl.rsplit(" ", 1)
        args.append((typ.split("(")[0], name, bool(default), kw))
    return args


class _Fuzzer:
    def __init__(self, seed):
        import numpy as np

        import ignis
        self.np, self.ignis = np, ignis
        self.rng = random.Random(seed)
        self.nrng = np.random.default_rng(seed)
        self.dtypes = [getattr(ignis, d) for d in (
            "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
            "float32", "float64")]
        self.ops = sorted(ignis._ops._table)
        self.new_pool()

    # ---- values ---------------------------------------------------------------------
    def tensor(self):
        r, ig, np = self.rng, self.ignis, self.np
        shape = r.choice([(), (), (0,), (1,), (3,), (2, 3), (3, 1), (1, 3), (2, 0, 3), (2, 3, 4),
                          (4, 4), (2, 1, 2, 1)])
        a = self.nrng.uniform(-5, 5, shape)
        if r.random() < 0.2 and a.size:
            a.flat[r.randrange(a.size)] = r.choice([np.nan, np.inf, -np.inf, 0.0, 1e30])
        t = ig.from_numpy(np.array(a, order="C")).to(r.choice(self.dtypes))
        kind = r.random()
        if kind < 0.15 and t.dim() >= 2:
            t = t.transpose(0, -1)
        elif kind < 0.25 and t.dim() >= 1 and t.shape[-1] > 1:
            t = t.narrow(-1, 1, t.shape[-1] - 1)
        elif kind < 0.35 and t.dim() >= 1 and t.shape[0] == 1:
            t = t.expand(3, *t.shape[1:])
        elif kind < 0.42:
            t = t.to("meta")
        return t

    def new_pool(self):
        self.pool = [self.tensor() for _ in range(16)]

    def small_int(self):
        return self.rng.choice([-4, -3, -2, -1, 0, 0, 1, 1, 2, 2, 3, 4, 5])

    def huge_int(self):
        # Never mid-sized: a size of 2**31 would really be allocated.
        return self.rng.choice([2 ** 40, 2 ** 62, 2 ** 63 - 1, -2 ** 63, -2 ** 40, 2 ** 64, -1])

    def number(self):
        r = self.rng
        return r.choice([0, 1, -1, 2, 3, 255, 256, -129, 0.5, -2.5, 1e10, 1e300, -1e-300,
                         float("nan"), float("inf"), -float("inf"), True, False,
                         self.np.float32(1.5), self.np.int64(3), self.np.bool_(True), 2 ** 62])

    def junk(self):
        r, ig = self.rng, self.ignis
        return r.choice([None, "x", "floor", "tanh", "cpu", "meta", "cuda", "cuda:7", b"bytes",
                         1j, object(), [], [[1, 2], [3]], (1, "a"), {"a": 1}, [1.5, 2],
                         ig.float32, ig.device("meta"), self.np.zeros(3), self.np.float64(2.0),
                         ig.Tensor, len, [self.rng.choice(self.pool)], slice(1, 2), ...])

    def int_list(self):
        r = self.rng
        n = r.choice([0, 1, 1, 2, 2, 3, 4])
        v = [self.small_int() for _ in range(n)]
        if r.random() < 0.1 and v:
            v[r.randrange(len(v))] = self.huge_int()
        return v if r.random() < 0.7 else tuple(v)

    def value_for(self, typ):
        r, ig = self.rng, self.ignis
        if r.random() < 0.12:
            return self.junk()
        if r.random() < 0.08:
            return r.choice([self.number(), r.choice(self.pool), self.int_list()])
        base = typ.rstrip("?")
        if base == "Tensor":
            if typ.endswith("?") and r.random() < 0.2:
                return None
            return r.choice(self.pool) if r.random() < 0.85 else self.number()
        if base in ("Tensor[]", "Tensor?[]"):
            return [r.choice(self.pool) for _ in range(r.randrange(0, 4))]
        if base == "int":
            return self.small_int() if r.random() < 0.85 else self.huge_int()
        if base == "int[]":
            return self.int_list() if r.random() < 0.9 else self.small_int()
        if base in ("float", "Scalar"):
            return self.number()
        if base == "float[]":
            return [self.number() for _ in range(r.randrange(0, 3))]
        if base == "bool":
            return r.choice([True, False, 1, None])
        if base == "str":
            return r.choice(["none", "tanh", "floor", "trunc", "mean", "", "x" * 50])
        if base == "ScalarType":
            return r.choice(self.dtypes + [int, float, bool, "float32", 3])
        if base == "Device":
            return r.choice(["cpu", "meta", "cuda", "cuda:0", "xla", ig.device("cpu"), -1, 0])
        return self.junk()

    # ---- calls ------------------------------------------------------------------------
    def make_call(self):
        r, ig = self.rng, self.ignis
        name = r.choice(self.ops)
        op = ig._ops.get(name)
        args = _parse_schema(r.choice(op.schemas))
        pos, kw = [], {}
        for typ, aname, has_default, kwarg_only in args:
            if has_default and r.random() < 0.5:
                continue
            if not has_default and r.random() < 0.03:
                continue  # a missing required argument
            v = self.value_for(typ)
            if kwarg_only or r.random() < 0.1:
                kw[aname] = v
            else:
                pos.append(v)
        if r.random() < 0.05:
            pos.append(self.value_for("Tensor"))  # one too many
        if r.random() < 0.05:
            kw[r.choice(["bogus", "input", "out", "dim", "dtype"])] = self.value_for("int")
        is_method = ig._ops._table[name][2]
        if is_method and pos and isinstance(pos[0], ig.Tensor) and r.random() < 0.5:
            fn = getattr(pos[0], name, None) or op
            desc_fn = f"<Tensor>.{name}"
            call_args = pos[1:] if fn is not op else pos
        else:
            fn, desc_fn, call_args = op, f"ignis.ops.{name}", pos
        return name, fn, call_args, kw, desc_fn

    def describe(self, v):
        ig = self.ignis
        if isinstance(v, ig.Tensor):
            return (f"T({str(v.dtype)[6:]},{tuple(v.shape)},{v.stride()},"
                    f"{v.device.type})")
        if isinstance(v, (list, tuple)):
            inner = ", ".join(self.describe(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner})"
        return repr(v)[:40]

    def touch(self, result):
        """Read every element of a (small) result, so a bad view is noticed."""
        ig = self.ignis
        items = result if isinstance(result, (tuple, list)) else [result]
        for t in items:
            if isinstance(t, ig.Tensor) and t.device.type == "cpu" and t.numel() <= 100000:
                t.clone()
                repr(t)

    def run(self, ncalls, log):
        bad, reached, outcomes = [], set(), {}
        for i in range(ncalls):
            if i % 100 == 0:
                self.new_pool()
            name, fn, args, kw, desc_fn = self.make_call()
            desc = (f"{desc_fn}({', '.join(self.describe(a) for a in args)}"
                    + "".join(f", {k}={self.describe(v)}" for k, v in kw.items()) + ")")
            log.write(f"{i}: {desc}\n")
            log.flush()
            try:
                self.touch(fn(*args, **kw))
                reached.add(name)
                outcome = "ok"
            except Exception as e:  # noqa: BLE001 - checking which exceptions escape
                outcome = type(e).__name__
                if outcome not in ALLOWED:
                    bad.append(f"{desc} -> {outcome}: {e}")
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        return bad, reached, outcomes


def _main(seed, ncalls):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _checkout  # noqa: F401
    import ignis
    ignis.set_num_threads(2)
    path = os.environ.get("IGNIS_FUZZ_LOG", os.devnull)
    with open(path, "w") as log:
        bad, reached, outcomes = _Fuzzer(seed).run(ncalls, log)
    print(json.dumps({"calls": ncalls, "ops": len(reached), "outcomes": outcomes, "bad": bad}))


if __name__ == "__main__":
    _main(int(sys.argv[1]), int(sys.argv[2]))
