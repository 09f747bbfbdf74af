"""ignis.fx: the graph IR, with torch.fx's names.

The IR lives in C++ (src/ignis/graph): structure, naming, printing, passes
and hashing. These are Python views of it plus the glue that has to be
Python: GraphModule (exec's the generated code, like torch.fx), the
overridable Interpreter, and symbolic_trace (Proxy objects that record calls
on ignis functions, Tensor methods and operators).
"""
from .graph import Graph, Node, PythonCode, TensorMetadata, map_arg  # noqa: F401
from .graph_module import GraphModule  # noqa: F401
from .interpreter import Interpreter  # noqa: F401
from .symbolic_trace import Proxy, Tracer, TraceError, symbolic_trace, wrap  # noqa: F401

__all__ = ["Graph", "Node", "GraphModule", "Interpreter", "Proxy", "Tracer", "symbolic_trace",
           "map_arg", "PythonCode", "TensorMetadata", "wrap"]
