"""Counters of what the compiler produced (torch._inductor.metrics' names;
the graph cache's hits and misses as torch counts them under
counters["inductor"]["fxgraph_cache_hit" / "fxgraph_cache_miss"])."""

generated_kernel_count = 0
fxgraph_cache_hit = 0
fxgraph_cache_miss = 0


def reset():
    global generated_kernel_count, fxgraph_cache_hit, fxgraph_cache_miss
    generated_kernel_count = 0
    fxgraph_cache_hit = 0
    fxgraph_cache_miss = 0
