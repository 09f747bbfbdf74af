"""Chi2(df): the sum of df squared standard normals, Gamma(df / 2, 1 / 2)."""
from . import constraints
from .gamma import Gamma
from .utils import broadcast_all


class Chi2(Gamma):
    arg_constraints = {"df": constraints.positive}
    _expand_extra = ("concentration", "rate")

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)
        self._check_df()

    @property
    def df(self):
        return self.concentration * 2

    # df is computed from the concentration, which Distribution's check
    # skips as a derived property: checked here instead.
    def _check_df(self):
        if self._validate_args and not bool(constraints.positive.check(self.df).all()):
            raise ValueError(
                f"Expected parameter df (Tensor of shape {tuple(self.df.shape)}) of "
                f"distribution {self!r} to satisfy the constraint "
                f"{constraints.positive!r}, but found invalid values:\n{self.df}")

    def __repr__(self):
        return f"Chi2(df: {self.df if self.df.numel() == 1 else self.df.size()})"
