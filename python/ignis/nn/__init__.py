"""ignis.nn: modules, parameters, initialisers and the functional forms."""
from . import functional  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedParameter, UninitializedBuffer  # noqa: F401
from . import init  # noqa: F401
from . import utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import modules  # noqa: F401
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401
