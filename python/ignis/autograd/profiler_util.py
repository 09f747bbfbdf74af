"""What a profile holds and how it prints (torch.autograd.profiler_util's
objects): FunctionEvent (one timed call), FunctionEventAvg (the calls of one
key summed), EventList (a list of either, with key_averages, table and
export_chrome_trace).

Times are microseconds, as torch's. Events come from the C++ profiler
(src/ignis/profiler): one per operator call ("aten::<op>"), per backward node
("autograd::engine::evaluate_function: <Node>"), per record_function range,
and per compiled graph call and generated kernel. The profiler times the CPU
side only: CUDA work is asynchronous, so a CUDA op's event is its launch
(device times are 0)."""

import json
import os

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg"]

_KINDS = ("op", "backward", "user_annotation", "compiled")


def _format_time(time_us):
    """'12.345us', '1.234ms' or '2.000s', as torch prints times."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_percent(part, total):
    return f"{(100.0 * part / total) if total else 0.0:.2f}%"


class _Interval:
    """time_range: start and end in microseconds."""

    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


class _Times:
    """What FunctionEvent and FunctionEventAvg share: the time strings, and
    device times, which the profiler does not record (module docstring)."""

    device_time_total = self_device_time_total = device_time = 0.0
    cuda_time_total = self_cuda_time_total = cuda_time = 0.0

    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))


class FunctionEvent(_Times):
    """One timed call: an op, a backward node, a user range or a compiled
    graph/kernel."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None,  # noqa: A002
                 kind="op"):
        self.id = id
        self.name = name
        self.thread = thread
        self.time_range = _Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.kind = kind
        self.cpu_children = []
        self.cpu_parent = None
        self.count = 1
        self.is_async = False
        self.is_legacy = False
        self.device_type = "CPU"
        self.device_index = 0
        self.stack = []
        self.scope = 0
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.flops = 0

    @property
    def key(self):
        return self.name

    def append_cpu_child(self, child):
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        self.cpu_parent = parent

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} "
                f"cpu_time={self.cpu_time_str} self_cpu_time={self.self_cpu_time_total_str} "
                f"thread={self.thread} input_shapes={self.input_shapes}>")


class FunctionEventAvg(_Times):
    """The events of one key (and input shapes, when grouped by them)
    summed; cpu_time is the mean per call."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.node_id = 0
        self.is_async = False
        self.is_legacy = False
        self.device_type = "CPU"
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.flops = 0
        self.cpu_parent = None
        self.cpu_children = None
        self.stack = []
        self.scope = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
        elif other.key != self.key:
            raise ValueError(f"FunctionEventAvg.add: key {other.key!r} is not {self.key!r}")
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        return self

    def __iadd__(self, other):
        return self.add(other)

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} count={self.count} "
                f"input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of FunctionEvents (or of FunctionEventAvgs, from key_averages)."""

    def __init__(self, *args, trace_start_us=0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self._trace_start_us = trace_start_us

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """One FunctionEventAvg per key (per key and input shapes with
        group_by_input_shape), in the order keys first appear."""
        if group_by_stack_n:
            raise NotImplementedError(
                "key_averages(group_by_stack_n=...): ignis's profiler records no stacks")
        groups = {}
        for e in self:
            k = (e.key, str(e.input_shapes)) if group_by_input_shape else e.key
            if k not in groups:
                groups[k] = FunctionEventAvg()
            groups[k].add(e)
        if not group_by_input_shape:
            for avg in groups.values():
                avg.input_shapes = None  # calls of several shapes: none stands for all
        return EventList(groups.values(), trace_start_us=self._trace_start_us)

    def total_average(self):
        total = FunctionEventAvg()
        for e in self:
            total.count += e.count
            total.cpu_time_total += e.cpu_time_total
            total.self_cpu_time_total += e.self_cpu_time_total
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """A text table, as torch prints it: a row per event (per key after
        key_averages), sorted descending by the attribute `sort_by`."""
        events = list(self)
        if top_level_events_only:
            events = [e for e in events if e.cpu_parent is None]
        if sort_by is not None:
            attr = sort_by.replace("cuda", "device")
            if not events or not hasattr(events[0], attr):
                raise ValueError(f"table(sort_by={sort_by!r}): events have no such attribute")
            events.sort(key=lambda e: getattr(e, attr), reverse=True)
        if row_limit is not None and row_limit > 0:
            events = events[:row_limit]
        return _build_table(events, self.self_cpu_time_total, max_name_column_width,
                            max_shapes_column_width, header, time_unit)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        """Writes the events as a Chrome trace (open it in chrome://tracing
        or https://ui.perfetto.dev): one complete event per call, on its
        thread, with its input shapes when they were recorded."""
        pid = os.getpid()
        trace = []
        for e in self:
            if not isinstance(e, FunctionEvent):
                raise TypeError("export_chrome_trace needs the events, not key_averages()")
            item = {"ph": "X", "cat": _chrome_category(e.kind), "name": e.name, "pid": pid,
                    "tid": e.thread, "ts": self._trace_start_us + e.time_range.start,
                    "dur": e.cpu_time_total}
            if e.input_shapes:
                item["args"] = {"Input Dims": e.input_shapes}
            trace.append(item)
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)
        return path


def _chrome_category(kind):
    return {"op": "cpu_op", "backward": "cpu_op", "user_annotation": "user_annotation",
            "compiled": "kernel"}.get(kind, "cpu_op")


def _build_table(events, self_total, max_name_width, max_shapes_width, header, time_unit):
    def fmt(t):
        if time_unit == "s":
            return f"{t / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{t / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{t:.3f}us"
        return _format_time(t)

    has_shapes = any(getattr(e, "input_shapes", None) for e in events)
    name_w = min(max([len(e.key) for e in events] + [4]) + 4, max_name_width)
    shapes_w = min(max([len(str(e.input_shapes)) for e in events] + [12]) + 4, max_shapes_width)
    heads = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    widths = [name_w] + [12] * len(heads)
    if has_shapes:
        heads.append("Input Shapes")
        widths.append(shapes_w)
    line = "  ".join("-" * w for w in widths) + "  "

    def row(cells):
        return "  ".join(str(c)[:w].rjust(w) for c, w in zip(cells, widths)) + "  "

    def name_of(key):
        return key if len(key) <= name_w else key[:name_w - 3] + "..."

    out = []
    if header:
        out += ["=" * len(line), header]
    out += [line, row(["Name"] + heads), line]
    for e in events:
        cells = [name_of(e.key), _format_percent(e.self_cpu_time_total, self_total),
                 fmt(e.self_cpu_time_total), _format_percent(e.cpu_time_total, self_total),
                 fmt(e.cpu_time_total), fmt(e.cpu_time), e.count]
        if has_shapes:
            cells.append(str(e.input_shapes))
        out.append(row(cells))
    out.append(line)
    out.append(f"Self CPU time total: {fmt(self_total)}")
    return "\n".join(out) + "\n"


def _events_from_records(records, thread):
    """FunctionEvents from _C._profiler_stop()'s tuples, parents linked."""
    events = []
    for i, (name, kind, start_ns, end_ns, parent, shapes) in enumerate(records):
        e = FunctionEvent(i, name, thread, start_ns / 1e3, end_ns / 1e3,
                          input_shapes=shapes, kind=_KINDS[kind])
        if parent >= 0:
            p = events[parent]
            e.set_cpu_parent(p)
            p.append_cpu_child(e)
        events.append(e)
    return events
