"""Capture's logs: IGNIS_LOGS and set_logs (torch._logging's TORCH_LOGS).

Artifacts are switched on by name; the C side (src/ignis/capture/log.h)
writes each message to sys.stderr as "[artifact] text". IGNIS_LOGS is read
once, when ignis is imported: a comma-separated list of artifact names, each
optionally prefixed with "+" (accepted for TORCH_LOGS compatibility; every
artifact has one verbosity here).
"""
import os

from . import _C

# Artifact names; each one's mask bit is _C._capture.LOG_<NAME>.
ARTIFACTS = ("graph_breaks", "guards", "recompiles", "graph_code", "bytecode", "output_code",
             "aot_graphs", "schedule", "dynamic", "cudagraphs")


def _bit(name):
    return getattr(_C._capture, "LOG_" + name.upper())


def get_logs():
    """Names of the artifacts switched on now."""
    mask = _C._capture.log_mask()
    return [name for name in ARTIFACTS if mask & _bit(name)]


def set_logs(graph_breaks=False, guards=False, recompiles=False, graph_code=False, bytecode=False,
             output_code=False, aot_graphs=False, schedule=False, dynamic=False,
             cudagraphs=False):
    """Switches the named artifacts on and every other one off (torch._logging.set_logs)."""
    flags = dict(graph_breaks=graph_breaks, guards=guards, recompiles=recompiles,
                 graph_code=graph_code, bytecode=bytecode, output_code=output_code,
                 aot_graphs=aot_graphs, schedule=schedule, dynamic=dynamic,
                 cudagraphs=cudagraphs)
    mask = 0
    for name, on in flags.items():
        if not isinstance(on, bool):
            raise TypeError(f"set_logs: {name} must be a bool, got {on!r}")
        if on:
            mask |= _bit(name)
    _C._capture.set_log_mask(mask)


def parse_logs_setting(text):
    """The mask for an IGNIS_LOGS value such as "graph_breaks,+guards"."""
    mask = 0
    for item in text.split(","):
        name = item.strip()
        if not name:
            continue
        if name.startswith("+"):
            name = name[1:].strip()
        if name == "all":  # every artifact, as TORCH_LOGS=all
            for a in ARTIFACTS:
                mask |= _bit(a)
            continue
        if name not in ARTIFACTS:
            raise ValueError(f"IGNIS_LOGS: unknown artifact {name!r}; valid names: "
                             f"{', '.join(ARTIFACTS)}, all")
        mask |= _bit(name)
    return mask


def _enabled(name):
    return bool(_C._capture.log_mask() & _bit(name))


def _aot_graphs_enabled():
    return bool(_C._capture.log_mask() & _bit("aot_graphs"))


def _log_aot_graph(title, gm):
    """Writes one AOT graph as "[aot_graphs] ====== title ======" and its code."""
    import sys
    text = gm.print_readable(print_output=False)
    sys.stderr.write(f"[aot_graphs] ====== {title} ======\n{text}\n")


def _init_from_env():
    text = os.environ.get("IGNIS_LOGS")
    if text:
        _C._capture.set_log_mask(parse_logs_setting(text))


_init_from_env()

__all__ = ["set_logs", "get_logs", "ARTIFACTS", "parse_logs_setting"]
