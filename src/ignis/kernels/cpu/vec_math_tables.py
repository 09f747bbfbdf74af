"""Prints vec_math.h's constants for sin/cos and log (needs mpmath):

- kTwoPowModTwoPi{0,1,2}[e]: 2^e mod 2pi for e in [1, 104] (a float |x| >=
  2^24 is m * 2^e with an integer m < 2^24), in three parts of at most 28
  bits, so that m times each part is exact in double; row 0 is 1 (|x| < 2^24
  reduces as it is), row 105 NaN (inf and NaN arguments);
- pi/2 in three parts, the first two of 26 bits (n * part exact for n < 2^27);
- the Chebyshev fit of (log1p(f) - f) / f^2 on [sqrt(1/2) - 1, sqrt(2) - 1]
  (degree 12) and its maximum error.

    python3 src/ignis/kernels/cpu/vec_math_tables.py
"""
import mpmath as mp

mp.mp.prec = 400


def split(v, parts, bits):
    """v as `parts` doubles, all but the last truncated to `bits` bits."""
    out = []
    for i in range(parts):
        if v == 0:
            out.append(mp.mpf(0))
            continue
        if i == parts - 1:
            d = mp.mpf(float(v))
        else:
            scale = mp.mpf(2) ** (bits - 1 - mp.floor(mp.log(abs(v), 2)))
            d = mp.floor(v * scale) / scale
        out.append(d)
        v -= d
    return out


def main():
    rows = [("0x1p+0", "0x0p+0", "0x0p+0")]
    for e in range(1, 105):
        rows.append(tuple(float(p).hex() for p in split(mp.fmod(mp.mpf(2) ** e, 2 * mp.pi), 3, 28)))
    rows.append(('__builtin_nan("")',) * 3)
    for k in range(3):
        print(f"inline constexpr double kTwoPowModTwoPi{k}[106] = {{")
        for j in range(0, len(rows), 3):
            print("    " + ", ".join(r[k] for r in rows[j:j + 3]) + ",")
        print("};")
    print("pi/2 parts:", [float(p).hex() for p in split(mp.pi / 2, 3, 26)])
    print("2/pi:", float(2 / mp.pi).hex())
    mp.mp.prec = 200
    g = lambda f: (mp.log1p(f) - f) / f ** 2 if f != 0 else mp.mpf(-0.5)  # noqa: E731
    poly, err = mp.chebyfit(g, [mp.sqrt(0.5) - 1, mp.sqrt(2) - 1], 13, error=True)
    print("log P (highest degree first):", [float(c).hex() for c in poly], "max error",
          mp.nstr(err, 3))


if __name__ == "__main__":
    main()
