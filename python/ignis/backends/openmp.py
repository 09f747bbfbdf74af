"""ignis.backends.openmp: ignis's CPU kernels run on OpenMP."""


def is_available():
    return True
