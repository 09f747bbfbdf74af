"""Recording the per-size compiles of dynamic graphs and of the stages after
a data-dependent op, for tests (ignis._compile.SizeCache's compiles, which
both paths make, with the values they compile for)."""


def record_size_compiles(monkeypatch):
    """A list that gets the values of each per-size compile (a dynamic
    graph's sizes, a stage's ints), in order: the keys SizeCache compiles
    (the graph's AOT traces are fewer: Note [Symbolic AOT graphs])."""
    import ignis._compile as comp
    seen = []
    compile_key = comp.SizeCache.compile

    def counting(self, key, args):
        seen.append(tuple(key))
        return compile_key(self, key, args)
    monkeypatch.setattr(comp.SizeCache, "compile", counting)
    return seen
