"""Compiled row kernels on the GPU under ignis's `config.cuda` knobs, beside torch.compile.

Rows (bfloat16): `ln768`, layer_norm(x + r) over 4096 x 768 (GPT-2-small's residual add and
layer norm: a short row, about one round of blocks); `layer_norm` over 16384 x 4096 and
`softmax` over 8192 x 8192 (bench/gpu.py's rows: long rows, many rounds). Each setting of
`row_vectors_per_thread:row_prefetch[:row_occupancy[:row_one_wave]]` compiles every row in a child process of its own (a
fresh cache directory), checks the output against ignis eager, and times it with CUDA events
(median of rounds, bench/gpu.py's Timer); `--peer` adds torch.compile on the same inputs.
Prints us per call, the GB/s moved (inputs read once, output written once) and each setting
against the first. Skips (exit 0) without a GPU. The figures behind docs/compiler.md's row
prefetch rule are in docs/benchmarks.md ("Compiled on the GPU", run 6).

    PYTHONPATH=python python3 bench/gpu_rows.py [--settings 4:0,4:1,2:1,1:1] [--rows ...]
        [--peer]
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROWS = ["ln768", "layer_norm", "softmax"]


def case(row, lib, wrap):
    """(call, eager_call, bytes moved) for one row, inputs drawn by NumPy from one seed."""
    import numpy as np
    rng = np.random.default_rng(0)
    F = lib.nn.functional

    def t(shape, scale=1.0, shift=0.0):
        a = shift + scale * rng.standard_normal(shape).astype(np.float32)
        return lib.from_numpy(a).to("cuda").to(lib.bfloat16)
    if row == "ln768":
        n = 768
        args = [t((4096, n)), t((4096, n)), t((n,), 0.1, 1.0), t((n,), 0.1)]

        def fn(x, r, w, b):
            return F.layer_norm(x + r, (n,), w, b)
        nbytes = 3 * 4096 * n * 2
    elif row == "layer_norm":
        n = 4096
        args = [t((16384, n)), t((n,), 0.1, 1.0), t((n,), 0.1)]

        def fn(x, w, b):
            return F.layer_norm(x, (n,), w, b)
        nbytes = 2 * 16384 * n * 2
    elif row == "softmax":
        args = [t((8192, 8192))]

        def fn(x):
            return lib.softmax(x, -1)
        nbytes = 2 * 8192 * 8192 * 2
    else:
        raise ValueError(row)
    compiled = wrap(fn)
    return (lambda: compiled(*args)), (lambda: fn(*args)), nbytes


def child(args):
    import numpy as np
    sys.path.insert(0, str(ROOT / "bench"))
    import gpu as G
    lib = G.load_lib("ignis" if args.impl == "ignis" else "torch")
    why = G.cuda_missing(lib, "cuda")
    if why:
        print("RESULT " + json.dumps({"skipped": why}))
        return
    if args.impl == "ignis":
        import ignis._inductor.config as config
        vectors, prefetch, *rest = args.setting.split(":")
        config.cuda.row_vectors_per_thread = int(vectors)
        config.cuda.row_prefetch = bool(int(prefetch))
        for knob, value in zip(("row_occupancy", "row_one_wave"), rest):
            setattr(config.cuda, knob, bool(int(value)))
    timer = G.Timer(lib, "cuda")
    out = {}
    with lib.no_grad():
        for row in args.rows.split(","):
            call, eager, nbytes = case(row, lib, lib.compile)
            err = float(np.abs(call().float().cpu().numpy() - eager().float().cpu().numpy()).max())
            seconds, _ = timer.median(call, 1.0)
            out[row] = {"us": seconds * 1e6, "gbs": nbytes / seconds / 1e9, "err": err}
    print("RESULT " + json.dumps(out))


def run(impl, setting, rows):
    env = dict(os.environ, IGNIS_CACHE_DIR=tempfile.mkdtemp(prefix="ignis-rows-"),
               TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="torch-rows-"))
    proc = subprocess.run([sys.executable, __file__, "--child", "--impl", impl, "--setting",
                           setting, "--rows", rows], capture_output=True, text=True, env=env,
                          timeout=900)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-4000:])
    raise SystemExit(f"{impl} {setting}: the child failed (exit {proc.returncode})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--settings", default="4:0,4:1,2:1,1:1",
                    help="row_vectors_per_thread:row_prefetch[:row_occupancy[:row_one_wave]], "
                         "comma-separated (a knob left out: its default)")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--peer", action="store_true", help="add torch.compile")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--impl", default="ignis", help=argparse.SUPPRESS)
    ap.add_argument("--setting", default="4:1", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    for row in args.rows.split(","):
        if row not in ROWS:
            ap.error(f"unknown row {row!r}: expected some of {','.join(ROWS)}")
    settings = args.settings.split(",")
    for s in settings:
        v, p, *o = s.split(":") + ([] if s.count(":") else [""])
        if not (v.isdigit() and 1 <= int(v) <= 8 and p in ("0", "1") and
                len(o) <= 2 and all(x in ("0", "1") for x in o)):
            ap.error(f"--settings: {s!r} is not VECTORS:PREFETCH[:OCCUPANCY[:ONE_WAVE]] "
                     "(1-8, then 0 or 1 each)")
    results = {("ignis", s): run("ignis", s, args.rows) for s in settings}
    if any("skipped" in r for r in results.values()):
        print("skipped:", next(r["skipped"] for r in results.values() if "skipped" in r))
        return
    if args.peer:
        results[("torch.compile", "")] = run("torch", "", args.rows)
    cols = list(results)
    names = [f"ignis {s} (vectors:prefetch[:occupancy[:one_wave]])" if impl == "ignis" else impl
             for impl, s in cols]
    print("| row | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(cols))
    for row in args.rows.split(","):
        first = results[cols[0]][row]["us"]
        cells = []
        for c in cols:
            r = results[c][row]
            cells.append(f"{r['us']:.1f} us, {r['gbs']:.0f} GB/s ({r['us'] / first:.2f})")
        print(f"| {row} | " + " | ".join(cells) + " |")
    for c in cols:
        for row in args.rows.split(","):
            err = results[c][row]["err"]
            if err > 0.1:
                print(f"MISMATCH {c} {row}: max |compiled - eager| = {err:.3g}")
                sys.exit(1)


if __name__ == "__main__":
    main()
