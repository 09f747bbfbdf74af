"""ignis.backends.mps: ignis has no Metal (MPS) backend."""


def is_available():
    return False


def is_built():
    return False
