"""Fourier transforms: ignis.fft beside torch.fft (pocketfft on the CPU), each library in its own
process, the same inputs and thread count. Rows: a batch of power-of-two rffts (an audio
frame's spectrum), complex ffts of a mixed-radix length and of a prime (Bluestein in ignis),
a 2-D fft of an image, and stft of a second of 16 kHz audio (Whisper's 400-point frames, hop
160). Prints ms per call (median) and the ratio ignis / torch.

    python3 bench/fft.py [--threads N] [--reps R]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from children import child_result  # noqa: E402

ROWS = {
    "rfft 64 x 4096 f32": lambda lib, x: lib.fft.rfft(x["frames"]),
    "fft 64 x 3000 c64 (2^3 3 5^3)": lambda lib, x: lib.fft.fft(x["mixed"]),
    "fft 64 x 3001 c64 (prime)": lambda lib, x: lib.fft.fft(x["prime"]),
    "fft2 8 x 256 x 256 c64": lambda lib, x: lib.fft.fft2(x["image"]),
    "stft 16000 samples, n_fft 400, hop 160": lambda lib, x: lib.stft(
        x["audio"], 400, 160, window=x["window"], return_complex=True),
}


def child(lib_name, threads, reps):
    import numpy as np
    if lib_name == "ignis":
        sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
        import _checkout  # noqa: F401
    lib = __import__(lib_name)
    lib.set_num_threads(threads)
    rng = np.random.default_rng(0)

    def c64(*shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    x = {"frames": lib.from_numpy(rng.standard_normal((64, 4096)).astype(np.float32)),
         "mixed": lib.from_numpy(c64(64, 3000)), "prime": lib.from_numpy(c64(64, 3001)),
         "image": lib.from_numpy(c64(8, 256, 256)),
         "audio": lib.from_numpy(rng.standard_normal(16000).astype(np.float32)),
         "window": lib.from_numpy(np.hanning(402)[1:-1].astype(np.float32))}
    out = {}
    for name, fn in ROWS.items():
        fn(lib, x)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(lib, x)
            times.append(time.perf_counter() - t0)
        out[name] = sorted(times)[len(times) // 2] * 1e3
    print("RESULT " + json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.threads, a.reps)
    res = {}
    for lib in ("ignis", "torch"):
        res[lib] = child_result([sys.executable, __file__, "--child", lib, "--threads",
                                 str(a.threads), "--reps", str(a.reps)], lib, 600)
    print(f"{a.threads} threads, median ms per call")
    print(f"| row | ignis | torch | ignis / torch |\n| --- | --- | --- | --- |")
    for name in ROWS:
        i = res["ignis"] and res["ignis"].get(name)
        t = res["torch"] and res["torch"].get(name)
        ratio = f"{i / t:.2f}" if i and t else "-"
        print(f"| {name} | {i:.3f} | {t:.3f} | {ratio} |" if i and t else f"| {name} | {i} | {t} | - |")


if __name__ == "__main__":
    main()
