"""Resume functions (src/ignis/capture/resume.cpp) through the test binding.

Each case runs a function three times:
  record: the k-th call of `brk` snapshots the caller's locals and stops it;
  ref:    the function runs to the end (or raises);
  resume: a resume function made for the instruction after that `brk` call
          runs with the stack the original had there (worked out from the
          bytecode shape the case's comment describes; NULL slots marked) and
          the live locals from the snapshot.
record + resume must give what ref gives: the return value, the calls of
`brk`, and for raising cases the exception and the traceback positions.
Offsets come from `dis` at test time, so the cases hold on 3.11 and 3.12.
"""
import dis
import sys
import traceback

import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
from ignis import _C

cap = _C._capture

NULL = object()  # a NULL stack slot (CPython's call protocol)


class _Stop(Exception):
    pass


class Breaker:
    """The break point: logs its argument and returns it."""

    def __init__(self, start=0, stop_at=None):
        self.log = []
        self.n = start
        self.stop_at = stop_at
        self.snapshot = None

    def __call__(self, x):
        self.n += 1
        self.log.append(x)
        if self.n == self.stop_at:
            self.snapshot = dict(sys._getframe(1).f_locals)
            raise _Stop
        return x


brk = Breaker()


def combine(*args, **kw):
    return (args, tuple(sorted(kw.items())))


def advanced(iterable, n):
    it = iter(iterable)
    for _ in range(n):
        next(it)
    return it


# --- helpers -----------------------------------------------------------------

def instructions(code):
    return list(dis.get_instructions(code))


def after_brk_call(code, site):
    """Offset of the instruction after the CALL of the `site`-th `brk(...)`."""
    ins = instructions(code)
    sites = [i for i, x in enumerate(ins) if x.opname == "LOAD_GLOBAL" and x.argval == "brk"]
    i = sites[site] + 1
    while ins[i].opname != "CALL":
        i += 1
    return ins[i + 1].offset


def run(fn, args, kwargs=None):
    try:
        return ("ok", fn(*args, **(kwargs or {})))
    except _Stop:
        raise
    except Exception as e:  # noqa: BLE001 - compared below
        frames = traceback.extract_tb(e.__traceback__)[1:]  # drop run()'s own frame
        where = [(f.lineno, f.end_lineno, f.colno, f.end_colno) for f in frames]
        names = [f.name for f in frames[1:]]
        return ("raised", type(e), str(e), where, names)


def set_brk(b):
    global brk
    brk = b
    return b


def resume_fn(fn, offset, stack, snapshot, live=None):
    """Resume function for fn at offset plus its arguments."""
    code = fn.__code__
    ok, why = cap._can_resume_at(code, offset)
    assert ok, why
    if live is None:
        live = cap._live_locals_at(code, offset)
    # A live local unbound at the break stays unbound in the resume function.
    live = [i for i in live if code.co_varnames[i] in snapshot]
    stack_null = [v is NULL for v in stack]
    r = cap._make_resume_function(code, offset, stack_null, live, fn.__globals__, fn.__closure__)
    args = [v for v in stack if v is not NULL] + [snapshot[code.co_varnames[i]] for i in live]
    return r, args


def check_case(make, args, site, k, below, extra=None):
    """make() -> function; args() -> (args, kwargs); below(snapshot) -> the
    stack under brk's result at the break; extra(fn) -> state to compare."""
    fn_ref = make()
    a, kw = args()
    ref_brk = set_brk(Breaker())
    ref = run(fn_ref, a, kw)
    ref_extra = extra(fn_ref) if extra else None

    fn = make()
    a, kw = args()
    rec = set_brk(Breaker(stop_at=k))
    with pytest.raises(_Stop):
        fn(*a, **kw)
    snap = rec.snapshot
    offset = after_brk_call(fn.__code__, site)
    result = rec.log[-1]
    stack = list(below(snap)) + [result]
    r, rargs = resume_fn(fn, offset, stack, snap)
    res_brk = set_brk(Breaker(start=k))
    got = run(r, rargs)
    set_brk(Breaker())
    assert rec.log + res_brk.log == ref_brk.log
    assert got == ref
    if extra:
        assert extra(fn) == ref_extra
    return r


# --- functions under test ------------------------------------------------------

def straight(a, b):
    x = a + 1
    y = brk(x)
    z = x * 2 + b
    return x, y, z


def pending_call(a):
    t = [a]
    return combine(a, brk(a + 1), len(t))  # stack: NULL, combine, a


def pending_nested(a, b):
    return combine(a, combine(b, brk(a * b)), k=3)  # NULL, combine, a, NULL, combine, b


def pending_method(t, a):
    t.append(brk(a))  # NULL, t.append (or append, t)
    return t


def loop_range(n):
    total = 0
    for i in range(n):
        total = total + brk(i) * 10 + i  # stack: range iterator, total
    return total, i


def loop_list(xs):
    out = []
    for x in xs:
        out.append(brk(x) * 2)  # iterator, NULL, out.append
    return out


def loop_break(xs, limit):
    acc = 0
    for x in xs:
        v = brk(x)  # iterator
        if v > limit:
            break
        acc += v
    else:
        acc = -1
    return acc, x


def loop_nested(n, m):
    pairs = []
    for i in range(n):
        for j in range(m):
            pairs.append((i, j, brk(i * m + j)))  # it_i, it_j, NULL, pairs.append, i, j
    return pairs


def while_loop(n):
    i = 0
    s = 0
    while i < n:
        s += brk(i)  # s
        i += 1
    return s, i


def branches(x):
    y = brk(x)
    if y > 3:
        r = "big"
    elif y < 0:
        r = "neg"
    else:
        r = "small"
    while y > 0:
        y -= 2
    return r, y


def make_closure():
    base = 10
    hits = []

    def inner(a):
        nonlocal base
        v = brk(a) + base
        base = v
        hits.append(v)
        return v, base, list(hits)

    return inner


def make_passthrough():
    base = 5

    def mid(a):
        y = brk(a)
        g = lambda z: z + base  # LOAD_CLOSURE of mid's free variable
        return g(y), base

    return mid


def closure_cells(fn):
    return [c.cell_contents for c in fn.__closure__]


def varargs(a, *rest, **kw):
    y = brk(a)
    return a + y + sum(rest) + kw.get("k", 0), rest, sorted(kw)


def kwonly(a, /, b, *, c=5):
    y = brk(a + b)
    return y * c, a, b


class CM:
    def __init__(self, log, swallow):
        self.log = log
        self.swallow = swallow

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, et, ev, tb):
        self.log.append(("exit", et))
        return self.swallow


def with_after(x, log):
    y = brk(x)
    with CM(log, swallow=True):
        log.append(y)
        if y > 1:
            raise ValueError("swallowed")
        log.append("body done")
    return y, log


def with_raises(x, log):
    y = brk(x)
    with CM(log, swallow=False) as cm:
        log.append(cm.swallow)
        z = [1, 2, 3][y]
    return z


def try_after(x):
    y = brk(x)
    try:
        z = 10 // y
    except ZeroDivisionError as e:
        z = ("div", str(e))
    finally:
        y = y + 100
    return z, y


def try_loop(xs):
    out = []
    for x in xs:
        v = brk(x)  # iterator
        try:
            out.append(10 // v)
        except ZeroDivisionError:
            out.append(None)
            continue
        out.append("ok")
    return out


def raises_after(a):
    y = brk(a)
    z = [10, 20][y]
    return helper_raises(z)


def helper_raises(z):
    if z > 15:
        raise KeyError(z)
    return z


def many_locals(a, b, c):
    l0 = a + 1
    l1 = b + 2
    l2 = c + 3
    l3 = l0 * 2
    l4 = l1 * 3
    l5 = l2 * 4
    l6 = "dead"
    l7 = [l3]
    l8 = brk(l0 + l1)
    l6 = l8 + 1
    l9 = l3 + l4 + l6
    l10 = l7 + [l9]
    return l10, l5, l8, a


def comprehension_after(xs, k):
    # No outer local inside the comprehensions: on 3.11 that would make it a cell.
    y = brk(k)
    v = y + 1  # 3.12 inlines the comprehensions and saves/restores this v
    return [v * 2 for v in xs], {v: v * 3 for v in xs if v}, v


def uses_deleted(a):
    x = a * 2
    y = brk(x)
    del x
    return y


# --- cases ---------------------------------------------------------------------

def noargs(*a, **kw):
    return lambda: (list(a), kw)


CASES = {
    "straight": (lambda: straight, noargs(3, 4), 0, 1, lambda s: []),
    "pending_call": (lambda: pending_call, noargs(5), 0, 1, lambda s: [NULL, combine, s["a"]]),
    "pending_nested": (lambda: pending_nested, noargs(2, 7), 0, 1,
                       lambda s: [NULL, combine, s["a"], NULL, combine, s["b"]]),
    "pending_method": (lambda: pending_method, lambda: ([[1]], {"a": 9}), 0, 1,
                       lambda s: [NULL, s["t"].append]),
    "loop_range_first": (lambda: loop_range, noargs(5), 0, 1,
                         lambda s: [advanced(range(s["n"]), s["i"] + 1), s["total"]]),
    "loop_range_mid": (lambda: loop_range, noargs(5), 0, 3,
                       lambda s: [advanced(range(s["n"]), s["i"] + 1), s["total"]]),
    "loop_range_last": (lambda: loop_range, noargs(4), 0, 4,
                        lambda s: [advanced(range(s["n"]), s["i"] + 1), s["total"]]),
    "loop_list": (lambda: loop_list, noargs([3, 1, 4, 1, 5]), 0, 2,
                  lambda s: [advanced(s["xs"], s["xs"].index(s["x"]) + 1), NULL, s["out"].append]),
    "loop_break_breaks": (lambda: loop_break, noargs([1, 2, 9, 3], 5), 0, 3,
                          lambda s: [advanced(s["xs"], 3)]),
    "loop_break_continues": (lambda: loop_break, noargs([1, 2, 9, 3], 5), 0, 2,
                             lambda s: [advanced(s["xs"], 2)]),
    "loop_break_else": (lambda: loop_break, noargs([1, 2, 3], 5), 0, 2,
                        lambda s: [advanced(s["xs"], 2)]),
    "loop_nested": (lambda: loop_nested, noargs(3, 2), 0, 4,
                    lambda s: [advanced(range(s["n"]), s["i"] + 1), advanced(range(s["m"]), s["j"] + 1),
                               NULL, s["pairs"].append, s["i"], s["j"]]),
    "while_loop": (lambda: while_loop, noargs(4), 0, 2, lambda s: [s["s"]]),
    "branches_big": (lambda: branches, noargs(7), 0, 1, lambda s: []),
    "branches_neg": (lambda: branches, noargs(-2), 0, 1, lambda s: []),
    "branches_small": (lambda: branches, noargs(2), 0, 1, lambda s: []),
    "varargs": (lambda: varargs, lambda: ([1, 2, 3], {"k": 4, "z": 0}), 0, 1, lambda s: []),
    "varargs_empty": (lambda: varargs, noargs(1), 0, 1, lambda s: []),
    "kwonly": (lambda: kwonly, lambda: ([2], {"b": 3, "c": 7}), 0, 1, lambda s: []),
    "with_swallows": (lambda: with_after, lambda: ([5, []], {}), 0, 1, lambda s: []),
    "with_no_raise": (lambda: with_after, lambda: ([1, []], {}), 0, 1, lambda s: []),
    "with_raises": (lambda: with_raises, lambda: ([7, []], {}), 0, 1, lambda s: []),
    "with_ok": (lambda: with_raises, lambda: ([2, []], {}), 0, 1, lambda s: []),
    "try_catches": (lambda: try_after, noargs(0), 0, 1, lambda s: []),
    "try_no_raise": (lambda: try_after, noargs(3), 0, 1, lambda s: []),
    "try_loop": (lambda: try_loop, noargs([1, 0, 2, 0, 5]), 0, 2, lambda s: [advanced(s["xs"], 2)]),
    "raises_index": (lambda: raises_after, noargs(2), 0, 1, lambda s: []),
    "raises_nested": (lambda: raises_after, noargs(1), 0, 1, lambda s: []),
    "no_raise": (lambda: raises_after, noargs(0), 0, 1, lambda s: []),
    "many_locals": (lambda: many_locals, noargs(1, 2, 3), 0, 1, lambda s: []),
    "comprehension_after": (lambda: comprehension_after, noargs([0, 1, 2], 3), 0, 1, lambda s: []),
    "uses_deleted": (lambda: uses_deleted, noargs(4), 0, 1, lambda s: []),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_resume_matches_original(name):
    make, args, site, k, below = CASES[name]
    check_case(make, args, site, k, below)


def test_closure_free_variables():
    # `inner` reads and writes free variables; the resume function shares the
    # original's cells, so the writes land in the same closure.
    check_case(make_closure, noargs(3), 0, 1, lambda s: [], extra=closure_cells)
    f = make_closure()
    assert f.__code__.co_freevars and not f.__code__.co_cellvars


def test_closure_passed_on():
    # mid passes its free variable on to a lambda (LOAD_CLOSURE of a free slot).
    check_case(make_passthrough, noargs(4), 0, 1, lambda s: [], extra=closure_cells)


# --- generated code: long bodies, EXTENDED_ARG ----------------------------------

def _generated(nstmts_before, nlocals=0):
    lines = ["def gen(a):"]
    lines += [f"    v{i} = a + {i}" for i in range(nlocals)]
    lines += [f"    a = a + {i % 3}" for i in range(nstmts_before)]
    lines.append("    y = brk(a)")
    if nlocals:
        lines.append("    return y + " + " + ".join(f"v{i}" for i in range(nlocals)))
    else:
        lines.append("    return y * 2")
    ns = {"__name__": __name__}
    exec(compile("\n".join(lines), "<generated>", "exec"), globals(), ns)
    return ns["gen"]


def test_far_target_needs_extended_jump():
    # The prologue's jump to a target past byte 510 needs EXTENDED_ARG.
    gen = _generated(200)
    assert after_brk_call(gen.__code__, 0) > 600
    check_case(lambda: gen, noargs(1), 0, 1, lambda s: [])


def test_many_locals_near_limit():
    gen = _generated(3, nlocals=200)
    check_case(lambda: gen, noargs(1), 0, 1, lambda s: [])


def test_refuses_renumbering_past_one_byte():
    gen = _generated(3, nlocals=300)
    ok, why = cap._can_resume_at(gen.__code__, after_brk_call(gen.__code__, 0))
    assert not ok and "EXTENDED_ARG" in why


# --- can_resume_at refusals ---------------------------------------------------------

def in_try(x):
    try:
        y = brk(x)
    except ValueError:
        y = 0
    return y


def in_with(x, log):
    with CM(log, swallow=False):
        y = brk(x)
    return y


def has_cells(x):
    y = brk(x)
    return lambda: x + y


def test_refuses_inside_try():
    ok, why = cap._can_resume_at(in_try.__code__, after_brk_call(in_try.__code__, 0))
    assert not ok and "try" in why


def test_refuses_inside_with():
    ok, why = cap._can_resume_at(in_with.__code__, after_brk_call(in_with.__code__, 0))
    assert not ok and "try/with" in why


def test_accepts_after_with():
    # `return y` after the with block is outside its exception-table entries.
    code = in_with.__code__
    ins = instructions(code)
    ret = [a for a, b in zip(ins, ins[1:])
           if a.opname.startswith("LOAD_FAST") and a.argval == "y" and b.opname == "RETURN_VALUE"]
    ok, why = cap._can_resume_at(code, ret[0].offset)
    assert ok, why


def test_refuses_own_cellvars():
    code = has_cells.__code__
    assert code.co_cellvars
    ok, why = cap._can_resume_at(code, after_brk_call(code, 0))
    assert not ok and "cell" in why
    with pytest.raises(ValueError, match="cell"):
        cap._make_resume_function(code, after_brk_call(code, 0), [False], [], globals(), None)


def test_refuses_non_instruction_offsets():
    code = straight.__code__
    off = after_brk_call(code, 0)
    for bad in (off + 1, len(code.co_code) + 2, -2):
        assert not cap._can_resume_at(code, bad)[0]
    # Inline CACHE entries are not instructions.
    call = [i for i in instructions(code) if i.opname == "CALL"][0]
    assert not cap._can_resume_at(code, call.offset + 2)[0]
    # Nor is anything before RESUME.
    inner = make_closure()
    assert not cap._can_resume_at(inner.__code__, 0)[0]


def test_refuses_module_and_class_bodies():
    src = "x = 1\nclass C:\n    y = brk(x)\n    z = y\n"
    mod = compile(src, "<mod>", "exec")
    cls = [c for c in mod.co_consts if hasattr(c, "co_code")][0]
    for code in (mod, cls):
        ok, why = cap._can_resume_at(code, [i for i in instructions(code) if i.opname == "RESUME"][0].offset)
        assert not ok and "module and class" in why


def test_refuses_generators():
    def gen(x):
        yield brk(x)
    ok, why = cap._can_resume_at(gen.__code__, after_brk_call(gen.__code__, 0))
    assert not ok and "generator" in why


# --- liveness --------------------------------------------------------------------------

def live_names(fn, offset):
    return sorted(fn.__code__.co_varnames[i] for i in cap._live_locals_at(fn.__code__, offset))


def test_live_straight():
    assert live_names(straight, after_brk_call(straight.__code__, 0)) == ["b", "x"]


def test_live_overwritten_is_dead():
    # l6 is stored before it is read again; l0..l2 are not read after the break.
    names = live_names(many_locals, after_brk_call(many_locals.__code__, 0))
    assert names == ["a", "l3", "l4", "l5", "l7"]


def test_live_loop_carried():
    # i is read after the break and after the loop; total's old value is
    # already on the stack and it is stored before it is read again; n is
    # not read again (the range iterator is on the stack).
    names = live_names(loop_range, after_brk_call(loop_range.__code__, 0))
    assert names == ["i"]
    # In while_loop, i and n are read in the next iteration.
    names = live_names(while_loop, after_brk_call(while_loop.__code__, 0))
    assert names == ["i", "n"]


def test_live_through_exception_handler():
    def f(a, b):
        q = a * 2
        y = brk(a)
        try:
            r = 1 // y
        except ZeroDivisionError:
            return q  # only the handler reads q
        return r + b
    assert live_names(f, after_brk_call(f.__code__, 0)) == ["b", "q"]


def test_live_delete_is_a_use():
    assert live_names(uses_deleted, after_brk_call(uses_deleted.__code__, 0)) == ["x"]


def test_live_sorted_and_in_range():
    for fn in (straight, loop_list, branches, try_loop, many_locals, varargs):
        code = fn.__code__
        for ins in instructions(code):
            live = cap._live_locals_at(code, ins.offset)
            assert live == sorted(set(live))
            assert all(0 <= i < len(code.co_varnames) for i in live)


def test_live_at_entry_is_arguments_read():
    code = straight.__code__
    first = [i for i in instructions(code) if i.opname == "RESUME"][0]
    assert live_names(straight, first.offset) == ["a", "b"]


# --- code object shape ------------------------------------------------------------------

def test_code_shape_and_cache():
    code = pending_call.__code__
    off = after_brk_call(code, 0)
    live = cap._live_locals_at(code, off)
    f1 = cap._make_resume_function(code, off, [True, False, False, False], live, globals(), None)
    f2 = cap._make_resume_function(code, off, [True, False, False, False], live, globals(), None)
    f3 = cap._make_resume_function(code, off, [True, False, False, False], [], globals(), None)
    rc = f1.__code__
    assert rc is f2.__code__ and rc is not f3.__code__
    assert rc.co_name.startswith("ignis_resume_in_pending_call_at_")
    assert rc.co_name.endswith(f"_{off}")
    assert f1.__qualname__ == f"pending_call.{rc.co_name}"
    assert rc.co_varnames[:3] == ("___stack1", "___stack2", "___stack3")
    assert rc.co_argcount == 3 + len(live)
    assert rc.co_firstlineno == code.co_firstlineno
    assert sorted(rc.co_varnames[3:]) == sorted(code.co_varnames)
    assert not rc.co_flags & (0x04 | 0x08)
    # Body instructions keep their positions (shifted by the prologue).
    shift = len(rc.co_code) - len(code.co_code)
    orig = list(code.co_positions())
    new = list(rc.co_positions())
    assert new[shift // 2:] == orig
    assert all(p == (None, None, None, None) for p in new[:shift // 2])


def _stdlib_codes():
    import argparse
    import ast
    import difflib
    import inspect
    import json.decoder
    import json.encoder
    import textwrap
    import types
    seen, out = set(), []

    def walk(code):
        if id(code) in seen:
            return
        seen.add(id(code))
        out.append(code)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                walk(c)

    for mod in (argparse, ast, difflib, inspect, json.decoder, json.encoder, textwrap, dis):
        for obj in vars(mod).values():
            for f in [obj] + (list(vars(obj).values()) if isinstance(obj, type) else []):
                f = getattr(f, "__func__", f)
                if isinstance(f, types.FunctionType) and f.__module__ == mod.__name__:
                    walk(f.__code__)
    return out


def test_structure_over_stdlib_codes():
    # Build resume code at several accepted offsets of many real code objects
    # and check, instruction by instruction, that the body is the original:
    # same opcodes, local/free opcodes naming the same variables, jumps
    # pointing to the same (shifted) instructions, same positions, shifted
    # exception table.
    checked = 0
    for code in _stdlib_codes():
        ins = instructions(code)
        accepted = [i.offset for i in ins if cap._can_resume_at(code, i.offset)[0]]
        if code.co_cellvars or code.co_flags & 0x2a0:
            assert not accepted
            continue
        for off in accepted[:: max(1, len(accepted) // 4)]:
            live = cap._live_locals_at(code, off)
            stack_null = [True, False][:code.co_stacksize]
            nstack = stack_null.count(False)
            fn = cap._make_resume_function(code, off, stack_null, live, {},
                                           tuple(types_cell() for _ in code.co_freevars) or None)
            rc = fn.__code__
            assert len(set(rc.co_varnames)) == len(rc.co_varnames)
            assert rc.co_varnames[nstack:nstack + len(live)] == tuple(code.co_varnames[i] for i in live)
            shift = len(rc.co_code) - len(code.co_code)
            new = [i for i in instructions(rc) if i.offset >= shift]
            assert len(new) == len(ins)
            for a, b in zip(ins, new):
                assert (a.opname, a.offset + shift) == (b.opname, b.offset)
                if a.opcode in dis.haslocal or a.opcode in dis.hasfree:
                    assert a.argval == b.argval
                elif a.opcode in dis.hasjrel or a.opcode in dis.hasjabs:
                    assert a.argval + shift == b.argval
                else:
                    assert a.arg == b.arg
            assert list(rc.co_positions())[shift // 2:] == list(code.co_positions())
            shifted = [(e.start + shift, e.end + shift, e.target + shift, e.depth, e.lasti)
                       for e in dis._parse_exception_table(code)]
            assert [(e.start, e.end, e.target, e.depth, e.lasti)
                    for e in dis._parse_exception_table(rc)] == shifted
            # The prologue's jump lands on the target.
            pro = [i for i in instructions(rc) if i.offset < shift]
            assert pro[-1].opname == "JUMP_FORWARD" and pro[-1].argval == off + shift
            checked += 1
    assert checked > 200


def types_cell():
    x = None
    return (lambda: x).__closure__[0]


def test_varargs_become_plain_locals():
    code = varargs.__code__
    off = after_brk_call(code, 0)
    f = cap._make_resume_function(code, off, [False], cap._live_locals_at(code, off), globals(), None)
    assert f.__code__.co_varnames[:4] == ("___stack0", "a", "rest", "kw")
    assert f.__code__.co_argcount == 4


def test_closure_mismatch_is_an_error():
    inner = make_closure()
    code = inner.__code__
    off = after_brk_call(code, 0)
    with pytest.raises(ValueError, match="free variables"):
        cap._make_resume_function(code, off, [False], [], globals(), None)


def branch_on_call(x, t):
    acc = [t]
    if brk(x):  # the plan's Jump exit: one resume function per successor
        acc.append("taken")
        r = x * 2
    else:
        acc.append("not taken")
        r = -x
    return acc, r, t


@pytest.mark.parametrize("x", [0, 3])
def test_jump_exit_both_successors(x):
    # Resume functions at both successors of the POP_JUMP after `brk(x)`,
    # called the way the plan's Jump exit does: the condition is consumed.
    fn = branch_on_call
    code = fn.__code__
    ins = instructions(code)
    after = after_brk_call(code, 0)
    jump = [i for i in ins if i.offset == after][0]
    assert jump.opname.startswith("POP_JUMP") and jump.opname.endswith(("FALSE", "TRUE"))
    fall = ins[ins.index(jump) + 1].offset
    target = jump.argval
    set_brk(Breaker())
    ref = fn(x, "t")
    rec = set_brk(Breaker(stop_at=1))
    with pytest.raises(_Stop):
        fn(x, "t")
    cond = bool(rec.log[-1])
    jumps = cond == jump.opname.endswith("TRUE")
    r, args = resume_fn(fn, target if jumps else fall, [], rec.snapshot)
    set_brk(Breaker(start=1))
    assert r(*args) == ref
    set_brk(Breaker())


def test_method_pair_on_stack():
    # `t.append(brk(a))` with the (method, self) layout instead of (NULL, bound method).
    check_case(lambda: pending_method, lambda: ([[1]], {"a": 9}), 0, 1,
               lambda s: [list.append, s["t"]])


def test_bad_specs_are_errors():
    code = straight.__code__
    off = after_brk_call(code, 0)
    with pytest.raises(ValueError, match="live local"):
        cap._make_resume_function(code, off, [False], [99], globals(), None)
    with pytest.raises(ValueError, match="live local"):
        cap._make_resume_function(code, off, [False], [1, 1], globals(), None)
    with pytest.raises(TypeError):
        cap._make_resume_function(code, off, [False], [], None, None)
    with pytest.raises(ValueError, match="co_stacksize"):
        cap._make_resume_function(code, off, [False] * (code.co_stacksize + 1), [], globals(), None)
    with pytest.raises(ValueError, match="not the start"):
        cap._make_resume_function(code, off + 1, [False], [], globals(), None)


def test_resume_of_resume():
    # A break inside a resume function: the second resume function's stack
    # parameters must not clash with the first one's (now dead) ___stack locals.
    def f(n):
        a = brk(n)      # break 1
        b = brk(a + 1)  # break 2
        return a, b, n
    set_brk(Breaker())
    ref = f(5)
    rec = set_brk(Breaker(stop_at=1))
    with pytest.raises(_Stop):
        f(5)
    off1 = after_brk_call(f.__code__, 0)
    r1, args1 = resume_fn(f, off1, [rec.log[-1]], rec.snapshot)
    rec2 = set_brk(Breaker(start=1, stop_at=2))
    with pytest.raises(_Stop):
        r1(*args1)
    # In r1's code the brk sites appear once, after the prologue.
    off2 = after_brk_call(r1.__code__, 1)
    r2, args2 = resume_fn(r1, off2, [rec2.log[-1]], rec2.snapshot)
    assert len(set(r2.__code__.co_varnames)) == len(r2.__code__.co_varnames)
    set_brk(Breaker(start=2))
    assert r2(*args2) == ref
    set_brk(Breaker())


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
