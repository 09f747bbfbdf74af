"""ignis.func: function transforms (torch.func's names)."""
import functools

__all__ = ["functionalize"]


def functionalize(func, *, remove="mutations"):
    """A function that computes what `func` computes, whose traces hold no
    mutations (torch.func.functionalize).

    Traced by make_fx (or AOT), in-place ops become functional ops, mutations
    through views are replayed on their base, and mutated inputs are written
    back once at the end (one copy_ each). Called eagerly it runs `func` as
    it is: the values and the inputs' mutations are the same.
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise ValueError(f"functionalize: remove must be 'mutations' or 'mutations_and_views', "
                         f"got {remove!r}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    wrapper._ignis_functionalize = True
    return wrapper
