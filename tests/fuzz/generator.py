"""Random program generator: one seed -> the source text of one program.

A program is a module: `import ignis as torch`, some globals (`g_*`, mutated
by the calls), helper functions (defaults, *args, **kwargs), the function
`f(a, b, buf, k)` under test, and `CALLS`, the list of calls the runner makes
(shapes, dtype, requires_grad, the int `k`, a data seed, and whether the
compiled run calls `f` compiled or eagerly).

Shapes are symbolic so that one program stays valid when a call changes
them: a value's shape is a tuple over 'R', 'C' and 1 (R, C are a's sizes,
which vary between calls), e.g. ('R', 'C'), ('R', 1), ('C',), ().
`a` and `b` are (R, C) floats that may require grad; `buf` is (R, C) and
never requires grad (it is mutated in place and by index assignment); `k` is
a small Python int. Statement kinds are KINDS (the first random stream) and
EXTRA_KINDS (a second one, so that leaving them out gives the older programs).
"""
import random

# Shapes the generator reasons about; a value of any other shape is not made.
RC, CR, R1, C1_, RR, CC, VC, VR, S = (("R", "C"), ("C", "R"), ("R", 1), (1, "C"), ("R", "R"),
                                      ("C", "C"), ("C",), ("R",), ())

UNARY = ["sin()", "tanh()", "sigmoid()", "relu()", "neg()", "abs()", "exp().clamp(max=4.0)",
         "mul(0.5)", "pow(2)", "cos()", "clamp(-1.0, 1.0)", "square().sqrt()", "add(1.0)",
         "float()", "contiguous()", "clone()"]
UNARY_FN = ["torch.sin({x})", "torch.tanh({x})", "F.relu({x})", "F.gelu({x})", "F.silu({x})",
            "torch.sigmoid({x})", "{x} * 2 - 1", "-{x}", "abs({x})", "({x} + 0.5) / 3"]
BINARY = ["+", "-", "*"]

# Statement kinds and their weights (`Gen(seed, features=...)` leaves kinds out).
# A closure gives `f` cell variables, and capture cannot resume such a frame after
# a graph break (it runs the frame eagerly), so closures are rarer.
KINDS = {"assign": 6, "inplace": 2, "buf": 1, "branch": 1, "loop": 1, "print": 1, "item": 1,
         "helper": 1, "closure": 0.4, "container": 1, "global": 1, "no_grad": 1, "py_int": 1,
         "raise": 0.5, "input_nograd": 0.7, "comprehension": 0.7, "nonlocal": 0.3,
         "unpack": 0.7, "meta_branch": 1}

# Kinds drawn from a second random stream (`Gen.r2`): before each top-level statement,
# one of them is added with probability EXTRA_RATE. The first stream never sees them, so
# leaving all of them out (`--skip view_write,view_stale,grad_nest`) gives exactly the
# programs of the generator before they existed (the campaigns up to seed 80999 in
# docs/fuzzing.md).
# - view_write: an in-place op through a view (a row, a column, a transpose's row, a
#   slice), on an intermediate with grad mode on, under no_grad (also on a view of `a` or
#   `b`, leaves that require grad), or through a `.detach()` alias;
# - view_stale: a view taken, then its base written (under no_grad for `a`, `b`), often
#   across a graph break, then the view used: its history follows the write;
# - grad_nest: `enable_grad()` inside `no_grad()`, or `set_grad_enabled(<data or k>)`,
#   around ordinary statements.
# - masked: a data-dependent size (x[mask], nonzero, masked_select, where(cond)), which
#   capture keeps in the graph as an unbacked size: its result reduced or used as rows,
#   its count in arithmetic, returned, or branched on (a graph break at the branch).
# - grad_call: `torch.autograd.grad` of an expression in `a` inside f (a graph break under
#   capture: the graph before it runs its compiled backward right there), its gradient used
#   afterwards; plain, or under create_graph=True and detached (a second derivative through
#   a compiled graph that writes an input, as these programs' graphs often do, is refused).
EXTRA_KINDS = {"view_write": 1, "view_stale": 1, "grad_nest": 0.6, "masked": 0.8,
               "grad_call": 0.5}
EXTRA_RATE = 0.15
# A view of a 2-D value: (text after the value, its symbolic shape from (R, C)).
VIEWS_2D = [("[0]", lambda s: (s[1],)), ("[:, -1]", lambda s: (s[0],)),
            (".t()[1]", lambda s: (s[0],)), ("[1:]", lambda s: s), ("[:, :]", lambda s: s),
            (".t()", lambda s: (s[1], s[0])), (".narrow(1, 0, 1)", lambda s: (s[0], 1)),
            (".unsqueeze(0).squeeze(0)", lambda s: s)]
VIEW_WRITES = ["mul_(0.5)", "add_(1.0)", "clamp_(max=1.0)", "zero_()", "neg_()", "fill_(k)",
               "sub_(0.25)"]

HELPERS = [
    # (name, source); every helper maps tensors of one shape (broadcasting) to that shape
    ("h_scale", "def h_scale(x, y=None, scale=2.0, *rest, **kw):\n"
                "    out = x * scale\n"
                "    if y is not None:\n"
                "        out = out + y\n"
                "    for r in rest:\n"
                "        out = out - r\n"
                "    if kw.get('neg'):\n"
                "        out = -out\n"
                "    return out\n"),
    ("h_mix", "def h_mix(*xs, w=0.5):\n"
              "    acc = xs[0]\n"
              "    for x in xs[1:]:\n"
              "        acc = acc * w + x.tanh()\n"
              "    return acc\n"),
    ("h_kw", "def h_kw(x, **opts):\n"
             "    out = x\n"
             "    for key in sorted(opts):\n"
             "        out = out + opts[key]\n"
             "    return out.sin()\n"),
    ("h_pair", "def h_pair(x, y, flip=False):\n"
               "    if flip:\n"
               "        return y - x, x * y\n"
               "    return x + y, (x - y).abs()\n"),
    ("h_count", "def h_count(x, n=1):\n"
                "    global g_count\n"
                "    g_count += n\n"
                "    return x + g_count\n"),
]


def broadcast(s, t):
    """The broadcast of two symbolic shapes, or None when they do not broadcast."""
    out = []
    for i in range(1, max(len(s), len(t)) + 1):
        a = s[-i] if i <= len(s) else 1
        b = t[-i] if i <= len(t) else 1
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            return None
    return tuple(reversed(out))


class Gen:
    """Builds one program from a seed (`Gen(seed).program()`)."""

    def __init__(self, seed, features=None, sizes=0):
        self.r = random.Random(seed)
        self.seed = seed
        # sizes: call the program at this many distinct (R, C), every call compiled and
        # each size compiled at first sight (COMPILE_EVERY_SIZE): the dynamic-shape paths
        # (symbolic AOT graphs, size-generic code) meet many sizes of one graph
        self.sizes = sizes
        # features: names of statement kinds to leave out (KINDS), and "grad" for calls
        # that never require grad
        self.off = set(features or ())
        self.r2 = random.Random(seed * 1000003 + 7)  # EXTRA_KINDS only
        self.extra = {k: w for k, w in EXTRA_KINDS.items() if k not in self.off}
        self.n = 0
        self.helpers = set()
        self.globals_used = set()

    # ---- values -------------------------------------------------------------------------------
    def fresh(self, prefix="t"):
        self.n += 1
        return f"{prefix}{self.n}"

    def pick(self, pool, shape=None, pred=None):
        c = [v for v in pool if (shape is None or v[1] == shape) and (pred is None or pred(v))]
        return self.r.choice(c) if c else None

    def operand(self, pool, s):
        """A value (expression text) that broadcasts with shape `s` to `s`."""
        r = self.r
        x = r.random()
        if x < 0.15:
            return repr(round(r.uniform(-2, 2), 2))
        if x < 0.22:
            return "k"
        if x < 0.27 and self.floats:
            return r.choice(self.floats)
        c = [v for v in pool if broadcast(s, v[1]) == s]
        return r.choice(c)[0] if c else "1.5"

    def tensor_expr(self, pool):
        """(expression, shape, is_view_of) for a new tensor value."""
        r = self.r
        x, s, base = r.choice(pool)
        kind = r.choice(["unary", "unary", "binary", "binary", "reduce", "view", "matmul",
                         "where", "factory", "cast", "combine", "index", "shape_math"])
        if kind == "unary":
            if r.random() < 0.5:
                return f"{x}.{r.choice(UNARY)}", s, None
            return r.choice(UNARY_FN).format(x=x), s, None
        if kind == "binary":
            op = r.choice(BINARY + ["/", "max", "min"])
            y = self.operand(pool, s)
            if op == "/":
                return f"{x} / ({y} * {y} + 1.0)" if not y[0].isdigit() and y[0] != "-" \
                    else f"{x} / 1.5", s, None
            if op in ("max", "min"):
                if y[0] in "tabg" and y != "k":
                    return f"torch.{op}imum({x}, {y})", s, None
                return f"{x}.clamp({op}={y})", s, None
            return f"{x} {op} {y}", s, None
        if kind == "reduce" and len(s) == 2:
            red = r.choice(["sum", "mean", "amax", "amin", "prod", "sum"])
            dim = r.randrange(2)
            if r.random() < 0.5:
                return f"{x}.{red}({dim}, keepdim=True)", (1, s[1]) if dim == 0 else (s[0], 1), None
            return f"{x}.{red}(dim={dim})", (s[1],) if dim == 0 else (s[0],), None
        if kind == "reduce":
            return f"{x}.sum()", S, None
        if kind == "view" and len(s) == 2:
            v = r.choice(["t", "T", "reshape", "view", "unsq", "row", "col", "narrow", "expand"])
            vb = base or x
            if v in ("t", "T"):
                return (f"{x}.t()" if v == "t" else f"{x}.transpose(0, 1)"), (s[1], s[0]), vb
            if v == "reshape" and 1 not in s:
                return f"{x}.reshape({x}.shape[1], {x}.shape[0])", (s[1], s[0]), None
            if v == "view":
                return f"{x}.contiguous().view(-1).view({x}.shape)", s, None
            if v == "unsq":
                return f"{x}.unsqueeze(0).squeeze(0)", s, vb
            if v == "row":
                return f"{x}[0]", (s[1],), vb
            if v == "col":
                return f"{x}[:, -1]", (s[0],), vb
            if v == "narrow" and s[1] != 1:
                return f"{x}.narrow(1, 0, 1)", (s[0], 1), vb
            if v == "expand" and s[1] == 1:
                return f"{x}.expand({x}.shape[0], a.shape[1])", (s[0], "C"), vb
            return f"{x}[:, :]", s, vb
        if kind == "view" and len(s) == 1:
            d = r.choice([0, 1])
            return f"{x}.unsqueeze({d})", (1, s[0]) if d == 0 else (s[0], 1), base or x
        if kind == "matmul":
            for left in r.sample(pool, len(pool)):
                if len(left[1]) != 2 or left[1][1] == 1:
                    continue
                rights = [v for v in pool if len(v[1]) == 2 and v[1][0] == left[1][1]]
                if rights:
                    right = r.choice(rights)
                    op = r.choice(["{} @ {}", "torch.mm({}, {})", "torch.matmul({}, {})"])
                    return op.format(left[0], right[0]), (left[1][0], right[1][1]), None
                ts = [v for v in pool if v[1] == left[1]]
                if ts:
                    return f"{left[0]} @ {r.choice(ts)[0]}.t()", (left[1][0], left[1][0]), None
            return f"{x} * 1.0", s, None
        if kind == "where":
            y = self.operand(pool, s)
            if r.random() < 0.5:
                return f"torch.where({x} > 0, {x}, {y})", s, None
            return f"{x}.masked_fill({x} < {round(r.uniform(-1, 1), 1)}, 0.25)", s, None
        if kind == "factory":
            f = r.choice([("torch.ones_like({x})", s), ("torch.zeros({x}.shape[0], 1, dtype={x}.dtype, device={x}.device)",
                                                         ("R", 1) if s[:1] == ("R",) else None),
                          ("torch.full_like({x}, k * 0.5)", s),
                          ("torch.arange(a.shape[1], dtype=a.dtype, device=a.device)", VC),
                          ("torch.ones(a.shape[0], a.shape[1], dtype=a.dtype, device=a.device) * k", RC)])
            if f[1] is not None and len(s) >= 1:
                return f[0].format(x=x), f[1], None
            return f"{x} + 0", s, None
        if kind == "cast":
            c = r.choice(["{x}.to(torch.float64).mul(1.5).to({x}.dtype)", "({x} > 0).to({x}.dtype)",
                          "({x} > 0).float() * {x}", "{x}.double().sin().to(a.dtype)",
                          "({x} * 4).to(torch.int64).to({x}.dtype)"])
            return c.format(x=x), s, None
        if kind == "combine" and len(s) == 2:
            y = self.pick(pool, s)
            if r.random() < 0.5:
                return f"torch.stack([{x}, {y[0]}]).sum(0)", s, None
            return f"torch.cat([{x}, {y[0]}], 1).sum(1, keepdim=True)", (s[0], 1), None
        if kind == "index" and len(s) == 2:
            i = r.choice(["[[0, -1]].sum(0, keepdim=True)",
                          ".index_select(0, torch.tensor([0, 0], device={x}.device))[:1]",
                          "[1:].sum(0, keepdim=True)", "[{x} > 0].sum().reshape(1, 1)"])
            return f"{x}{i}".format(x=x), (1, s[1]) if "reshape" not in i else (1, 1), None
        if kind == "shape_math" and len(s) == 2:
            return f"{x} * ({x}.shape[0] + {x}.shape[1] * k) / {x}.numel()", s, None
        return f"{x}.mul(2)", s, None

    # ---- statements ---------------------------------------------------------------------------
    def assign(self, lines, ind, pool, expr=None):
        e, s, base = expr or self.tensor_expr(pool)
        if s is None or s == (1, 1):
            e, s, base = f"{pool[0][0]} + 1", pool[0][1], None
        name = self.fresh()
        lines.append(f"{ind}{name} = {e}")
        pool.append((name, s, base))
        return name

    def inplace(self, lines, ind, pool):
        r = self.r
        # targets: intermediates and buf (and views of buf); never a, b or their views
        cands = [v for v in pool if v[0] not in ("a", "b") and v[2] not in ("a", "b")]
        if not cands:
            return
        t, s, _ = r.choice(cands)
        y = self.operand(pool, s)
        kind = r.random()
        if kind < 0.35:
            op = r.choice(["add_", "mul_", "sub_"])
            lines.append(f"{ind}{t}.{op}({y})")
        elif kind < 0.5:
            lines.append(f"{ind}{t}.{r.choice(['clamp_(min=-1.0)', 'relu_()', 'tanh_()', 'zero_()', 'fill_(k)', 'neg_()'])}")
        elif kind < 0.6:
            lines.append(f"{ind}{t}.masked_fill_({t} > 1.0, 1.0)")
        elif len(s) == 2:
            src = self.pick(pool, s) or (t,)
            idx = r.choice(["[0]", "[:, 0]", "[1:]", "[-1, :]"])
            e = r.choice([f"{src[0]}{idx}", f"{src[0]}{idx}.detach() * 2", str(round(r.uniform(-2, 2), 2)),
                          "k", f"{src[0]}{idx}.sum()"])
            if r.random() < 0.2:
                lines.append(f"{ind}{t}[{t} > 0.5] = 0.5")
            elif r.random() < 0.25:
                lines.append(f"{ind}{t}{idx}.mul_(2)")
            else:
                lines.append(f"{ind}{t}{idx} = {e}")
        elif len(s) == 1:
            lines.append(f"{ind}{t}[0] = {round(r.uniform(-2, 2), 2)}")
        else:
            lines.append(f"{ind}{t}.add_(1)")

    def block_assign(self, ind, pool):
        """Two alternative single-assignment bodies of one result shape."""
        e1 = self.tensor_expr(pool)
        for _ in range(10):
            e2 = self.tensor_expr(pool)
            if e2[1] == e1[1]:
                break
        else:
            e2 = (f"{e1[0]} * 2", e1[1], None)
        return e1, e2

    def extra_step(self, lines, ind, pool):
        """One statement of EXTRA_KINDS, every choice from self.r2."""
        r = self.r2
        kind = r.choices(list(self.extra), list(self.extra.values()))[0]
        twod = [v for v in pool if len(v[1]) == 2 and 1 not in v[1]]
        if kind in ("view_write", "view_stale") and not twod:
            return
        if kind == "view_write":
            x, s, base = r.choice(twod)
            view = r.choice(VIEWS_2D)[0]
            op = r.choice(VIEW_WRITES)
            leaf = x in ("a", "b") or base in ("a", "b")
            how = r.choice(["no_grad", "detach"] + ([] if leaf else ["grad", "grad"]))
            if how == "no_grad":
                lines += [f"{ind}with torch.no_grad():", f"{ind}    {x}{view}.{op}"]
            elif how == "detach":
                lines.append(f"{ind}{x}.detach(){view}.{op}")
            else:
                lines.append(f"{ind}{x}{view}.{op}")
        elif kind == "view_stale":
            x, s, base = r.choice(twod)
            view, shape = r.choice(VIEWS_2D)
            v = self.fresh("w")
            lines.append(f"{ind}{v} = {x}{view}")
            if r.random() < 0.5:  # a graph break: the view is an input of the next graph
                lines.append(f"{ind}print('w', {v}.shape, bool({x}.sum() > 0))")
            write = r.choice(["mul_(0.9)", "add_(0.1)", "clamp_(max=1.5)", "[0].mul_(2)",
                              ("[-1].copy_(b[0])" if x != "b" else "[-1].copy_(a[0])")
                              if s == RC else "[:, 0].zero_()"])
            write = write if write.startswith("[") else "." + write
            leaf = x in ("a", "b") or base in ("a", "b")
            if leaf or r.random() < 0.4:
                lines += [f"{ind}with torch.no_grad():", f"{ind}    {x}{write}"]
            else:
                lines.append(f"{ind}{x}{write}")
            t = self.fresh()
            lines.append(f"{ind}{t} = {v} * {r.choice(['2.0', 'k', '-0.5'])} + 1")
            pool.append((t, shape(s), None))
        elif kind == "masked":
            self.masked(lines, ind, pool)
        elif kind == "grad_call":
            self.grad_call(lines, ind, pool)
        else:  # grad_nest
            x, s, _ = r.choice(pool)
            t1, t2 = self.fresh(), self.fresh()
            if r.random() < 0.5:
                lines += [f"{ind}with torch.no_grad():", f"{ind}    {t1} = {x} * 2",
                          f"{ind}    with torch.enable_grad():",
                          f"{ind}        {t2} = ({t1} + {x}).sin()"]
            else:
                cond = r.choice(["k > 2", f"bool({x}.sum() > 0)", "False"])
                lines += [f"{ind}with torch.set_grad_enabled({cond}):",
                          f"{ind}    {t1} = {x} * 2", f"{ind}    {t2} = ({t1} + {x}).sin()"]
            pool += [(t1, s, None), (t2, s, None)]

    def grad_call(self, lines, ind, pool):
        """d/da of an expression in `a` and a value of the pool (EXTRA_KINDS "grad_call"),
        from self.r2; guarded by a.requires_grad (a guard on the input's flag)."""
        r = self.r2
        c = [v for v in pool if broadcast(RC, v[1]) == RC]
        x = r.choice(c)[0] if c else "b"
        inner = r.choice([f"(a.sin() * {x}).sum()", f"(a * a * {x}).mean()",
                          f"(a.tanh() + {x}).square().sum() * 0.5", f"(a @ a.t()).relu().sum()"])
        g, t = self.fresh("g"), self.fresh()
        create = r.random() < 0.4
        lines.append(f"{ind}if a.requires_grad:")
        lines.append(f"{ind}    ({g},) = torch.autograd.grad({inner}, a, retain_graph=True" +
                     (", create_graph=True)" if create else ")"))
        use = f"{g}.detach()" if create else g
        lines.append(f"{ind}    {t} = {use} * {r.choice(['0.5', 'k', '-1.0'])} + {x}")
        lines.append(f"{ind}else:")
        lines.append(f"{ind}    {t} = {x} * 0.5 + a")
        pool.append((t, RC, None))

    def masked(self, lines, ind, pool):
        """One statement with a data-dependent size (EXTRA_KINDS "masked"), from self.r2."""
        r = self.r2
        twod = [v for v in pool if v[1] == RC]
        x = r.choice(twod)[0] if twod else "a"
        c = round(r.uniform(-0.5, 0.8), 1)
        t = self.fresh()
        form = r.randrange(7)
        if form == 0:  # selected elements, reduced
            red = r.choice(["sum()", "abs().sum()", "square().sum() * 0.5"])
            lines.append(f"{ind}{t} = ({x}[{x} > {c}].sin() * 2 + 1).{red}")
            pool.append((t, S, None))
        elif form == 1:  # selected rows, through a product and a reduction over them
            lines.append(f"{ind}{t} = ({x}[{x}[:, 0] > {c}] * 2).relu().sum(0, keepdim=True) + {x}[0]")
            pool.append((t, C1_, None))
        elif form == 2:  # coordinates, gathered back
            lines.append(f"{ind}r_{t}, c_{t} = ({x} > {c}).nonzero(as_tuple=True)")
            lines.append(f"{ind}{t} = {x}[r_{t}, c_{t}].sum() + r_{t}.float().sum() * 0.01")
            pool.append((t, S, None))
        elif form == 3:  # masked_select with a broadcast mask
            lines.append(f"{ind}{t} = torch.masked_select({x}, a[0] > {c}).tanh().sum()")
            pool.append((t, S, None))
        elif form == 4:  # the count in arithmetic (a SymInt)
            lines.append(f"{ind}n_{t} = {x}[{x} < {c}].shape[0]")
            lines.append(f"{ind}{t} = {x} * (n_{t} + 1) / (max(n_{t}, 1) + k)")
            pool.append((t, RC, None))
        elif form == 5:  # a branch on the count: a graph break at the branch
            lines.append(f"{ind}if {x}[{x} > {c}].shape[0] > {r.randrange(0, 6)}:")
            lines.append(f"{ind}    {t} = {x} * 2")
            lines.append(f"{ind}else:")
            lines.append(f"{ind}    {t} = {x} - 1")
            pool.append((t, RC, None))
        else:  # where(cond): indices of one row's elements, gathered
            lines.append(f"{ind}(i_{t},) = torch.where({x}[0] > {c})")
            lines.append(f"{ind}{t} = {x}[:, i_{t}].sum(1, keepdim=True) + i_{t}.shape[0]")
            pool.append((t, R1, None))

    def step(self, lines, ind, pool, depth):
        r = self.r
        if depth == 0 and self.extra and self.r2.random() < EXTRA_RATE:
            self.extra_step(lines, ind, pool)
        kind = r.choices(*zip(*[(k, w) for k, w in KINDS.items() if k not in self.off]))[0]
        if depth >= 2 and kind in ("branch", "loop", "closure", "no_grad"):
            kind = "assign"
        if kind == "assign":
            self.assign(lines, ind, pool)
        elif kind == "inplace":
            self.inplace(lines, ind, pool)
        elif kind == "buf":
            x = self.pick(pool, RC) or ("a",)
            lines.append(ind + r.choice([f"buf.add_({x[0]}.detach() * 0.5)", f"buf[0] = {x[0]}[0].detach()",
                                         "buf[:, 1] = k", "buf.mul_(0.9)", f"buf[-1].copy_({x[0]}[0])",
                                         "buf.t()[1].add_(1.0)", "buf.view(-1)[:3].zero_()"]))
        elif kind == "branch":
            x = r.choice(pool)[0]
            cond = r.choice([f"{x}.sum() > 0", f"{x}.mean().item() > 0.1", f"({x} > 0).any()",
                             "k > 2", f"{x}.shape[0] > 3", f"{x}.dim() == 2", "k % 2 == 0",
                             f"bool({x}.amax() > 0.5)", f"isinstance({x}, torch.Tensor)"] + ([f"{self.floats[-1]} > 0"] if self.floats else []))
            e1, e2 = self.block_assign(ind, pool)
            name = self.fresh("v")
            head = len(lines)
            lines.append(f"{ind}if {cond}:")
            inner = list(pool)
            for _ in range(r.randrange(0, 3)):
                self.step(lines, ind + "    ", inner, depth + 1)
            lines.append(f"{ind}    {name} = {e1[0]}")
            if r.random() < 0.8:
                lines.append(f"{ind}else:")
                inner = list(pool)
                for _ in range(r.randrange(0, 2)):
                    self.step(lines, ind + "    ", inner, depth + 1)
                lines.append(f"{ind}    {name} = {e2[0]}")
            else:  # no else: the default goes before the `if`
                lines.insert(head, f"{ind}{name} = {e2[0]}")
            pool.append((name, e1[1], None))
        elif kind == "loop":
            acc = self.pick(pool, pred=lambda v: v[0] not in ("a", "b", "buf")) or r.choice(pool)
            name = self.fresh("acc")
            lines.append(f"{ind}{name} = {acc[0]} * 1.0")
            it = r.choice(["range(k)", "range(a.shape[0])", "range(1, k + 2)", "[0.5, 1.5, -1.0]",
                           "enumerate(a)"])
            var = "i" if not it.startswith("enumerate") else "i, row"
            lines.append(f"{ind}for {var} in {it}:")
            body = ind + "    "
            if r.random() < 0.4:
                lines.append(f"{body}if i == {r.randrange(1, 3)}:")
                lines.append(f"{body}    {r.choice(['break', 'continue'])}")
            y = self.operand(pool, acc[1])
            upd = r.choice([f"{name} = {name} * 0.5 + {y}", f"{name} = ({name} + i).sin()",
                            f"{name}.add_({y})" if acc[1] else f"{name} = {name} + 1",
                            # not `- mean()`: a later `if acc.sum() > 0` would branch on rounding
                            f"{name} = {name} - {name}.mean() * 0.5"])
            if var.startswith("i, row") and acc[1] == RC and r.random() < 0.5:
                upd = f"{name} = {name} + row * i"
            lines.append(f"{body}{upd}")
            if r.random() < 0.3:
                lines.append(f"{body}if {name}.sum() > {r.randrange(0, 20)}:")
                lines.append(f"{body}    break")
            pool.append((name, acc[1], None))
        elif kind == "print":
            x = r.choice(pool)[0]
            lines.append(ind + r.choice([f"print('shape', {x}.shape, k)", f"print({x}.dtype, {x}.dim())",
                                         f"print('n', {x}.numel() + k)", "print('g', g_count)",
                                         f"print('pos', bool({x}.sum() > 0))",
                                         f"print(f'{{k}}: {{{x}.shape[-1]}} {{len(g_log)}}')"]))
        elif kind == "item":
            x = r.choice(pool)[0]
            name = self.fresh("s")
            lines.append(f"{ind}{name} = {x}.{r.choice(['sum', 'mean', 'amax'])}().item()")
            if depth == 0:  # a name bound in a branch may be unbound after it
                self.floats.append(name)
        elif kind == "helper":
            h = r.choice(HELPERS)
            self.helpers.add(h[0])
            x, s, _ = r.choice(pool)
            y = self.operand(pool, s)
            t = (self.pick(pool, s) or (x,))[0]
            call = {"h_scale": [f"h_scale({x})", f"h_scale({x}, {y})", f"h_scale({x}, scale=k)",
                                f"h_scale({x}, {y}, 0.5, {x}, neg=True)", f"h_scale(*[{x}, {y}])",
                                f"h_scale({x}, **{{'scale': 1.5, 'neg': k > 1}})"],
                    "h_mix": [f"h_mix({x})", f"h_mix({x}, {t}, {x})", f"h_mix(*({x}, {t}), w=k)"],
                    "h_kw": [f"h_kw({x})", f"h_kw({x}, p={y}, q=k)", f"h_kw({x}, **{{'z': 1.0}})"],
                    "h_pair": [f"h_pair({x}, {y})[0]", f"h_pair({x}, {y}, flip=True)[1]",
                               f"sum(h_pair({x}, {y}, k > 2))"],
                    "h_count": [f"h_count({x})", f"h_count({x}, n=k)"]}[h[0]]
            if h[0] == "h_count":
                self.globals_used.add("g_count")
            self.assign(lines, ind, pool, (r.choice(call), s, None))
        elif kind == "closure":
            x, s, _ = r.choice(pool)
            fn = self.fresh("fn")
            cap = r.choice(["k", self.operand(pool, s)])
            if r.random() < 0.5:
                lines.append(f"{ind}def {fn}(t, scale=2.0):")
                lines.append(f"{ind}    return t * scale + {cap}")
            else:
                lines.append(f"{ind}{fn} = lambda t: t.tanh() - {cap}")
            self.assign(lines, ind, pool, (f"{fn}({x})", s, None))
        elif kind == "container":
            x, s, _ = r.choice(pool)
            y = self.pick(pool, s) or (x,)
            c = r.choice(["list", "dict", "tuple"])
            name = self.fresh("c")
            if c == "list":
                lines.append(f"{ind}{name} = [{x}, {y[0]}]")
                lines.append(f"{ind}{name}.append({name}[0] * k)")
                e = r.choice([f"{name}[-1] + {name}[1]", f"sum({name}) / len({name})",
                              f"torch.stack({name}).amax(0)"])
            elif c == "dict":
                lines.append(f"{ind}{name} = {{'p': {x}, 'q': {y[0]}}}")
                lines.append(f"{ind}{name}['r'] = {name}['p'] - {name}.get('q', {x})")
                e = r.choice([f"{name}['r'] * {name}['q']", f"sum({name}[key] for key in sorted({name}))"])
            else:
                lines.append(f"{ind}{name} = ({x}, {y[0]}, k)")
                lines.append(f"{ind}p_, q_, n_ = {name}")
                e = "p_ * n_ + q_"
            self.assign(lines, ind, pool, (e, s, None))
        elif kind == "global":
            self.globals_used.update(["g_count", "g_log", "g_state", "g_scale", "g_acc"])
            x, shape, _ = r.choice(pool)
            g = r.choice(["g_count += 1", "g_log.append(k)", "g_state['calls'] = g_state.get('calls', 0) + k",
                          "g_scale = g_scale * 0.5 + 0.25", f"g_acc.add_({x}.detach().sum().cpu())",
                          "g_log.append(len(g_log))", "g_box.n += k", "g_box.items.append(k)"])
            lines.append(ind + g)
            if r.random() < 0.5:
                self.assign(lines, ind, pool, (f"{x} * g_scale + len(g_log)", shape, None))
        elif kind == "no_grad":
            lines.append(f"{ind}with torch.no_grad():")
            inner = list(pool)
            for _ in range(r.randrange(1, 3)):
                self.step(lines, ind + "    ", inner, depth + 1)
            pool.extend(v for v in inner if v not in pool and v[0][0] == "t")
        elif kind == "py_int":
            name = self.fresh("n")
            lines.append(ind + f"{name} = " + r.choice(["a.shape[0] * 2 + k", "len(a) - 1 + k // 2",
                                                        "a.numel() % 7", "max(k, a.shape[1]) - min(k, 2)",
                                                        "int(a.shape[-1] / 2) + (k ** 2)"]))
            x, s, _ = r.choice(pool)
            self.assign(lines, ind, pool, (f"{x} * {name} - {name} // 2", s, None))
        elif kind == "raise":
            lines.append(f"{ind}if k > 3:")
            lines.append(f"{ind}    raise {r.choice(['ValueError', 'KeyError', 'RuntimeError'])}('k too big')")
        elif kind == "comprehension":
            x, s, _ = r.choice(pool)
            e = r.choice([f"sum([{x} * i for i in range(1, k + 1)], {x} * 0)",
                          f"torch.stack([{x}.sin() + j for j in (0.5, 1.5)]).mean(0)",
                          f"sum({x} * v for v in {{'u': 1.0, 'w': k}}.values())",
                          f"[{x} + i for i in range(3) if i != 1][-1]"])
            self.assign(lines, ind, pool, (e, s, None))
        elif kind == "nonlocal":
            x, s, _ = r.choice(pool)
            fn, cnt = self.fresh("fn"), self.fresh("cnt")
            lines += [f"{ind}{cnt} = 0", f"{ind}def {fn}(t):", f"{ind}    nonlocal {cnt}",
                      f"{ind}    {cnt} += 1", f"{ind}    return t * {cnt}"]
            self.assign(lines, ind, pool, (f"{fn}({x}) + {fn}({x})", s, None))
        elif kind == "unpack":
            x, s, _ = r.choice(pool)
            y = (self.pick(pool, s) or (x,))[0]
            lines.append(f"{ind}first, *rest = [{x}, {y}, {x} * 2]")
            self.assign(lines, ind, pool, (r.choice(["first + rest[-1]", "first * len(rest)",
                                                     "sum(rest, first)"]), s, None))
        elif kind == "meta_branch":
            x, s, _ = r.choice(pool)
            cond = r.choice(["a.requires_grad", "a.dtype == torch.float64", "a.shape[0] == a.shape[1]",
                             f"{x}.is_contiguous()", "len(g_log) > 2", "g_box.n > 1"])
            self.globals_used.add("g_box")
            name = self.fresh("v")
            lines += [f"{ind}if {cond}:", f"{ind}    {name} = {x} + 1",
                      f"{ind}else:", f"{ind}    {name} = {x} * 2"]
            pool.append((name, s, None))
        elif kind == "input_nograd":
            lines.append(f"{ind}with torch.no_grad():")
            lines.append(f"{ind}    {r.choice(['a', 'b'])}.{r.choice(['mul_(0.9)', 'add_(0.1)', 'clamp_(max=2.0)'])}")

    # ---- the program --------------------------------------------------------------------------
    def program(self):
        r = self.r
        self.floats = []
        pool = [("a", RC, None), ("b", RC, None), ("buf", RC, None)]
        lines = []
        for _ in range(r.randrange(6, 18)):
            self.step(lines, "    ", pool, 0)
        tensors = [v[0] for v in pool[3:]] or ["a"]
        outs = sorted(set(r.sample(tensors, min(len(tensors), r.randrange(1, 4)))) | {tensors[-1]},
                      key=tensors.index)
        ret = r.choice(["tuple", "tuple", "dict", "list", "single"])
        extra = [f"{x}" for x in self.floats[-1:]] + (["k"] if r.random() < 0.3 else [])
        if ret == "tuple":
            ret_s = "(" + ", ".join(outs + extra) + ",)"
        elif ret == "dict":
            ret_s = "{" + ", ".join(f"'{o}': {o}" for o in outs + extra) + "}"
        elif ret == "list":
            ret_s = "[" + ", ".join(outs + extra) + "]"
        else:
            ret_s = outs[-1]
        glob = sorted(self.globals_used & {"g_count", "g_scale"})
        body = ([f"    global {', '.join(glob)}"] if glob else []) + lines + [f"    return {ret_s}"]
        head = ["import ignis as torch", "F = torch.nn.functional", "",
                "g_count = 0", "g_log = []", "g_state = {'calls': 0}", "g_scale = 1.0",
                "g_acc = torch.zeros(())", "", "", "class Box:",
                "    def __init__(self):", "        self.n = 0", "        self.items = []", "",
                "", "g_box = Box()", ""]
        for name, src in HELPERS:
            if name in self.helpers:
                head.append(src)
        src = "\n".join(head) + "\ndef f(a, b, buf, k):\n" + "\n".join(body) + "\n\n"
        return src + "CALLS = " + self.calls() + "\n"

    def calls(self):
        """The call schedule: shapes, dtypes, grads and k change between calls."""
        r = self.r
        if self.sizes:
            return self.size_calls()
        n = r.randrange(3, 6)
        out = []
        R, C = r.choice([(4, 5), (3, 6), (5, 4)])
        dtype, grad = "float32", r.random() < 0.5
        for i in range(n):
            if i > 0:
                change = r.random()
                if change < 0.25:
                    R, C = r.choice([(4, 5), (3, 6), (5, 4), (2, 7), (6, 6)])
                elif change < 0.35:
                    dtype = r.choice(["float32", "float64"])
                elif change < 0.5:
                    grad = not grad
            if "grad" in self.off:  # --skip grad: no call requires grad
                grad = False
            k = r.choice([1, 2, 2, 3, 3, 4]) if r.random() < 0.9 else 0
            mode = "compiled" if i == 0 or r.random() < 0.75 else "eager"
            out.append(f"dict(R={R}, C={C}, dtype='{dtype}', grad={grad}, k={k}, "
                       f"seed={r.randrange(1000)}, mode='{mode}')")
        return "[\n    " + ",\n    ".join(out) + ",\n]"


    def size_calls(self):
        """--sizes N: N calls at distinct (R, C) from 2 to 9 (sizes 0 and 1 specialize),
        one dtype and grad setting, k fixed (an int argument that changes becomes a
        symbol too, and the point is the tensor sizes)."""
        r = self.r
        pairs = r.sample([(i, j) for i in range(2, 10) for j in range(2, 10)], self.sizes)
        grad = r.random() < 0.5 and "grad" not in self.off
        k = r.choice([1, 2, 3])
        out = [f"dict(R={R}, C={C}, dtype='float32', grad={grad}, k={k}, "
               f"seed={r.randrange(1000)}, mode='compiled')" for R, C in pairs]
        return "[\n    " + ",\n    ".join(out) + ",\n]\nCOMPILE_EVERY_SIZE = True"


def generate(seed, features=None, sizes=0):
    """The source text of program `seed` (`sizes`: see Gen)."""
    return Gen(seed, features, sizes).program()
