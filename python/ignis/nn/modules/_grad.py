"""The grad-mode context used by nn and optim for in-place updates
(initialisers, load_state_dict, optimizer steps)."""
from ...autograd import no_grad  # noqa: F401
