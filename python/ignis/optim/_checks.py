"""Constructor argument checks shared by the optimizers, worded as torch's."""


def check_non_negative(**values):
    """Each value >= 0, else torch's "Invalid <name>: <value>" ValueError."""
    for label, v in values.items():
        if not 0.0 <= v:
            raise ValueError(f"Invalid {label.replace('_', ' ')}: {v}")


def check_betas(betas):
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
