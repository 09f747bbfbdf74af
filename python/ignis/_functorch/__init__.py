"""The AOT stage's Python face (torch._functorch's role): aot_autograd and
the partitioners. The work happens in C++ (src/ignis/aot); this package
builds GraphModules around the traced graphs and the autograd node that runs
a compiled forward and backward."""
