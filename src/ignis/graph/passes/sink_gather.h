// Sinking gathers through elementwise producers: gather(f(a, b), d, idx)
// becomes f(gather(a, d, idx), b), so that a value needed at one element per
// row is not computed (and stored) in full first. Cross-entropy's
// gather(log_softmax(x), 1, target) then reads x at the targets and the
// per-row max and log-sum-exp, instead of a float32 [N, V] log_softmax.
//
// What sinks: gather(P, d, idx) where P is elementwise (an op declared
// Pointwise, a `_to_copy` that changes only the dtype, a `clone`), its
// sizes and idx's are static, idx matches P in every dim but d (idx's size
// along d at most P's), and every tensor operand of P is either
// - *full*: P's exact sizes; it is gathered in turn (sunk again when it is
//   itself such an elementwise node), or
// - *per row*: size 1 along d and P's size or 1 elsewhere (a max, a
//   log-sum-exp, a 0-dim tensor); used as it is, it broadcasts to idx's shape.
// Anything else (an operand broadcast along some other dim while full along
// d, a rank mismatch, dynamic shapes) leaves the gather alone.
//
// The cost rule: the rewrite never makes the program compute or store more
// than before. Recomputing elementwise nodes at idx's elements costs no more
// than computing them in full, so a node with other users is sunk through
// too (it stays for them). A gather it creates reads only a *leaf*: a
// placeholder or the output of a non-elementwise op (an extern, a
// reduction, a template; views of those), values a program has in memory
// anyway. A full operand that is an elementwise node the pass cannot sink
// through (or a view of one) would have to be stored to be gathered: the
// whole rewrite of that gather is then refused.
#pragma once

#include "ignis/graph/graph.h"

namespace ignis::graph {

// Rewrites every gather that sinks; returns how many did. Nodes the
// rewrite leaves unused are erased.
size_t sink_gathers(Graph& g);

// Whether sink_gathers would rewrite anything (the graph is not changed).
bool has_sinkable_gather(const Graph& g);

}  // namespace ignis::graph
