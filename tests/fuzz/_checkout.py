"""Makes `import ignis` load this checkout's package (tests/python/_checkout.py's rule)."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "_ignis_checkout", Path(__file__).resolve().parents[1] / "python" / "_checkout.py")
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)  # runs use_checkout()
