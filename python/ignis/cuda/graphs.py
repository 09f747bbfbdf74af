"""CUDA graphs (torch.cuda.CUDAGraph, torch.cuda.graph, graph_pool_handle).

The work queued on a stream is captured once and replayed with one launch
(src/ignis/cuda/graph.h). As in torch: capture on a side stream, warm up the
work first (kernels load and workspaces are allocated outside the capture),
read inputs from and write outputs to tensors whose addresses stay put
(copy new values into the captured inputs, ``x.copy_(new)``, before
``replay()``); tensors allocated during the capture live in the graph's
private memory pool and every replay overwrites them. A random op replays
the numbers drawn at capture (ignis does not advance the generator per
replay yet).
"""
import gc

from .. import _C

_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}


def _pool_id(pool):
    """A pool handle (graph_pool_handle(), CUDAGraph.pool(): torch's (0, id)
    tuple, or the id) as the allocator's id; 0 for None."""
    if pool is None:
        return 0
    if isinstance(pool, tuple) and len(pool) == 2:
        pool = pool[1]
    if not isinstance(pool, int) or isinstance(pool, bool) or pool <= 0:
        raise TypeError(f"pool must be a handle from graph_pool_handle() or CUDAGraph.pool(), "
                        f"got {pool!r}")
    return pool


def graph_pool_handle():
    """A new private memory pool's handle: graphs captured with it share
    their memory (replay them in the order they were captured)."""
    return (0, _C._cuda_graph_pool_handle())


class CUDAGraph:
    """A CUDA graph: ``capture_begin()`` ... ``capture_end()`` record the work
    queued on the current stream; ``replay()`` runs it again."""

    def __init__(self, keep_graph=False):
        self._graph = _C._cuda_graph_new()

    def capture_begin(self, pool=None, capture_error_mode="global"):
        """Starts capturing the current stream (not the default stream);
        allocations come from `pool` (a handle), or a new private pool."""
        if capture_error_mode not in _MODES:
            raise ValueError(f"capture_error_mode must be one of {', '.join(_MODES)}, "
                             f"got {capture_error_mode!r}")
        pool_id = _pool_id(pool)
        from . import _require
        _require()
        _C._cuda_graph_capture_begin(self._graph, pool_id, _MODES[capture_error_mode])

    def capture_end(self):
        """Ends the capture and instantiates the graph. A capture invalidated
        by an operation it cannot hold (a synchronization, a copy to the host)
        raises a RuntimeError with the driver's error; the graph is then empty."""
        _C._cuda_graph_capture_end(self._graph)

    def replay(self):
        """Launches the captured work on the current stream."""
        _C._cuda_graph_replay(self._graph)

    def reset(self):
        """Frees the graph and gives back its memory pool."""
        _C._cuda_graph_reset(self._graph)

    def pool(self):
        """The handle of the graph's memory pool, for another capture to share."""
        pool_id = _C._cuda_graph_state(self._graph)[0]
        if not pool_id:
            raise RuntimeError("CUDAGraph.pool(): the graph has no pool before capture_begin")
        return (0, pool_id)

    def instantiate(self):
        """Nothing to do: capture_end instantiates (torch's keep_graph=False)."""

    def enable_debug_mode(self):
        raise NotImplementedError("CUDAGraph.enable_debug_mode is not supported by ignis")

    def debug_dump(self, debug_path):
        raise NotImplementedError("CUDAGraph.debug_dump is not supported by ignis")

    def _abort(self):
        _C._cuda_graph_abort(self._graph)

    def __repr__(self):
        pool_id, captured, capturing, replays = _C._cuda_graph_state(self._graph)
        state = "capturing" if capturing else "captured" if captured else "empty"
        return f"<ignis.cuda.CUDAGraph {state} pool={pool_id} replays={replays}>"


class graph:
    """Context manager: captures its block's CUDA work into `cuda_graph`, on
    `stream` (default: a side stream shared by all captures, as torch's),
    allocating from `pool` (a handle) or the graph's own pool."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        from .streams import Stream
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"ignis.cuda.graph expects a CUDAGraph, got {type(cuda_graph).__name__}")
        if stream is None:
            if graph.default_capture_stream is None:
                graph.default_capture_stream = Stream()
            stream = graph.default_capture_stream
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        from . import synchronize, empty_cache
        from .streams import stream as stream_context
        # As torch: finish pending work and free what can be freed, so the
        # capture starts from a quiet device and a compact cache.
        synchronize()
        gc.collect()
        empty_cache()
        self._stream_ctx = stream_context(self.capture_stream)
        self._stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self._stream_ctx.__exit__(None, None, None)
            raise
        return None

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is not None:
                # The block failed: its error is the one to see.
                self.cuda_graph._abort()
            else:
                self.cuda_graph.capture_end()
        finally:
            self._stream_ctx.__exit__(exc_type, exc, tb)
        return False


def is_current_stream_capturing():
    """Whether the current stream of the current device is capturing a graph."""
    from . import is_available, current_stream
    if not is_available():
        return False
    s = current_stream()
    return _C._cuda_stream_is_capturing(s.device_index, s.cuda_stream)


def make_graphed_callables(*args, **kwargs):
    raise NotImplementedError("ignis.cuda.make_graphed_callables is not supported yet; capture "
                              "with ignis.cuda.graph, or compile with mode=\"reduce-overhead\"")
