"""Counters of what the compiler produced (torch._inductor.metrics' names)."""

generated_kernel_count = 0


def reset():
    global generated_kernel_count
    generated_kernel_count = 0
