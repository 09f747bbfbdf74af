// Partitioners: split a joint forward+backward graph into a forward graph
// and a backward graph, choosing what the forward saves for the backward.
//
// The joint graph (what AOT tracing hands over, as in torch's AOTAutograd):
//   placeholders  primals_1..N (forward inputs), then tangents_1..M (the
//                 gradients of the forward outputs that need grad); every
//                 placeholder whose name starts with "tangents" is a tangent;
//   body          dispatcher ops with tensor metadata in meta().tensors; a
//                 multi-output op is read through getitem nodes
//                 (operator.getitem, or a "__getitem__" method call);
//   output        (fw_out_1..fw_out_K, grad_primals_1..grad_primals_N), where
//                 a grad may be None and K is num_fwd_outputs.
//
// The results keep the joint graph's node names:
//   forward   placeholders primals_1..N; output (fw outs..., saved...);
//   backward  placeholders saved... (named after the forward values they
//             hold), then every tangent; output (grads...).
// Running forward then backward computes what the joint graph computes.
//
// What stays where, in both partitioners:
//   - nodes that depend on a tangent are backward nodes; a forward output
//     that depends on one is an error;
//   - random ops (graph::Target::nondeterministic) and impure ops (copy_
//     write-backs into inputs) that do not depend on tangents run in the
//     forward, once: a random result the backward needs is saved, never
//     drawn again; a write-back happens exactly once;
//   - a multi-output op is never saved as a tuple: its getitems are;
//   - nodes neither graph needs are dropped, except impure ones.
//
// default_partition (torch's default_partition): the forward computes what
// its outputs need; every forward value the backward reads is saved, and
// the backward computes everything else it needs from those and the
// tangents.
//
// min_cut_rematerialization_partition (the idea of torch's partitioner of
// the same name): choosing what to save is a minimum cut. Each value v that
// does not depend on tangents becomes an edge v_in -> v_out whose capacity
// is the cost of saving v; data flows along infinite edges u_out -> v_in.
// The source feeds, with infinite edges, the values the backward may not
// recompute (primals; forward nodes that are random, impure, compute-
// intensive or otherwise not recomputable); the sink is fed by every value
// a tangent-dependent node or a grad output reads. A finite cut separating
// source and sink is a set of values that, once saved, lets the backward
// recompute everything else it needs from them, and the minimum cut
// (max-flow by Dinic's algorithm) is the cheapest such set. The backward
// then recomputes the unsaved forward values it needs. Why this shape
// (the reasoning of torch's partitioner notes): memory, not compute, limits
// training; recomputing cheap fusible ops is nearly free, because a fusing
// compiler folds them into the kernels that consume them anyway; so save
// few bytes, and recompute only what fuses.
//
// Recompute policy (what the backward may recompute; any other forward
// value it needs is saved, or kept upstream of a saved value):
//   - pointwise ops, views, getitems, and deterministic creation ops (they
//     fill constants and read no data);
//   - reductions whose output is at least 1/reduction_ratio of their input
//     bytes: one that shrinks its input a lot (a mean over rows) is cheap
//     to save, and recomputing it would need the large input kept;
//   - never: random or impure ops, Template ops (the GEMMs mm, bmm, addmm,
//     baddbmm, mv and attention, as their declarations say),
//     the categories Other and Composite (their cost is unknown), calls
//     into the embedding layer;
//   - never from a primal the forward writes back into (a mutated input:
//     after the forward it holds its new value); what the backward needs of
//     it is saved instead;
//   - from a value the program holds (a primal, a forward output, a view of
//     either), only what serves the gradients that backward formulas reading
//     it serve, and nothing from one no formula reads (Notes [Saving what
//     eager saves] and [Recomputing from what the program holds]);
//   - no recompute chain longer than max_recompute_chain ops: along a longer
//     chain of recomputable forward ops, the op at the limit counts as not
//     recomputable (torch caps fusible chains likewise, so that a backward
//     kernel does not redo an unbounded slice of the forward).
// Cost of saving v: its bytes (numel * itemsize, summed over a tuple), times
// unfused_save_penalty when v would otherwise never reach memory (v and all
// its users fuse); primals are in memory already and are never penalised;
// forward outputs and views of them cost nothing (the program holds them
// after the forward: the logits beside a loss are saved rather than a
// softmax made from them).
// Ties go to fewer bytes, then fewer saved tensors, then primals over other
// values over views; among cuts still equal, to the one nearest the
// backward (values saved as late as possible, so the least is recomputed).
// The penalty can make the cut save more raw bytes than default_partition
// does; on the graphs of the tests it never does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ignis/graph/graph.h"

namespace ignis::aot {

struct PartitionOptions {
  // Ban recomputing a reduction whose output is smaller than its input
  // bytes divided by this.
  double reduction_ratio = 4.0;
  // Longest chain of forward ops the backward may recompute.
  int64_t max_recompute_chain = 64;
  // Views may be recomputed (they copy nothing).
  bool recompute_views = true;
  // Factor on the cost of saving a value that would otherwise be fused away.
  double unfused_save_penalty = 2.0;
};

struct Partition {
  std::unique_ptr<graph::Graph> forward;   // placeholders primals...; output (fw outs..., saved...)
  std::unique_ptr<graph::Graph> backward;  // placeholders saved..., tangents...; output (grads...)
  std::vector<std::string> saved;          // names of the saved values, in forward order
  int64_t saved_bytes = 0;                 // sum of numel * itemsize over the saved values
  size_t num_fwd_outputs = 0;              // K: the forward's outputs before the saved values
  // Forward nodes the backward computes again, in order.
  std::vector<std::string> recomputed;
};

Partition default_partition(const graph::Graph& joint, size_t num_fwd_outputs);

Partition min_cut_rematerialization_partition(const graph::Graph& joint, size_t num_fwd_outputs,
                                              const PartitionOptions& options = {});

// Checks a partition's contract and throws a RuntimeError naming the first
// violation: both graphs lint; no tangent in the forward; the forward returns
// its K outputs then the saved values; every backward input is a saved value
// or a tangent; the backward recomputes no random or impure forward node.
void verify_partition(const Partition& p);

}  // namespace ignis::aot
