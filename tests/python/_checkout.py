"""Makes `import ignis` load the package of this checkout.

An editable install (pip install -e) registers an import hook that maps
`ignis` to the tree it was installed from, ahead of PYTHONPATH. When this
checkout has its own built extension (python/ignis/_C*.so, from a plain
CMake build), the tests must exercise that one, so the hook is dropped for
this process and the checkout's python/ directory goes first on sys.path.
IGNIS_TEST_PACKAGE=<dir> names another directory holding an `ignis` package
to test the same way (./dev test --sanitize: the sources with a sanitized _C).
"""
import os
import sys
from pathlib import Path

PYTHON_DIR = Path(os.environ.get("IGNIS_TEST_PACKAGE") or
                  Path(__file__).resolve().parents[2] / "python")


def use_checkout():
    if "ignis" in sys.modules or not any((PYTHON_DIR / "ignis").glob("_C*.so")):
        return
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not type(f).__name__.startswith("ScikitBuild")]
    sys.path.insert(0, str(PYTHON_DIR))


use_checkout()
