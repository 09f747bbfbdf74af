"""CUDA streams and events (torch.cuda.Stream / Event).

A Stream names a CUDA stream of one device: the default stream, or one of a
per-device pool of 32 non-blocking streams (never destroyed, as PyTorch's
pool), handed out round robin by Stream().
"""
from .. import _C


class Stream:
    """A CUDA stream. ``Stream()`` takes the next stream of the current device's pool."""

    def __init__(self, device=None, priority=0, *, _handle=None):
        from . import _index
        if _handle is not None:
            self.device_index, self.cuda_stream = _handle
        else:
            self.device_index, self.cuda_stream = _C._cuda_pool_stream(_index(device))

    @property
    def device(self):
        return _C.device("cuda", self.device_index)

    def synchronize(self):
        """Waits for all work queued on the stream."""
        _C._cuda_stream_synchronize(self.device_index, self.cuda_stream)

    def query(self):
        """True when all work queued on the stream has finished."""
        return _C._cuda_stream_query(self.device_index, self.cuda_stream)

    def wait_event(self, event):
        """Makes future work on this stream wait for `event`."""
        event.wait(self)

    def wait_stream(self, stream):
        """Makes future work on this stream wait for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.device_index == other.device_index
                and self.cuda_stream == other.cuda_stream)

    def __hash__(self):
        return hash((self.device_index, self.cuda_stream))

    def __repr__(self):
        return f"<ignis.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event; ``enable_timing=True`` lets elapsed_time measure between two."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("ignis.cuda.Event(interprocess=True) is not supported")
        self.enable_timing = enable_timing
        self._event = _C._cuda_event_new(bool(enable_timing))

    def record(self, stream=None):
        """Records the event on `stream` (default: the current stream)."""
        if stream is None:
            stream = current_stream()
        _C._cuda_event_record(self._event, stream.device_index, stream.cuda_stream)

    def wait(self, stream=None):
        """Makes future work on `stream` (default: the current one) wait for this event."""
        if stream is None:
            stream = current_stream()
        _C._cuda_event_wait(self._event, stream.device_index, stream.cuda_stream)

    def query(self):
        """True when the work recorded before the event has finished (or it was never recorded)."""
        return _C._cuda_event_query(self._event)

    def synchronize(self):
        """Waits for the work recorded before the event."""
        _C._cuda_event_synchronize(self._event)

    def elapsed_time(self, end_event):
        """Milliseconds between this event and `end_event` (both recorded and done)."""
        return _C._cuda_event_elapsed(self._event, end_event._event)

    def __repr__(self):
        return f"<ignis.cuda.Event enable_timing={self.enable_timing}>"


def current_stream(device=None):
    """This thread's current stream of `device` (default: the current device)."""
    from . import _index
    return Stream(_handle=_C._cuda_current_stream(_index(device)))


def default_stream(device=None):
    from . import _index
    return Stream(_handle=_C._cuda_default_stream(_index(device)))


def set_stream(stream):
    """Makes `stream` the current stream of its device on this thread."""
    if stream is not None:
        _C._cuda_set_stream(stream.device_index, stream.cuda_stream)


class stream:
    """Context manager: makes `stream` current (and its device current) for the block."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        s = self.stream
        if s is None:
            return None
        self._prev_device = _C._cuda_current_device()
        if s.device_index != self._prev_device:
            _C._cuda_set_device(s.device_index)
        self._prev_stream = current_stream(s.device_index)
        set_stream(s)
        return s

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        set_stream(self._prev_stream)
        if self.stream.device_index != self._prev_device:
            _C._cuda_set_device(self._prev_device)
        return False
