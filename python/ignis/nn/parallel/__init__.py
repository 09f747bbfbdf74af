"""ignis.nn.parallel: DataParallel on one device (ignis runs a module on the
device its parameters are on; there are no replicas to scatter to)."""
from .data_parallel import DataParallel  # noqa: F401

__all__ = ["DataParallel"]
