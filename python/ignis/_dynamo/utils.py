"""torch._dynamo.utils's counters: `counters["stats"]["unique_graphs"]` counts
the graphs capture has handed to a backend (one per trace that produced a
graph: a recompile adds one, a call that hits a cached graph does not), so
code that reads torch's counter to count graphs runs unchanged."""
import collections

counters = collections.defaultdict(collections.Counter)
