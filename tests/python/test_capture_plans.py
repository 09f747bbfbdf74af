"""Plans that rebuild many Python values after the graph.

A plan's value stack starts with inline room for 16 values and doubles; the
second doubling (past 32 values) used to copy from a block it had just
freed, so a list mutated in the frame and rebuilt with more than ~30 items
crashed the process. These cases grow the stack through several doublings.
"""
import subprocess
import sys
import textwrap

import pytest

import _checkout  # noqa: F401
import ignis


@pytest.mark.parametrize("n", [10, 31, 33, 70, 300])
def test_a_long_list_rebuilt_after_the_graph(n):
    items = []

    def f(x):
        for i in range(n):
            items.append(i)
        return x * 2

    ignis.compiler.reset()
    cf = ignis.compile(f, backend="eager")
    x = ignis.ones(3)
    for round_ in range(3):
        expected_len = len(items) + n
        out = cf(x)
        assert len(items) == expected_len
        assert items[-n:] == list(range(n))
        assert out.tolist() == [2.0, 2.0, 2.0]


def test_return_of_many_values():
    def f(x):
        return tuple(x + i for i in range(40)) + tuple(range(40))

    ignis.compiler.reset()
    out = ignis.compile(f, backend="eager")(ignis.zeros(1))
    assert [t.item() for t in out[:40]] == list(range(40)) and out[40:] == tuple(range(40))


def test_issue_repro_eager_calls_between_compiled_ones():
    # The report's program (issue 14): it died with SIGSEGV in its third
    # round; run in a child so that a crash is a failure, not the end of pytest.
    src = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        import _checkout
        import ignis as torch
        HIST = []
        def f(x, n):
            t0 = x[:, :1]
            t5 = torch.mm(t0, t0.transpose(-2, -1))
            m0 = n %% 2
            w0 = 0
            while w0 < 3:
                for i3 in range(1, m0 %% 3 + 1):
                    HIST.append(n)
                    m0 += i3
                w0 += 1
            return t5
        cf = torch.compile(f, backend="eager")
        for i in range(6):
            x = torch.randn(3, 3)
            f(x, 3)
            assert torch.allclose(cf(x, 3), f(x, 3))
        print("ok", len(HIST))
    """) % str(__import__("pathlib").Path(__file__).resolve().parent)
    r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok")
