"""ignis.backends.cudnn: ignis does not use cuDNN."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None
