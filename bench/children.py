"""Running one implementation of a benchmark in its own process.

Each library runs alone in a child (two OpenMP runtimes, or torch's and
ignis's CUDA contexts, in one process distort each other); the child prints
its figures as one `RESULT {json}` line on stdout.
"""
import json
import os
import subprocess


def child_result(cmd, label, timeout, env=None):
    """Runs `cmd`; returns the dict of its last RESULT line, or None (after
    saying why: a timeout, or no RESULT line, with the ends of its output)."""
    env = dict(env or os.environ, PYTHONUNBUFFERED="1")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        print(f"{label}: timed out after {timeout} s")
        return None
    lines = [s for s in r.stdout.splitlines() if s.startswith("RESULT ")]
    if not lines:
        print(f"{label}: failed\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        return None
    return json.loads(lines[-1][len("RESULT "):])
