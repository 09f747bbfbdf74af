"""Interpreter: runs a graph node by node on real values (torch.fx.Interpreter).

Subclasses override run_node or the per-opcode methods (placeholder,
get_attr, call_function, call_method, call_module, output) to observe or
change execution. Values are dropped after their last use.
"""
from .graph import map_arg


class Interpreter:
    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.garbage_collect_values = garbage_collect_values
        self.env = {}
        # user -> the nodes whose last use it is
        self.user_to_last_uses = {}
        seen = set()
        for node in reversed(self.graph.nodes):
            for n in node.all_input_nodes:
                if n not in seen:
                    seen.add(n)
                    self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env=None):
        self.env = dict(initial_env) if initial_env else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                msg = f"While executing {node.format_node()}"
                if e.args and isinstance(e.args[0], str):
                    e.args = (f"{e.args[0]}\n\n{msg}",) + e.args[1:]
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, ()):
                    del self.env[dead]
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # --- opcodes ------------------------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, "
                               "but one was not passed in!") from None

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # --- helpers ------------------------------------------------------------------------
    def fetch_attr(self, target):
        obj = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(obj, atom):
                raise RuntimeError("Node referenced nonexistent target "
                                   f"{'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        def load(a):
            if a not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {a}! Run Graph.lint() "
                                   "to diagnose such issues")
            return self.env[a]
        return map_arg(args, load)
