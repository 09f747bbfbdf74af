"""ignis.testing.assert_close: compare tensors with dtype-aware tolerances."""
import numpy as np

_TOL = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
        "float64": (1e-7, 1e-7)}


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False, check_dtype=True):
    from ._tensor import Tensor
    if check_dtype and isinstance(actual, Tensor) and isinstance(expected, Tensor):
        assert actual.dtype is expected.dtype, f"dtype mismatch: {actual.dtype} vs {expected.dtype}"
    name = str(actual.dtype).split(".")[-1] if isinstance(actual, Tensor) else "float64"
    r, a = _TOL.get(name, (0, 0))
    rtol = r if rtol is None else rtol
    atol = a if atol is None else atol
    x = np.asarray(actual.float() if isinstance(actual, Tensor) and name == "bfloat16" else actual)
    y = np.asarray(expected.float() if isinstance(expected, Tensor) and str(expected.dtype).endswith("bfloat16") else expected)
    assert x.shape == y.shape, f"shape mismatch: {x.shape} vs {y.shape}"
    np.testing.assert_allclose(x.astype(np.float64) if x.dtype != bool else x,
                               y.astype(np.float64) if y.dtype != bool else y,
                               rtol=rtol, atol=atol, equal_nan=equal_nan)
