// The scheduler: compute nodes -> fused kernels (body.h has the contract).
//
// Nodes are taken in program order and grouped greedily. A group is one
// kernel over an iteration space S with, once a reduction joins, the dims M
// it reduces. A node joins the open group when
//   - its shape fits: a pointwise node over S ("full": computed per element,
//     in a loop over M), a pointwise node over S without M, dropped or kept
//     as size 1 ("scalar": computed once per row), or a reduction of S over M;
//   - every value of the group it reads, it reads at the element the group
//     computes for the same coordinates (a full value at the same index, a
//     row value at its row). A transposed or shifted read of a fused value
//     would need the whole value first: it closes the group.
// A node that does not fit waits, with the nodes that read it, until the group
// closes; an extern step closes the group and places everything waiting.
//
// Inside a kernel, each node goes into the last loop when it can (the same
// kind of loop, and not needing a reduction that loop is still folding), so
// sibling reductions share one pass and a pointwise consumer of a reduction
// gets the next pass over the row. Values fused in the kernel are read where
// they were computed: the same loop's node, a reduction's accumulator, a
// scalar block's variable; only a full value of an earlier loop is re-read
// from memory (the row is in cache). A computed buffer nobody outside the
// kernel reads is never stored or allocated.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "ignis/compiler/body.h"
#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/kernels/scalar_ops.h"
#include "ignis/ops/op_def.h"
#include "ignis/sym/eval.h"
#include "ignis/sym/index.h"
#include "ignis/sym/print.h"
#include "ignis/sym/simplify.h"

namespace ignis::compiler {

using sym::Expr;

// pow of floats to a constant exponent with a shortcut (Note [pow's
// shortcuts], scalar_ops.h): the arithmetic eager computes it with, or -1.
int BodyBuilder::pow_shortcut(const ScalarNode& n) {
  if (n.kind != ScalarKind::Call || n.fn != scalar_ops::Pow::name || n.args.size() != 2 ||
      !is_floating(n.dtype))
    return -1;
  const ScalarNode& e = body[size_t(n.args[1])];
  if (e.kind != ScalarKind::Constant) return -1;
  const int x = n.args[0];
  auto call = [&](const char* fn, std::vector<int> args) {
    ScalarNode c;
    c.kind = ScalarKind::Call;
    c.dtype = n.dtype;
    c.fn = fn;
    c.args = std::move(args);
    return add(std::move(c));
  };
  using scalar_ops::PowShortcut;
  switch (scalar_ops::pow_shortcut(e.is_int ? double(e.int_value) : e.value)) {
    case PowShortcut::Identity: return x;
    case PowShortcut::Square: return call(scalar_ops::Square::name, {x});
    case PowShortcut::Cube: return call(scalar_ops::Mul::name, {call(scalar_ops::Square::name, {x}), x});
    case PowShortcut::Sqrt: return call(scalar_ops::Sqrt::name, {x});
    case PowShortcut::Rsqrt: return call(scalar_ops::Rsqrt::name, {x});
    case PowShortcut::Reciprocal: return call(scalar_ops::Reciprocal::name, {x});
    case PowShortcut::InverseSquare:
      return call(scalar_ops::Reciprocal::name, {call(scalar_ops::Square::name, {x})});
    case PowShortcut::None: break;
  }
  return -1;
}

// A cast back to the type a value was exactly widened from: the value as it
// was (bfloat16 -> float -> bfloat16, a copy to bfloat16 stored as
// bfloat16: Note [Copies to a 16-bit float], lower.cpp), or -1.
int BodyBuilder::cast_shortcut(const ScalarNode& n) const {
  if (n.kind != ScalarKind::Cast || n.args.size() != 1) return -1;
  const ScalarNode& inner = body[size_t(n.args[0])];
  if (inner.kind != ScalarKind::Cast || inner.args.size() != 1) return -1;
  const int x = inner.args[0];
  const ScalarType from = body[size_t(x)].dtype, via = inner.dtype;
  const bool exact = is_floating(from) && is_floating(via) && element_size(via) > element_size(from);
  return exact && from == n.dtype ? x : -1;
}

int BodyBuilder::add(ScalarNode n) {
  if (n.kind == ScalarKind::Load && on_load_) {
    int r = on_load_(*this, n);
    if (r >= 0) return r;
  }
  if (int r = pow_shortcut(n); r >= 0) return r;
  if (int r = cast_shortcut(n); r >= 0) return r;
  std::string key = std::to_string(int(n.kind)) + "|" + std::to_string(int(n.dtype)) + "|" +
                    std::to_string(n.buffer) + "|" +
                    std::to_string(n.index.defined() ? n.index.stable_hash() : 0) + "|" +
                    std::to_string(n.is_int ? n.int_value : 0) + "|" + n.fn + "|" +
                    std::to_string(n.is_int) + "|" + std::to_string(n.acc) + "|" +
                    std::to_string(n.loop) + "|" + std::to_string(n.node) + "|" +
                    std::to_string(n.scratch) + "|";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%a", n.value);
  key += buf;
  for (int a : n.args) key += "," + std::to_string(a);
  auto [it, fresh] = seen_.emplace(key, int(body.size()));
  if (fresh) body.push_back(std::move(n));
  return it->second;
}

Coords canonical_coords(const std::vector<int64_t>& sizes) {
  Coords c;
  for (size_t d = 0; d < sizes.size(); ++d)
    c.push_back(sym::index_var("d" + std::to_string(d), std::max<int64_t>(sizes[d], 1)));
  return c;
}

namespace {

// Cross: a reduction over the group's outer dims (a column sum in a row
// kernel), folded per range of rows into partials (Note [Column sums in a
// row kernel]).
enum class Role : uint8_t { Full, Scalar, Reduce, Cross };

struct Member {
  int node = -1;
  Role role = Role::Full;
  std::vector<int> deps;  // group members whose values it reads (indices into members)
};

struct Group {
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;  // empty until a reduction joins
  std::vector<Member> members;
  bool gemm = false;          // members[0] is a GEMM; the others its epilogue
  bool has_reduction() const { return !reduced.empty(); }
};

// Whether e divides or takes a remainder of an expression using `var`.
bool divides_var(Expr e, Expr var) {
  if (e.kind() == sym::Kind::FloorDiv || e.kind() == sym::Kind::Mod) {
    for (Expr s : sym::free_symbols(e))
      if (s == var) return true;
  }
  for (const Expr& a : e.args())
    if (divides_var(a, var)) return true;
  return false;
}

class Scheduler {
 public:
  Scheduler(Program& p, std::vector<ComputeNode> nodes, std::vector<Step> externs,
            const CompilerOptions& options)
      : p_(p), nodes_(std::move(nodes)), externs_(std::move(externs)), options_(options) {
    producer_.assign(p_.buffers.size(), -1);
    writers_.assign(p_.buffers.size(), 0);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      producer_[size_t(nodes_[i].buffer)] = int(i);
      ++writers_[size_t(nodes_[i].buffer)];
    }
    // Who reads each computed buffer: other compute nodes (from a trial build
    // of each body), extern calls and the program's outputs.
    readers_.resize(p_.buffers.size());
    reads_.resize(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      BodyBuilder bb([&](BodyBuilder&, const ScalarNode& l) {
        readers_[size_t(l.buffer)].insert(int(i));
        reads_[i].insert(l.buffer);
        return -1;
      });
      nodes_[i].body(bb, canonical_coords(nodes_[i].sizes));
      if (const auto& gm = nodes_[i].gemm) {  // a GEMM reads its matrices whole
        for (int b : {gm->a, gm->b}) {
          readers_[size_t(b)].insert(int(i));
          reads_[i].insert(b);
        }
      }
    }
    for (const Step& s : externs_)
      for (graph::Node* in : s.node->input_nodes())
        if (int b = p_.buffer_of(in); b >= 0) read_outside_.insert(b);
    for (const ProgramOutput& o : p_.outputs)
      if (o.buffer >= 0) read_outside_.insert(o.buffer);
  }

  // Nodes that do not fit the open group wait (with everything that reads
  // them) until it closes, so that later nodes that do fit still join it:
  // column sums between two row passes over one tensor do not split them.
  void run(const std::vector<PendingStep>& order) {
    for (const PendingStep& ps : order) {
      if (ps.extern_step >= 0) {
        if (dead(externs_[size_t(ps.extern_step)])) continue;
        if (holds_view(externs_[size_t(ps.extern_step)])) continue;
        if (open_)
          log(kernel_name() + " ends before extern " +
              externs_[size_t(ps.extern_step)].op->schema().full_name());
        flush();
        p_.steps.push_back(externs_[size_t(ps.extern_step)]);
        continue;
      }
      place(ps.compute);
    }
    flush();
  }

 private:
  // An extern call whose results nothing reads, that writes nothing and
  // draws no random numbers: the `empty` a functionalized copy wrote into,
  // once the copy itself became a kernel storing a buffer of its own.
  bool dead(const Step& s) const {
    for (int b : s.outputs)
      if (b >= 0 && (!readers_[size_t(b)].empty() || read_outside_.count(b))) return false;
    for (const Argument& a : s.op->schema().args)
      if (a.is_write) return false;
    if (s.node && s.node->target().impure()) return false;  // state the graph cannot see
    const OpDef* def = s.op->def();
    return def && def->determinism != Determinism::Random;
  }

  // A view step (an output that is a view of a value: a weight gradient's
  // sum viewed without its kept dim) moves no data, so it need not end the
  // open kernel: it is held and emitted when that kernel closes, and what
  // reads the view waits until then. Only when what it views is already
  // placed (in the open kernel or before it).
  bool holds_view(const Step& s) {
    if (!s.view || !open_ || views_waiting(s)) return false;
    log(kernel_name() + " goes on past the view " + s.op->schema().full_name());
    held_views_.push_back(s);
    for (int b : s.outputs)
      if (b >= 0) held_view_buffers_.insert(b);
    return true;
  }

  // Whether view step s reads a buffer not made yet: a waiting node's, or
  // (with `held`) a held view's.
  bool views_waiting(const Step& s, bool held = false) const {
    for (graph::Node* in : s.node->input_nodes()) {
      const int b = p_.buffer_of(in);
      if (b < 0) continue;
      const int prod = producer_[size_t(b)];
      if (prod >= 0 && std::find(deferred_.begin(), deferred_.end(), prod) != deferred_.end())
        return true;
      if (held && held_view_buffers_.count(b)) return true;
    }
    return false;
  }

  void place(int id) {
    bool waits = false;
    for (int d : deferred_)
      if (reads_[size_t(id)].count(nodes_[size_t(d)].buffer)) waits = true;
    for (int b : reads_[size_t(id)])
      if (held_view_buffers_.count(b)) waits = true;
    if (waits) log(name_of(id) + " waits: it reads a node that does not fit " + kernel_name());
    if (!waits && try_join(id)) return;
    if (!waits && !open_) return open(id);
    deferred_.push_back(id);
  }

  void flush() {
    while (open_ || !deferred_.empty()) {
      close();
      std::vector<int> pending = std::move(deferred_);
      deferred_.clear();
      for (int id : pending) place(id);
    }
  }

  // ---- coordinates ----

  // A member's own coordinates from the group's (over group.sizes).
  Coords member_coords(const Group& g, const Member& m, const Coords& c) const {
    const ComputeNode& n = nodes_[size_t(m.node)];
    if (m.role == Role::Full && n.sizes != g.sizes) return reshaped_coords(g.sizes, n.sizes, c);
    if (m.role != Role::Scalar) return c;
    Coords r;
    bool keepdim = n.sizes.size() == g.sizes.size();
    for (size_t d = 0; d < g.sizes.size(); ++d) {
      if (!g.reduced[d]) r.push_back(c[d]);
      else if (keepdim) r.push_back(Expr(0));
    }
    return r;
  }

  // The coordinates over `to` of the element at coordinates c over `from`,
  // both row-major shapes of the same elements (a reshape).
  static Coords reshaped_coords(const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                                const Coords& c) {
    std::vector<Expr> fs(from.begin(), from.end()), ts(to.begin(), to.end());
    Coords r = sym::unravel_index(sym::ravel_index(c, fs), ts);
    for (Expr& e : r) e = sym::simplify(e);
    return r;
  }

  // Whether a pointwise node over `sizes` can run in the group's loops
  // although its shape differs: a reshape of the same elements (a GEMM's
  // [M, N] output read as [B, T, N]) whose coordinates need no division of
  // the group's innermost loop variable, so the inner loop stays a plain
  // stride-1 loop.
  bool reshapes_group(const Group& g, const ComputeNode& n) const {
    if (g.has_reduction() || n.is_reduction) return false;
    int64_t a = 1, b = 1;
    for (int64_t s : g.sizes) a *= s;
    for (int64_t s : n.sizes) b *= s;
    if (a != b || a == 0) return false;
    if (g.sizes.empty()) return true;
    Coords c = canonical_coords(g.sizes);
    const std::vector<size_t>& order = nodes_[size_t(g.members[0].node)].loop_order;
    size_t innermost = order.empty() ? g.sizes.size() - 1 : order.back();
    for (const Expr& e : reshaped_coords(g.sizes, n.sizes, c))
      if (divides_var(e, c[innermost])) return false;
    return true;
  }

  // ---- joining ----

  static std::vector<int64_t> kept_sizes(const Group& g, bool keepdim) {
    std::vector<int64_t> r;
    for (size_t d = 0; d < g.sizes.size(); ++d) {
      if (!g.reduced[d]) r.push_back(g.sizes[d]);
      else if (keepdim) r.push_back(1);
    }
    return r;
  }

  // The role node `id` would have in group g (with g.reduced possibly set by
  // it), or false when its shape does not fit.
  bool role_in(Group& g, int id, Role* role) const {
    const ComputeNode& n = nodes_[size_t(id)];
    if (n.gemm) return false;  // a GEMM starts its own kernel
    if (g.gemm) {              // an epilogue: per element of the GEMM's output
      *role = Role::Full;
      return !n.is_reduction && (n.sizes == g.sizes || reshapes_group(g, n));
    }
    if (n.is_reduction) {
      if (n.sizes != g.sizes) return false;
      if (g.has_reduction() && g.reduced != n.reduced) return false;
      *role = Role::Reduce;
      return true;
    }
    if (n.sizes == g.sizes || reshapes_group(g, n)) {
      *role = Role::Full;
      return true;
    }
    if (g.has_reduction() && (n.sizes == kept_sizes(g, false) || n.sizes == kept_sizes(g, true))) {
      *role = Role::Scalar;
      return true;
    }
    return false;
  }

  bool writes(const Group& g, int buffer) const {
    for (const Member& m : g.members)
      if (nodes_[size_t(m.node)].buffer == buffer) return true;
    return false;
  }

  int member_of(const Group& g, int buffer) const {
    int prod = producer_[size_t(buffer)];
    if (prod < 0) return -1;
    for (size_t i = 0; i < g.members.size(); ++i)
      if (g.members[i].node == prod) return int(i);
    return -1;
  }

  // Checks the reads of node `id` (as `role`) against what group g computes;
  // fills deps. False when it reads a fused value at another element.
  bool reads_fit(const Group& g, int id, Role role, std::vector<int>* deps,
                 std::string* why) const {
    Coords c = canonical_coords(g.sizes);
    Member self{id, role, {}};
    bool ok = true;
    BodyBuilder bb([&](BodyBuilder&, const ScalarNode& l) {
      if (writers_[size_t(l.buffer)] > 1 && writes(g, l.buffer)) {
        // A concatenation: the kernel writes parts of it, and an element
        // read here may be another part's, or not written yet.
        if (ok) *why = "reads " + p_.buffers[size_t(l.buffer)].name + ", a concatenation the kernel writes";
        ok = false;
        return -1;
      }
      int m = member_of(g, l.buffer);
      if (m < 0) return -1;
      const Member& pm = g.members[size_t(m)];
      const ComputeNode& pn = nodes_[size_t(pm.node)];
      if (pm.role == Role::Cross) {
        if (ok) *why = "reads " + name_of(pm.node) + ", which the kernel folds only in part";
        ok = false;
        return -1;
      }
      if (role == Role::Scalar && pm.role == Role::Full) {
        if (ok) *why = "a per-row value reads " + name_of(pm.node) + ", computed per element";
        ok = false;
      }
      Expr want = sym::simplify(pn.store_index(member_coords(g, pm, c)));
      if (!(want == l.index)) {
        if (ok)
          *why = "reads " + name_of(pm.node) + " at " + sym::str(l.index) +
                 ", not where the kernel computes it (" + sym::str(want) + ")";
        ok = false;
      }
      if (std::find(deps->begin(), deps->end(), m) == deps->end()) deps->push_back(m);
      return -1;
    });
    nodes_[size_t(id)].body(bb, member_coords(g, self, c));
    return ok;
  }

  bool try_join(int id) {
    if (!open_) return false;
    Group trial = group_;
    Role role;
    if (origins_in(group_) + int64_t(nodes_[size_t(id)].origins.size()) > options_.max_fusion_size) {
      log(name_of(id) + " not fused into " + kernel_name() + ": the kernel has reached " +
          "max_fusion_size (" + std::to_string(options_.max_fusion_size) + " nodes)");
      return false;
    }
    if (!role_in(trial, id, &role)) {
      if (hosts_column_sums(id)) return true;
      if (!folds_across(trial, id)) {
        log(name_of(id) + " not fused into " + kernel_name() + ": its iteration space " +
            space(nodes_[size_t(id)].sizes, nodes_[size_t(id)].reduced) + " is not the kernel's " +
            space(group_.sizes, group_.reduced));
        return false;
      }
      role = Role::Cross;
    }
    if (role == Role::Reduce && !trial.has_reduction()) trial.reduced = nodes_[size_t(id)].reduced;
    std::vector<int> deps;
    std::string why;
    if (!reads_fit(trial, id, role, &deps, &why)) {
      log(name_of(id) + " not fused into " + kernel_name() + ": " + why);
      return false;
    }
    log(name_of(id) + " joins " + kernel_name() + " (" + role_name(role) + ")");
    trial.members.push_back(Member{id, role, std::move(deps)});
    group_ = std::move(trial);
    return true;
  }

  // Note [Column sums in a row kernel]
  // Layer norm's backward reduces the same [rows, columns] values two ways:
  // per row (the input gradient's two row sums) and per column (the weight's
  // and bias's gradients, sums over rows). Two kernels read x and the output
  // gradient twice; a row kernel can fold the column sums too if its rows
  // are split into ranges (workers), each folding its rows into its own row
  // of a partials buffer [workers, columns] -- a thread's range on the CPU,
  // a block's on the GPU -- and a small column kernel then folds the
  // partials (inductor's "mix order reduction" does this for its row
  // kernels). A reduction joins a row group this way when it reduces exactly
  // the group's outer dims, every value it reads is computed at the group's
  // element, and nothing in the group reads its result; its consumers (the
  // casts of the gradients) follow the fold's kernel. Off in size-generic
  // code (config.column_sums_in_rows; groups of config.column_sums_min_rows
  // rows and more).
  //
  // How many ranges: on the GPU a block each, enough blocks for four a
  // multiprocessor (H100/H200: 132) so that rows stay in flight while others
  // fold -- a worker runs its rows one after another -- but each at least 16
  // rows, whose loads the partials' [workers, columns] floats stay small
  // against; on the CPU at most 64 (a task of the team each: the threads
  // are few, and the fold reads every range's row of partials).
  static constexpr int64_t kRowsPerWorker = 16, kMaxGpuWorkers = 528, kMaxCpuWorkers = 64;
  // A worker runs its rows one after another, so on the GPU a narrow row
  // (GPT-2's 768 columns: a warp a block) would leave a multiprocessor
  // with two warps where a block per row gave it twenty; rows of fewer
  // elements than config.cuda.column_sums_min_row (4096) keep the two
  // kernels there.

  bool folds_across(const Group& g, int id) {
    const ComputeNode& n = nodes_[size_t(id)];
    if (!options_.column_sums_in_rows || options_.size_generic || !g.has_reduction() || g.gemm ||
        !n.is_reduction || n.gemm || n.sizes != g.sizes || n.combine != Combine::Sum ||
        !is_partial_dtype(n.dtype))
      return false;
    int64_t rows = 1, row = 1, last = -1;
    for (size_t d = 0; d < g.sizes.size(); ++d) {
      if (g.sizes[d] == 1) continue;
      if (n.reduced[d] == g.reduced[d]) return false;
      (g.reduced[d] ? row : rows) *= g.sizes[d];
      last = int64_t(d);
    }
    // A row group (its innermost dim reduced) of enough rows; on the GPU of
    // rows wide enough for a block of several warps.
    if (last < 0 || !g.reduced[size_t(last)] || rows < options_.column_sums_min_rows ||
        (!p_.device.is_cpu() && row < options_.cuda_column_sums_min_row))
      return false;
    for (const Member& m : g.members)
      if (m.role == Role::Cross && nodes_[size_t(m.node)].buffer == n.buffer) return false;
    std::vector<int> deps;
    std::string why;
    if (!reads_fit(g, id, Role::Full, &deps, &why)) {
      log(name_of(id) + " not folded into " + kernel_name() + ": " + why);
      return false;
    }
    return true;
  }

  // A row reduction arriving while a column kernel over the same space is
  // open (RMSNorm's backward sums its weight's gradient over rows before the
  // input gradient's row sum): the open group becomes a row group that
  // hosts its column sums as folds (Note [Column sums in a row kernel]), its
  // per-column values (the sums' casts) waiting for the folds' kernel.
  bool hosts_column_sums(int id) {
    const ComputeNode& n = nodes_[size_t(id)];
    const Group& g = group_;
    if (!n.is_reduction || n.gemm || !g.has_reduction() || g.gemm || n.sizes != g.sizes)
      return false;
    Group ng;
    ng.sizes = g.sizes;
    ng.reduced = n.reduced;
    std::vector<int> requeue;
    bool any = false;
    for (const Member& m : g.members) {
      if (m.role == Role::Scalar) {
        requeue.push_back(m.node);
        continue;
      }
      if (m.role == Role::Cross) return false;
      Role role = Role::Full;
      if (m.role == Role::Reduce) {
        if (!folds_across(ng, m.node)) return false;
        role = Role::Cross;
        any = true;
      }
      std::vector<int> deps;
      std::string why;
      if (!reads_fit(ng, m.node, role, &deps, &why)) return false;
      ng.members.push_back(Member{m.node, role, std::move(deps)});
    }
    std::vector<int> deps;
    std::string why;
    if (!any || !reads_fit(ng, id, Role::Reduce, &deps, &why)) return false;
    ng.members.push_back(Member{id, Role::Reduce, std::move(deps)});
    log(name_of(id) + " joins " + kernel_name() + " (reduction), which now folds its column sums " +
        "per range of rows");
    for (int r : requeue) log(name_of(r) + " waits for the folds of " + kernel_name());
    group_ = std::move(ng);
    deferred_.insert(deferred_.begin(), requeue.begin(), requeue.end());
    return true;
  }

  int64_t origins_in(const Group& g) const {
    int64_t n = 0;
    for (const Member& m : g.members) n += int64_t(nodes_[size_t(m.node)].origins.size());
    return n;
  }

  // ---- the schedule log (IGNIS_LOGS=schedule) ----

  void log(std::string line) { p_.schedule_log.push_back(std::move(line)); }
  std::string kernel_name() const { return "kernel_" + std::to_string(p_.kernels.size()); }
  // A compute node by the graph node whose value it stores.
  std::string name_of(int id) const {
    const ComputeNode& n = nodes_[size_t(id)];
    return n.origins.empty() ? p_.buffers[size_t(n.buffer)].name : n.origins.back();
  }
  static const char* role_name(Role r) {
    return r == Role::Full     ? "per element"
           : r == Role::Scalar ? "per row"
           : r == Role::Cross  ? "a column sum, folded per range of rows"
                               : "reduction";
  }
  static std::string space(const std::vector<int64_t>& sizes, const std::vector<bool>& reduced) {
    std::string s = "[";
    for (size_t d = 0; d < sizes.size(); ++d) {
      s += (d ? ", " : "") + std::to_string(sizes[d]);
      if (!reduced.empty() && reduced[d]) s += " (reduced)";
    }
    return s + "]";
  }

  void open(int id) {
    const ComputeNode& n = nodes_[size_t(id)];
    log(kernel_name() + " starts with " + name_of(id) + " over " + space(n.sizes, n.reduced) +
        (n.gemm ? " (a GEMM template)" : ""));
    group_ = Group{};
    group_.sizes = n.sizes;
    if (n.is_reduction) group_.reduced = n.reduced;
    group_.members.push_back(Member{id, n.is_reduction ? Role::Reduce : Role::Full, {}});
    group_.gemm = n.gemm.has_value();
    open_ = true;
  }

  // ---- building the kernel ----

  // A run of group dims iterated by one loop variable.
  struct LoopDim {
    std::vector<size_t> dims;  // outermost first
    int64_t size = 1;
  };

  // The group's coordinates for loop variables over `loops`.
  static Coords coords_for(const Group& g, const std::vector<LoopDim>& loops,
                           const std::vector<Expr>& vars) {
    Coords c(g.sizes.size(), Expr(0));
    for (size_t i = 0; i < loops.size(); ++i) {
      std::vector<Expr> sizes;
      for (size_t d : loops[i].dims) sizes.push_back(Expr(g.sizes[d]));
      Coords part = sym::unravel_index(vars[i], sizes);
      for (size_t k = 0; k < loops[i].dims.size(); ++k) c[loops[i].dims[k]] = part[k];
    }
    return c;
  }

  static std::vector<Expr> vars_for(const std::vector<LoopDim>& loops, const char* prefix,
                                    size_t first = 0) {
    std::vector<Expr> v;
    for (size_t i = 0; i < loops.size(); ++i)
      v.push_back(sym::index_var(prefix + std::to_string(first + i),
                                 std::max<int64_t>(loops[i].size, 1)));
    return v;
  }

  // Every index the group's members load or store at, for loop variables.
  std::vector<Expr> all_indices(const Group& g, const Coords& c) const {
    std::vector<Expr> out;
    for (const Member& m : g.members) {
      const ComputeNode& n = nodes_[size_t(m.node)];
      Coords mc = member_coords(g, m, c);
      BodyBuilder bb([&](BodyBuilder&, const ScalarNode& l) {
        out.push_back(l.index);
        return -1;
      });
      n.body(bb, mc);
      out.push_back(sym::simplify(n.store_index(mc)));
    }
    return out;
  }

  // Merges adjacent loop dims in loops[first..last] when no access then
  // needs a division or remainder of the merged variable: a contiguous 3-d
  // add is one loop; a broadcast row stays its own dim so that its index
  // stays affine. Returns the number of merges.
  size_t coalesce(const Group& g, std::vector<LoopDim>& loops, size_t first, size_t last) const {
    size_t merged = 0;
    for (size_t i = last; i > first; --i) {
      std::vector<LoopDim> trial = loops;
      LoopDim& a = trial[i - 1];
      const LoopDim& b = trial[i];
      a.dims.insert(a.dims.end(), b.dims.begin(), b.dims.end());
      a.size *= b.size;
      trial.erase(trial.begin() + long(i));
      std::vector<Expr> vars = vars_for(trial, "m");
      bool affine = true;
      for (Expr e : all_indices(g, coords_for(g, trial, vars)))
        if (divides_var(e, vars[i - 1])) affine = false;
      if (affine) {
        loops = std::move(trial);
        ++merged;
      }
    }
    return merged;
  }

  void close() {
    if (!open_) return;
    open_ = false;
    Group& g = group_;
    Kernel k;
    k.name = "kernel_" + std::to_string(p_.kernels.size());

    // Loop dims: outer = the kept dims (S order) and inner = the reduced ones;
    // a pointwise kernel runs its first node's memory order with the
    // innermost dim as the inner loop. Size-1 dims need no loop.
    std::vector<LoopDim> loops;
    size_t n_outer = 0;
    auto dim = [&](size_t d) { return LoopDim{{d}, g.sizes[d]}; };
    if (g.gemm) {
      // The epilogue's loops are a block's rows and columns, never merged.
      loops = {dim(0), dim(1)};
      n_outer = 1;
      k.gemm = nodes_[size_t(g.members[0].node)].gemm;
    } else if (g.has_reduction()) {
      for (size_t d = 0; d < g.sizes.size(); ++d)
        if (g.sizes[d] != 1 && !g.reduced[d]) loops.push_back(dim(d));
      n_outer = loops.size();
      for (size_t d = 0; d < g.sizes.size(); ++d)
        if (g.sizes[d] != 1 && g.reduced[d]) loops.push_back(dim(d));
      if (n_outer > 1) n_outer -= coalesce(g, loops, 0, n_outer - 1);
      if (loops.size() > n_outer + 1) coalesce(g, loops, n_outer, loops.size() - 1);
    } else {
      for (size_t d : nodes_[size_t(g.members[0].node)].loop_order)
        if (g.sizes[d] != 1) loops.push_back(dim(d));
      if (loops.size() > 1) coalesce(g, loops, 0, loops.size() - 1);
      n_outer = loops.empty() ? 0 : loops.size() - 1;
    }
    std::vector<LoopDim> outer(loops.begin(), loops.begin() + long(n_outer));
    std::vector<LoopDim> inner(loops.begin() + long(n_outer), loops.end());
    k.outer = vars_for(outer, "x");
    k.inner = g.has_reduction() ? vars_for(inner, "r") : vars_for(inner, "x", outer.size());
    for (const LoopDim& l : outer) k.outer_sizes.push_back(Expr(l.size));
    for (const LoopDim& l : inner) k.inner_sizes.push_back(Expr(l.size));
    std::vector<Expr> vars = k.outer;
    vars.insert(vars.end(), k.inner.begin(), k.inner.end());
    Coords c = coords_for(g, loops, vars);

    // Column reductions: the innermost dim of the layout is kept, so the
    // kernel walks a chunk of columns innermost (contiguous reads and
    // stores) with one accumulator per column, full values included; no
    // row scratch (a column kernel re-reads a full value from memory).
    if (g.has_reduction() && !k.outer.empty() && !k.inner.empty()) {
      size_t last = g.sizes.size();
      while (last > 0 && g.sizes[last - 1] == 1) --last;
      k.columns = last > 0 && !g.reduced[last - 1];
    }

    // Which computed buffers can stay inside the kernel: nobody outside reads them.
    std::unordered_set<int> members;
    for (const Member& m : g.members) members.insert(m.node);
    std::unordered_set<int> internal;
    for (const Member& m : g.members) {
      int b = nodes_[size_t(m.node)].buffer;
      if (read_outside_.count(b)) continue;
      bool outside = false;
      for (int r : readers_[size_t(b)])
        if (!members.count(r)) outside = true;
      if (!outside) internal.insert(b);
    }

    // Members into loops.
    std::vector<int> loop_of(g.members.size(), -1), value_of(g.members.size(), -1),
        acc_of(g.members.size(), -1);
    std::vector<BodyBuilder> builders;
    for (size_t mi = 0; mi < g.members.size(); ++mi) {
      const Member& m = g.members[mi];
      const ComputeNode& n = nodes_[size_t(m.node)];
      for (const std::string& o : n.origins)
        if (std::find(k.origins.begin(), k.origins.end(), o) == k.origins.end())
          k.origins.push_back(o);
      if (n.gemm) {
        internal.erase(n.buffer);  // the GEMM writes it; the epilogue reads it
        continue;
      }
      bool wants_inner = m.role != Role::Scalar;
      int last = int(k.loops.size()) - 1;
      bool fits = last >= 0 && k.loops[size_t(last)].inner == wants_inner;
      for (int d : m.deps)
        if (g.members[size_t(d)].role == Role::Reduce && loop_of[size_t(d)] == last) fits = false;
      if (!fits) {
        Loop l;
        l.inner = wants_inner;
        k.loops.push_back(std::move(l));
        last = int(k.loops.size()) - 1;
        int loop_index = last;
        builders.emplace_back([&, loop_index](BodyBuilder& bb, const ScalarNode& ld) {
          int pm = member_of(g, ld.buffer);
          if (pm < 0) return -1;
          const Member& prod = g.members[size_t(pm)];
          if (loop_of[size_t(pm)] == loop_index) return value_of[size_t(pm)];
          ScalarNode ref;
          ref.kind = ScalarKind::Ref;
          ref.dtype = ld.dtype;
          if (prod.role == Role::Reduce) {
            ref.acc = acc_of[size_t(pm)];
            return bb.add(std::move(ref));
          }
          if (prod.role == Role::Scalar) {
            ref.loop = loop_of[size_t(pm)];
            ref.node = value_of[size_t(pm)];
            return bb.add(std::move(ref));
          }
          // A full value of an earlier pass over the row (a realized
          // layer_norm's x - mean, read by the variance's pass and the
          // normalising one): read back from the row scratch that pass
          // writes, when nothing outside the kernel needs the buffer; else
          // stored, and re-read from memory.
          const int pl = loop_of[size_t(pm)], pv = value_of[size_t(pm)];
          if (!k.columns && internal.count(ld.buffer) && k.loops[size_t(loop_index)].inner &&
              k.loops[size_t(pl)].inner && builders[size_t(pl)].body[size_t(pv)].dtype == ld.dtype) {
            int s = -1;
            for (const auto& [node, scratch] : k.loops[size_t(pl)].spills)
              if (node == pv) s = scratch;
            if (s < 0) {
              s = int(k.scratch.size());
              k.scratch.push_back(ld.dtype);
              k.loops[size_t(pl)].spills.emplace_back(pv, s);
            }
            ref.scratch = s;
            return bb.add(std::move(ref));
          }
          internal.erase(ld.buffer);
          return -1;
        });
      }
      loop_of[mi] = last;
      BodyBuilder& bb = builders[size_t(last)];
      int v = n.body(bb, member_coords(g, m, c));
      value_of[mi] = v;
      if (m.role == Role::Reduce) {
        Reduction r;
        r.combine = n.combine;
        r.dtype = n.dtype;
        r.value = v;
        acc_of[mi] = int(k.reductions.size());
        k.reductions.push_back(r);
        k.loops[size_t(last)].reductions.push_back(acc_of[mi]);
      }
    }
    for (size_t l = 0; l < k.loops.size(); ++l) k.loops[l].body = std::move(builders[l].body);

    // Stores of the values someone reads from memory; a reduction's result is
    // stored from a scalar block after everything else.
    Loop tail;
    tail.inner = false;
    std::vector<int> folds;  // the fold nodes of the column sums (Note [Column sums in a row kernel])
    for (size_t mi = 0; mi < g.members.size(); ++mi) {
      const Member& m = g.members[mi];
      const ComputeNode& n = nodes_[size_t(m.node)];
      if (m.role == Role::Cross) {
        folds.push_back(fold_partials(k, loop_of[mi], value_of[mi], m.node));
        continue;
      }
      if (internal.count(n.buffer)) {
        log(name_of(m.node) + " stays inside " + k.name + " (" + p_.buffers[size_t(n.buffer)].name +
            " is never stored)");
        p_.buffers[size_t(n.buffer)].eliminated = true;
        continue;
      }
      if (std::find(k.outputs.begin(), k.outputs.end(), n.buffer) == k.outputs.end())
        k.outputs.push_back(n.buffer);
      if (n.gemm) continue;  // stored by the GEMM
      Expr index = sym::simplify(n.store_index(member_coords(g, m, c)));
      if (m.role != Role::Reduce) {
        k.loops[size_t(loop_of[mi])].stores.push_back(Store{n.buffer, index, value_of[mi]});
        continue;
      }
      ScalarNode ref;
      ref.kind = ScalarKind::Ref;
      ref.dtype = n.dtype;
      ref.acc = acc_of[mi];
      tail.body.push_back(ref);
      ScalarType stored = p_.buffers[size_t(n.buffer)].dtype;
      if (stored != n.dtype) {
        ScalarNode cast;
        cast.kind = ScalarKind::Cast;
        cast.dtype = stored;
        cast.args = {int(tail.body.size()) - 1};
        tail.body.push_back(cast);
      }
      tail.stores.push_back(Store{n.buffer, index, int(tail.body.size()) - 1});
    }
    if (!tail.stores.empty()) k.loops.push_back(std::move(tail));

    if (!k.columns) {
      spill_recomputed(k);
      home_scratch_in_outputs(k);
    }
    p_.kernels.push_back(std::move(k));
    Step st;
    st.kind = Step::Kind::RunKernel;
    st.kernel = int(p_.kernels.size()) - 1;
    p_.steps.push_back(std::move(st));
    // The folds of the partials go first among what waits: their consumers
    // (the gradients' casts) read the results they store.
    deferred_.insert(deferred_.begin(), folds.begin(), folds.end());
    // The views held past this kernel follow it, but a view of a column sum
    // folded here waits for the fold's kernel, and a view of a view that
    // waits waits too.
    std::vector<Step> held = std::move(held_views_);
    held_views_.clear();
    held_view_buffers_.clear();
    for (Step& v : held) {
      if (!views_waiting(v, /*held=*/true)) {
        p_.steps.push_back(std::move(v));
        continue;
      }
      for (int b : v.outputs)
        if (b >= 0) held_view_buffers_.insert(b);
      held_views_.push_back(std::move(v));
    }
  }

  // Column sum `node` (a member of kernel k, its value node v of loop li):
  // a folding store into a new partials buffer [workers, row elements] at
  // the worker's row, and a compute node that folds the partials over the
  // workers into the sum's own buffer -- a column kernel of its own, placed
  // like any node. Returns that node.
  int fold_partials(Kernel& k, int li, int v, int node) {
    const ComputeNode n = nodes_[size_t(node)];
    const int64_t rows = k.outer_numel(), cols = k.inner_numel();
    if (k.workers == 0)
      k.workers = std::clamp<int64_t>(rows / kRowsPerWorker, 1,
                                      p_.device.is_cpu() ? kMaxCpuWorkers : kMaxGpuWorkers);
    const int64_t workers = k.workers;
    Buffer pb;
    pb.kind = BufferKind::Computed;
    pb.dtype = n.dtype;
    pb.sizes = {Expr(workers), Expr(cols)};
    pb.strides = {Expr(cols), Expr(1)};
    pb.name = "buf" + std::to_string(p_.buffers.size());
    const int partials = int(p_.buffers.size());
    p_.buffers.push_back(std::move(pb));
    producer_.push_back(-1);
    writers_.push_back(1);
    readers_.emplace_back();
    Expr row = sym::simplify(sym::ravel_index(k.inner, k.inner_sizes));
    Store st{partials, sym::simplify(Kernel::worker_var(workers) * Expr(cols) + row), v, n.combine};
    k.loops[size_t(li)].stores.push_back(st);
    k.outputs.push_back(partials);

    // The fold: over [workers, 1, ..., the kept dims] in the sum's own shape
    // (the first reduced dim runs over the workers, the others are 1), so
    // that its consumers see the sum's kept sizes.
    ComputeNode f;
    f.buffer = n.buffer;
    f.sizes = n.sizes;
    f.reduced = n.reduced;
    size_t first = f.sizes.size();
    std::vector<int64_t> kept_sizes;
    std::vector<size_t> kept;
    for (size_t d = 0; d < f.sizes.size(); ++d) {
      if (!n.reduced[d]) {
        kept.push_back(d);
        kept_sizes.push_back(f.sizes[d]);
        continue;
      }
      if (first == f.sizes.size()) {
        first = d;
        f.sizes[d] = workers;
      } else {
        f.sizes[d] = 1;
      }
    }
    f.is_reduction = true;
    f.combine = n.combine;
    f.dtype = n.dtype;
    f.store_index = n.store_index;
    f.loop_order = n.loop_order;
    f.origins = n.origins;
    const ScalarType dt = n.dtype;
    f.body = [partials, cols, first, kept, kept_sizes, dt](BodyBuilder& bb, const Coords& c) {
      Coords kc;
      std::vector<Expr> ks;
      for (size_t i = 0; i < kept.size(); ++i) {
        kc.push_back(c[kept[i]]);
        ks.push_back(Expr(kept_sizes[i]));
      }
      ScalarNode ld;
      ld.kind = ScalarKind::Load;
      ld.dtype = dt;
      ld.buffer = partials;
      ld.index = sym::simplify(c[first] * Expr(cols) + sym::ravel_index(kc, ks));
      return bb.add(std::move(ld));
    };
    nodes_.push_back(std::move(f));
    const int id = int(nodes_.size()) - 1;
    producer_[size_t(n.buffer)] = id;
    reads_.push_back({partials});
    readers_[size_t(partials)].insert(id);
    log(name_of(node) + " folds its partials " + p_.buffers[size_t(partials)].name + " over " +
        std::to_string(workers) + " ranges of rows in a kernel of its own");
    return id;
  }

  // ---- spills ----

  // What recomputing a node costs, in rough units of one load from a row in
  // cache: a load 1, a cheap arithmetic call 1, anything else (exp, erf,
  // div, ...) 4, a constant or a register read 0. A shared operand is
  // counted at each use: that is what recomputation pays.
  static int op_cost(const ScalarNode& n) {
    static const std::unordered_set<std::string> cheap = {
        "add", "sub", "mul", "neg", "abs", "relu", "maximum", "minimum", "clamp", "clamp_min",
        "clamp_max", "square", "sign", "eq", "ne", "lt", "le", "gt", "ge", "logical_not",
        "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"};
    switch (n.kind) {
      case ScalarKind::Load: return 1;
      case ScalarKind::Call: return cheap.count(n.fn) ? 1 : 4;
      case ScalarKind::Cast:
      case ScalarKind::Where: return 1;
      case ScalarKind::Ref: return n.scratch >= 0 ? 1 : 0;
      case ScalarKind::Constant:
      case ScalarKind::Index: return 0;
    }
    return 1;
  }

  // A value a later pass over the row recomputes (softmax's exp(x - max),
  // needed by the sum and again by the quotient; a residual stream's sum of
  // four loads, needed by layer_norm's three passes) is written to a
  // per-thread row scratch by the first pass and read back by the later
  // one, the row still in cache. Worth it when recomputing costs more than
  // the write and the read-back (cost >= kSpillCost). Each pass spills the
  // largest recomputed values it needs, so their operands are not spilled
  // too.
  static constexpr int kSpillCost = 4;

  void spill_recomputed(Kernel& k) const {
    if (k.inner.empty()) return;
    // Structural hashes of every node, loop by loop (Ref of a scalar-block
    // node or an accumulator means the same value in every loop).
    std::vector<std::vector<uint64_t>> h(k.loops.size());
    for (size_t li = 0; li < k.loops.size(); ++li) {
      for (const ScalarNode& n : k.loops[li].body) {
        uint64_t x = 1469598103934665603ull;
        auto mix = [&](uint64_t v) { x = (x ^ v) * 1099511628211ull; };
        mix(uint64_t(n.kind));
        mix(uint64_t(n.dtype));
        mix(uint64_t(n.buffer + 1));
        mix(n.index.defined() ? n.index.stable_hash() : 0);
        uint64_t bits;
        std::memcpy(&bits, &n.value, 8);
        mix(bits);
        mix(uint64_t(n.int_value));
        mix(std::hash<std::string>()(n.fn));
        mix(uint64_t(n.acc + 1));
        mix(uint64_t(n.loop + 1) * 31 + uint64_t(n.node + 1));
        mix(uint64_t(n.scratch + 1));
        for (int a : n.args) mix(h[li][size_t(a)]);
        h[li].push_back(x);
      }
    }
    std::unordered_map<uint64_t, std::pair<int, int>> first;  // hash -> (loop, node)
    for (size_t li = 0; li < k.loops.size(); ++li) {
      Loop& l = k.loops[li];
      std::vector<int> cost(l.body.size(), 0);
      for (size_t ni = 0; ni < l.body.size(); ++ni) {
        cost[ni] = op_cost(l.body[ni]);
        for (int a : l.body[ni].args) cost[ni] = std::min(cost[ni] + cost[size_t(a)], 1 << 20);
      }
      // Back to front from what the pass must produce: a needed node that an
      // earlier inner pass computed, and that costs enough, is read back;
      // otherwise its operands are needed.
      std::vector<bool> needed(l.body.size(), false);
      for (const Store& s : l.stores) needed[size_t(s.value)] = true;
      for (int r : l.reductions) needed[size_t(k.reductions[size_t(r)].value)] = true;
      for (const auto& sp : l.spills) needed[size_t(sp.first)] = true;
      for (size_t lj = li + 1; lj < k.loops.size(); ++lj)
        for (const ScalarNode& n : k.loops[lj].body)
          if (n.kind == ScalarKind::Ref && n.loop == int(li)) needed[size_t(n.node)] = true;
      for (size_t ni = l.body.size(); ni-- > 0;) {
        if (!needed[ni]) continue;
        auto it = l.inner ? first.find(h[li][ni]) : first.end();
        if (it != first.end() && cost[ni] >= kSpillCost) {
          Loop& src = k.loops[size_t(it->second.first)];
          int s = -1;
          for (const auto& [node, scratch] : src.spills)
            if (node == it->second.second) s = scratch;
          if (s < 0) {
            s = int(k.scratch.size());
            k.scratch.push_back(l.body[ni].dtype);
            src.spills.emplace_back(it->second.second, s);
          }
          ScalarNode ref;
          ref.kind = ScalarKind::Ref;
          ref.dtype = l.body[ni].dtype;
          ref.scratch = s;
          l.body[ni] = ref;
          continue;
        }
        for (int a : l.body[ni].args) needed[size_t(a)] = true;
      }
      // What this pass computes, later passes may read back.
      if (!l.inner) continue;
      for (size_t ni = 0; ni < l.body.size(); ++ni)
        if (needed[ni]) first.emplace(h[li][ni], std::make_pair(int(li), int(ni)));
    }
    prune(k);
  }

  // Kernel::scratch_in_output: a scratch read by one pass only, which
  // stores an output of the scratch's dtype at the scratch's own elements
  // (the output row is contiguous in the inner loops' order). The output is
  // computed memory of this program (not an input another buffer may alias,
  // and never sharing storage with a buffer this kernel reads: a slot frees
  // only after its buffer's last step), read nowhere in the kernel and
  // stored once, so nothing sees the row between the first pass writing it
  // and the last overwriting it.
  void home_scratch_in_outputs(Kernel& k) const {
    if (k.scratch.empty() || k.inner.empty()) return;
    const sym::Expr row = sym::ravel_index(k.inner, k.inner_sizes);
    std::unordered_map<int, int> stores;  // buffer -> stores in the kernel
    std::unordered_set<int> loaded, taken;
    for (const Loop& l : k.loops) {
      for (const Store& st : l.stores) ++stores[st.buffer];
      for (const ScalarNode& n : l.body)
        if (n.kind == ScalarKind::Load) loaded.insert(n.buffer);
    }
    for (int s = 0; s < int(k.scratch.size()); ++s) {
      int reader = -1, readers = 0;
      for (size_t li = 0; li < k.loops.size(); ++li)
        for (const ScalarNode& n : k.loops[li].body)
          if (n.kind == ScalarKind::Ref && n.scratch == s) {
            readers += reader != int(li);
            reader = int(li);
            break;
          }
      if (readers != 1 || !k.loops[size_t(reader)].inner) continue;
      for (const Store& st : k.loops[size_t(reader)].stores) {
        const Buffer& b = p_.buffers[size_t(st.buffer)];
        // (a folding store's row is a worker's partials, read back by every row)
        if (st.fold || b.kind != BufferKind::Computed || b.dtype != k.scratch[size_t(s)] ||
            loaded.count(st.buffer) || stores[st.buffer] != 1 || taken.count(st.buffer))
          continue;
        sym::Expr base = sym::simplify(st.index - row);
        bool per_outer = true;
        for (sym::Expr v : sym::free_symbols(base))
          for (const sym::Expr& in : k.inner) per_outer &= sym::compare(v, in) != 0;
        if (!per_outer) continue;
        k.scratch_in_output.push_back({s, st.buffer, base});
        taken.insert(st.buffer);
        break;
      }
    }
  }

  // Drops the nodes nothing reads any more (the operands of a value now read
  // from a scratch), renumbering each loop's body.
  static void prune(Kernel& k) {
    std::vector<std::vector<bool>> live(k.loops.size());
    for (size_t li = 0; li < k.loops.size(); ++li) live[li].assign(k.loops[li].body.size(), false);
    auto mark = [&](size_t li, int n) { live[li][size_t(n)] = true; };
    for (size_t li = 0; li < k.loops.size(); ++li) {
      const Loop& l = k.loops[li];
      for (const Store& s : l.stores) mark(li, s.value);
      for (int r : l.reductions) mark(li, k.reductions[size_t(r)].value);
      for (const auto& sp : l.spills) mark(li, sp.first);
    }
    // Scalar-block values later loops refer to; then operands, back to front
    // (a body is topologically ordered, and Refs point to earlier loops).
    for (size_t li = k.loops.size(); li-- > 0;) {
      const Loop& l = k.loops[li];
      for (size_t n = l.body.size(); n-- > 0;) {
        if (!live[li][n]) continue;
        for (int a : l.body[n].args) live[li][size_t(a)] = true;
        const ScalarNode& s = l.body[n];
        if (s.kind == ScalarKind::Ref && s.loop >= 0) live[size_t(s.loop)][size_t(s.node)] = true;
      }
    }
    std::vector<std::vector<int>> renum(k.loops.size());
    for (size_t li = 0; li < k.loops.size(); ++li) {
      Loop& l = k.loops[li];
      renum[li].assign(l.body.size(), -1);
      std::vector<ScalarNode> kept;
      for (size_t n = 0; n < l.body.size(); ++n) {
        if (!live[li][n]) continue;
        renum[li][n] = int(kept.size());
        kept.push_back(std::move(l.body[n]));
      }
      l.body = std::move(kept);
    }
    for (size_t li = 0; li < k.loops.size(); ++li) {
      Loop& l = k.loops[li];
      for (ScalarNode& s : l.body) {
        for (int& a : s.args) a = renum[li][size_t(a)];
        if (s.kind == ScalarKind::Ref && s.loop >= 0) s.node = renum[size_t(s.loop)][size_t(s.node)];
      }
      for (Store& s : l.stores) s.value = renum[li][size_t(s.value)];
      for (auto& sp : l.spills) sp.first = renum[li][size_t(sp.first)];
      for (int r : l.reductions) {
        int& v = k.reductions[size_t(r)].value;
        v = renum[li][size_t(v)];
      }
    }
  }

  Program& p_;
  std::vector<ComputeNode> nodes_;
  CompilerOptions options_;
  std::vector<Step> externs_;
  std::vector<int> producer_;                      // buffer -> compute node (the last)
  std::vector<int> writers_;                       // buffer -> compute nodes writing it
  std::vector<std::unordered_set<int>> readers_;   // buffer -> compute nodes reading it
  std::vector<std::unordered_set<int>> reads_;     // compute node -> buffers it reads
  std::vector<int> deferred_;                      // nodes waiting for the open group to close
  std::vector<Step> held_views_;                   // view steps waiting for the open group to close
  std::unordered_set<int> held_view_buffers_;      // ... and the buffers they make
  std::unordered_set<int> read_outside_;           // buffers read by externs or outputs
  Group group_;
  bool open_ = false;
};

}  // namespace

void schedule(Program& p, std::vector<ComputeNode> nodes, std::vector<Step> externs,
              const std::vector<PendingStep>& order, const CompilerOptions& options) {
  Scheduler(p, std::move(nodes), std::move(externs), options).run(order);
}

}  // namespace ignis::compiler
