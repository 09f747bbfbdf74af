"""Shrinks a failing program while its failure (category) still reproduces.

Deletion to a fixed point over the program's `ast`: each pass tries, for
every statement (module level, function bodies, if/else, loops, with blocks),
to delete it, or to replace a compound statement by its body, and for every
call in `CALLS`, to drop it; a change is kept when the program still fails
with the same category. Candidates run in the fuzzer's worker process, so
crashes and hangs are judged the same way.
"""
import ast
import copy


def _stmt_lists(tree):
    """Every list of statements in the tree (each a (node, field) pair)."""
    out = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            v = getattr(node, field, None)
            if isinstance(v, list) and v and isinstance(v[0], ast.stmt):
                out.append((node, field))
    return out


def _candidates(tree):
    """Yields smaller variants of `tree` (fresh copies), biggest cuts first."""
    n_lists = len(_stmt_lists(tree))
    for li in range(n_lists):
        length = len(getattr(*_stmt_lists(tree)[li]))
        for i in reversed(range(length)):
            t = copy.deepcopy(tree)
            node, field = _stmt_lists(t)[li]
            body = getattr(node, field)
            stmt = body[i]
            if isinstance(stmt, ast.Assign) and any(getattr(x, "id", "") == "CALLS" for x in stmt.targets):
                continue
            if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With)):  # keep its body only
                t2 = copy.deepcopy(t)
                n2, f2 = _stmt_lists(t2)[li]
                b2 = getattr(n2, f2)
                inner = b2[i].body + (getattr(b2[i], "orelse", []) or [])
                b2[i:i + 1] = [s for s in inner]
                yield t2
            del body[i]
            if not body:
                body.append(ast.Pass())
            yield t
    # drop calls
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(x, "id", "") == "CALLS" for x in node.targets):
            for i in reversed(range(len(node.value.elts))):
                if len(node.value.elts) > 1:
                    t = copy.deepcopy(tree)
                    for n in ast.walk(t):
                        if isinstance(n, ast.Assign) and any(getattr(x, "id", "") == "CALLS"
                                                             for x in n.targets):
                            del n.value.elts[i]
                    yield t


def minimize(src, backend, category, worker, log=print, max_tries=300, device="cpu"):
    """The smallest program found that still fails with `category` (source text).

    `worker` (a runner.Worker) runs the candidates; deletion continues from
    where the last kept one was, wrapping around, until a whole round keeps
    nothing.
    """
    best = ast.parse(src)
    tries, pos, misses = 0, 0, 0
    while tries < max_tries:
        cands = list(_candidates(best))
        if not cands or misses >= len(cands):
            break
        pos %= len(cands)
        cand = cands[pos]
        tries += 1
        try:
            text = ast.unparse(cand) + "\n"
            compile(text, "<candidate>", "exec")
        except (SyntaxError, ValueError):
            ok = False
        else:
            fail, _ = worker.check(text, backend, device)
            ok = fail is not None and fail.category == category
        if ok:
            best, misses = cand, 0
            log(f"  minimize: {len(text.splitlines())} lines ({tries} tries)")
        else:
            pos, misses = pos + 1, misses + 1
    return ast.unparse(best) + "\n"
