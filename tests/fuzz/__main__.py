"""Command line: python3 -m tests.fuzz --backend B --count N --seed S [--out DIR] [--minimize]

Generates programs seed, seed+1, ..., runs each eagerly and compiled in a
worker process, writes every failure as a standalone repro file to --out
(shrunk first with --minimize), and prints a summary by failure category.
Exit status 1 when any program failed.
"""
import ast
import argparse
import collections
import sys
import time
from pathlib import Path

from .generator import generate
from .minimize import minimize
from .runner import Worker, write_repro, run_repro

BACKENDS = ("eager", "aot_eager", "inductor")


def fuzz(backend, count, seed, out=None, do_minimize=False, timeout=120.0, log=print, skip=(),
         per_class=3, device="cpu", knobs=None, sizes=0):
    """Runs `count` programs; returns {category: [(seed, repro path or None)]}.

    With do_minimize, the first `per_class` failures of each category are
    shrunk (the others are written as generated). `device`: where the
    programs' inputs live ("cuda": eager on the GPU is the reference).
    `knobs`: ignis._inductor.config settings for the compiled runs. `sizes`: call
    each program at that many distinct sizes, each compiled (generator.Gen).
    """
    worker = Worker(timeout=timeout, knobs=knobs)
    failures = collections.defaultdict(list)
    t0 = time.time()
    try:
        for s in range(seed, seed + count):
            src = generate(s, skip, sizes)
            fail, secs = worker.check(src, backend, device)
            if fail is None:
                continue
            log(f"[fuzz] seed {s} ({backend}, {device}): {fail.category}")
            path = None
            if out:
                Path(out).mkdir(parents=True, exist_ok=True)
                shrink = do_minimize and len(failures[fail.category]) < per_class
                if shrink:
                    src = minimize(src, backend, fail.category, worker, log=log, device=device)
                    again, _ = worker.check(src, backend, device)
                    fail = again or fail
                slug = fail.category.replace(":", "-")
                where = "" if device == "cpu" else f"_{device}"
                path = Path(out) / f"{backend}{where}_seed{s}_{slug}.py"
                write_repro(path, src, backend, fail, device, knobs)
                if shrink:  # the repro must fail on its own, in a fresh process
                    alone = run_repro(path, timeout=timeout)
                    if alone != fail.category:
                        log(f"  (alone, the repro gives {alone}; kept)")
                log(f"  repro: {path}")
            failures[fail.category].append((s, path))
    finally:
        worker.close()
    log(f"[fuzz] {backend} ({device}): {count} programs in {time.time() - t0:.0f} s, "
        f"{sum(map(len, failures.values()))} failed")
    for cat, items in sorted(failures.items()):
        log(f"  {cat}: {len(items)} (seeds {', '.join(str(s) for s, _ in items[:12])}"
            f"{', ...' if len(items) > 12 else ''})")
    return failures


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m tests.fuzz", description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="eager", choices=BACKENDS + ("all", "torch"),
                   help="'torch': eager ignis against torch's eager mode (needs torch; not in "
                        "'all'); in its repros 'compiled' is ignis and 'eager' is torch")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="directory for repro files")
    p.add_argument("--minimize", action="store_true", help="shrink each failure first (needs --out)")
    p.add_argument("--per-class", type=int, default=3,
                   help="with --minimize, shrink only the first N failures of each category")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per program")
    p.add_argument("--skip", default="", help="comma-separated statement kinds to leave out")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                   help="where the programs' inputs live (cuda: needs a GPU)")
    p.add_argument("--sizes", type=int, default=0, metavar="N",
                   help="call each program at N distinct sizes (at most 64), every size "
                        "compiled at its first call: the dynamic-shape paths")
    p.add_argument("--show", action="store_true", help="print program --seed and exit")
    p.add_argument("--knob", action="append", default=[], metavar="NAME=VALUE",
                   help="an ignis._inductor.config setting for the compiled runs (repeatable), "
                        "e.g. column_sums_min_rows=2: the programs' few rows then reach "
                        "schedules meant for larger tensors")
    a = p.parse_args(argv)
    knobs = {}
    for kv in a.knob:
        name, _, value = kv.partition("=")
        try:
            knobs[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            p.error(f"--knob {kv}: the value must be a Python literal")
    skip = [x for x in a.skip.split(",") if x]
    if not 0 <= a.sizes <= 64:
        p.error("--sizes: between 0 and 64")
    if a.show:
        print(generate(a.seed, skip, a.sizes))
        return 0
    if a.device == "cuda":
        from .runner import _ignis
        if not _ignis().cuda.is_available():
            p.error("--device cuda: ignis.cuda.is_available() is False on this machine")
    failed = False
    for backend in (BACKENDS if a.backend == "all" else (a.backend,)):
        failed |= bool(fuzz(backend, a.count, a.seed, a.out, a.minimize, a.timeout, skip=skip,
                            per_class=a.per_class, device=a.device, knobs=knobs,
                            sizes=a.sizes))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
