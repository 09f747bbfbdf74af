"""Classifies fuzz failures against PyTorch's eager mode.

    python3 -m tests.fuzz.torch_ref --backend aot_eager --count 300 --seed 71000
    python3 -m tests.fuzz.torch_ref FILE.py ...     (repro files written by the fuzzer)
    python3 -m tests.fuzz.torch_ref --eager --count 300 --seed 71000   (ignis eager vs torch)

Eager ignis is the fuzzer's oracle; where it and a compiled backend disagree,
this runs the same program under torch 2.x eager (the program's
`import ignis as torch` becomes `import torch`) and says, for the first call
that differs, which side torch agrees with: "eager-differs-from-torch" (the
oracle is wrong), "compiled-differs-from-torch", "both-differ-from-torch" or
"torch-fails" (torch rejects the program). Compares the call's exception,
result and backward outcome (the exception type backward raised, or grads).
Needs torch; the fuzzer itself does not.
"""
import argparse
import collections
import re
import sys
import warnings
from pathlib import Path

from .generator import generate
from .runner import _ignis, compare, float32_inside, run_program


def torch_source(src):
    return re.sub(r"^import ignis as torch$", "import torch", src, flags=re.M)


def _as_ignis(v):
    """torch's records spelled as ignis's (dtype and Size names in values and prints)."""
    if isinstance(v, str):
        return v.replace("torch.", "ignis.")
    if isinstance(v, tuple):
        return tuple(_as_ignis(x) for x in v)
    if isinstance(v, list):
        return [_as_ignis(x) for x in v]
    if isinstance(v, dict):
        return {k: _as_ignis(x) for k, x in v.items()}
    return v


def verdict(src, backend, device="cpu"):
    """(category, verdict, detail) for a program whose compiled run differs from
    eager ignis; None when the two agree."""
    ignis = _ignis()
    import torch
    ignis.compiler.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = run_program(src, None, device=device)
        compiled = run_program(src, backend, device=device)
        try:
            ref = _as_ignis(run_program(torch_source(src), None, lib=torch, device=device))
        except Exception as e:  # noqa: BLE001 - a program torch rejects at module level
            return "?", "torch-fails", f"{type(e).__name__}: {e}"
    loose64 = float32_inside(src)
    fail = compare(compiled, eager, loose64)
    if fail is None:
        return None
    e_vs_t, c_vs_t = compare(eager, ref, loose64), compare(compiled, ref, loose64)
    if e_vs_t and c_vs_t:
        v = "both-differ-from-torch"
    elif e_vs_t:
        v = "eager-differs-from-torch"
    elif c_vs_t:
        v = "compiled-differs-from-torch"
    else:
        v = "torch-agrees-with-both"  # within tolerance, e.g. rounding
    call = int(re.match(r"call (\d+)", fail.detail).group(1)) if fail.detail.startswith("call") \
        else 0
    detail = "; ".join(f"{who}: {_outcome(recs[call])}" for who, recs in
                       (("ignis eager", eager), (backend, compiled), ("torch", ref))
                       if call < len(recs))
    return fail.category, v, f"call {call}: {detail}"


def eager_verdict(src, device="cpu"):
    """A Failure where eager ignis differs from torch's eager mode (torch as the
    reference), or None; "torch-fails" when torch rejects the program."""
    ignis = _ignis()
    import torch
    from .runner import Failure
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = run_program(src, None, device=device)
        try:
            ref = _as_ignis(run_program(torch_source(src), None, lib=torch, device=device))
        except Exception as e:  # noqa: BLE001
            return Failure("torch-fails", f"{type(e).__name__}: {e}")
    return compare(eager, ref, float32_inside(src))


def _outcome(rec):
    """A call's exception and backward, in a few words."""
    if rec["exc"]:
        return f"raised {rec['exc']}"
    g = rec.get("grads")
    if g is None:
        return "returned (no backward)"
    if g[:1] == ("raised",):
        return f"backward raised {g[1]}: {rec.get('grads_msg', '')[:90]}"
    return "backward ran"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m tests.fuzz.torch_ref",
                                description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", help="repro files (default: generated seeds)")
    p.add_argument("--backend", default="aot_eager")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", default="", help="only failures of this category")
    p.add_argument("--eager", action="store_true",
                   help="compare eager ignis with torch's eager mode (no compiled run): "
                        "'compiled' in the details is ignis, 'eager' is torch")
    a = p.parse_args(argv)
    if a.eager:
        counts = collections.Counter()
        for s in range(a.seed, a.seed + a.count):
            fail = eager_verdict(generate(s))
            if fail is None or (a.only and fail.category != a.only):
                continue
            counts[fail.category] += 1
            print(f"seed {s}: {fail.category}\n  {fail.detail.splitlines()[0][:300]}")
        print(f"[torch_ref] eager ignis vs torch: {a.count} programs, {sum(counts.values())} differ")
        for cat, n in sorted(counts.items()):
            print(f"  {cat}: {n}")
        return 0
    if a.files:
        progs = []
        for f in a.files:
            ns = {}
            text = Path(f).read_text()
            prog = re.search(r"PROGRAM = r'''\n(.*?)'''", text, re.S).group(1)
            backend = re.search(r"BACKEND = '(\w+)'", text).group(1)
            progs.append((f, prog, backend))
    else:
        progs = [(f"seed {s}", generate(s), a.backend) for s in range(a.seed, a.seed + a.count)]
    counts = collections.Counter()
    for name, src, backend in progs:
        v = verdict(src, backend)
        if v is None or (a.only and v[0] != a.only):
            continue
        counts[(v[0], v[1])] += 1
        print(f"{name}: {v[0]}: {v[1]}\n  {v[2].splitlines()[0] if v[2] else ''}")
    for (cat, v), n in sorted(counts.items()):
        print(f"  {cat} / {v}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
