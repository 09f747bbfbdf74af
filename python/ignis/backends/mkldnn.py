"""ignis.backends.mkldnn: ignis does not use oneDNN (MKL-DNN)."""

enabled = True


def is_available():
    return False
