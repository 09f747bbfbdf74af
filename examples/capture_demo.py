"""ignis.compile at work: the seed's three capture examples with a backend
that prints each captured graph, then a GPT forward captured as one graph
with ignis.compiler.explain, a graph break as IGNIS_LOGS shows it, and AOT
turning a captured layer into forward and backward graphs of core ops.

    python examples/capture_demo.py
"""
import os
import sys
import time
from typing import Sequence

import ignis as torch
from ignis import _logging

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import GPTConfig, build_gpt  # noqa: E402


def custom_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor]):
    print("FX Graph:")
    gm.graph.print_tabular()
    print("\nGenerated Python code:")
    print(gm.code)
    return gm.forward


def section(title):
    print(f"\n=== {title} " + "=" * max(0, 70 - len(title)))


section("1. straight-line code: one graph")


@torch.compile(backend=custom_backend)
def func(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = x + y
    return torch.relu(z) * 2


x = torch.randn((4,), dtype=torch.float32, device="cpu")
y = torch.randn((4,), dtype=torch.float32, device="cpu")
o = func(x, y)
x = torch.randn((4,), dtype=torch.float32, device="cpu")
y = torch.randn((4,), dtype=torch.float32, device="cpu")
o = func(x, y)  # same shapes: the guards pass, no second graph
print("second call ran from the cache:", torch.equal(o, torch.relu(x + y) * 2))

section("2. a Python loop unrolls into add_1, add_2, add_3")


@torch.compile(backend=custom_backend)
def func_loop(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = x + y
    for _ in range(3):
        z += x + y
    return torch.relu(z) * 2


func_loop(x, y)

section("3. data-dependent control flow: a graph break, two graphs")
_logging.set_logs(graph_breaks=True)


@torch.compile(backend=custom_backend)
def func_branch(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = x + y
    if z.sum() > 0:
        return z
    return torch.relu(z) * 2


func_branch(-x.abs(), -y.abs())
_logging.set_logs()

section("4. a 12-layer GPT forward: one graph, traced in milliseconds")
torch.manual_seed(0)
model = build_gpt(torch)(GPTConfig(n_layer=12)).eval()
idx = torch.randint(0, 96, (2, 32))
t0 = time.perf_counter()
explanation = torch.compiler.explain(model)(idx)
print(f"traced and ran in {(time.perf_counter() - t0) * 1e3:.1f} ms")
print(f"graphs: {explanation.graph_count}, graph breaks: {explanation.graph_break_count}, "
      f"ops: {explanation.op_count}")
compiled = torch.compile(model)
with torch.no_grad():
    same = torch.allclose(compiled(idx)[0], model(idx)[0], atol=1e-6)
print("compiled logits equal eager:", same)

section("5. AOT: the captured graph as forward and backward graphs of core ops")


def show(title):
    def compiler(gm, example_inputs):
        print(f"{title}:")
        print(gm.code)
        return gm.forward
    return compiler


weight = torch.randn(4, 4, requires_grad=True)


@torch.compile(backend=torch.compiler.aot_autograd(
    fw_compiler=show("forward graph"), bw_compiler=show("backward graph"),
    partition_fn=torch.compiler.min_cut_rematerialization_partition))
def layer(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x @ weight).sum()


x = torch.randn(2, 4)
layer(x).backward()
w_grad = weight.grad.clone()
weight.grad = None
torch.nn.functional.gelu(x @ weight).sum().backward()
print("gradient equal to eager:", torch.allclose(w_grad, weight.grad))
