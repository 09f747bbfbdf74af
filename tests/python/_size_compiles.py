"""Recording the per-size compiles of dynamic graphs and of the stages after
a data-dependent op, for tests (ignis._compile's _with_sizes, which both
paths call with the values they compile for)."""


def record_size_compiles(monkeypatch):
    """A list that gets the values of each per-size compile (a dynamic
    graph's sizes, a stage's ints), in order."""
    import ignis._compile as comp
    seen = []
    with_sizes = comp._with_sizes

    def counting(gm, sym_at, values):
        seen.append(tuple(values))
        return with_sizes(gm, sym_at, values)
    monkeypatch.setattr(comp, "_with_sizes", counting)
    return seen
