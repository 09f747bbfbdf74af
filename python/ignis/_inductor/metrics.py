"""Counters of what the compiler produced (torch._inductor.metrics' names;
the graph cache's hits and misses as torch counts them under
counters["inductor"]["fxgraph_cache_hit" / "fxgraph_cache_miss"]), and how
many compiled graphs with kernels ran a compiler for them (g++ or NVRTC)
against how many found their library or module compiled already, loaded or
on disk (a size-generic graph at a size whose text another size compiled)."""

generated_kernel_count = 0
fxgraph_cache_hit = 0
fxgraph_cache_miss = 0
library_compiled = 0
library_reused = 0


def reset():
    global generated_kernel_count, fxgraph_cache_hit, fxgraph_cache_miss
    global library_compiled, library_reused
    generated_kernel_count = 0
    fxgraph_cache_hit = 0
    fxgraph_cache_miss = 0
    library_compiled = 0
    library_reused = 0
