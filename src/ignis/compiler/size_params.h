// The printing context of a kernel's integers: literals (static code), or
// reads of the kernel's parameter array P (size-generic code).
//
// Note [Size-generic code]
// A compiled library is worth reusing across sizes only if its source does
// not change with them. In size-generic mode (CompilerOptions::size_generic)
// the code printers (codegen_cpp, codegen_cuda) spell every integer that
// comes from the loop IR -- loop extents, index coefficients and offsets,
// numels, a reduction's extent, the work compared with the parallel
// threshold, GEMM sizes and strides -- as `P[k]`, a read of the kernel's
// parameter array, except 0, 1 and -1 (a unit stride must stay visible to
// the vectoriser, and a size-1 dim is a different loop nest anyway). The
// code generator's own constants (lane counts, vector widths, array sizes,
// the threshold itself, buffer numbers) stay literals. Each occurrence gets
// its own parameter, numbered in the order printed within the kernel. (One
// parameter per distinct value, equal sizes sharing it, was the first
// design: it made the text depend on which values coincide -- a GPT whose
// sequence length met its batch, head or embedding size printed another
// text and compiled again, 5 compiles instead of 2 over 12 lengths -- and
// the sharing bought no speed measurable here.)
//
// The text T and the values B are, together, exactly the source printed
// with the same decisions and the values in place (SizeParams(false)): T
// with each P[k] replaced by B[k]'s literal is that text, character for
// character (tests/python/test_compiler_size_generic.py checks it). So
// running the library compiled from T with B is running that source, for
// every size whose lowering printed the same T: no range reasoning is
// needed for soundness. A size whose decisions differ (another fusion, a
// size-1 dim, a different simplification of an index) prints another T and
// compiles again; the printers keep cheap decisions size-independent in
// this mode (always a vector tail, threads chosen at run time) so that most
// sizes share one T. All integers go through one SizeParams per kernel, the
// sym printer's constants included (sym::ConstantSpeller): there is no
// string replacement on the output.
//
// Note [Parameters that vary with the sizes]
// Lifting every integer makes a size-generic kernel pay for numbers that
// never change with the sizes: a model's head size, its width, a stride of
// a weight. The costly ones are divisors: the small GPT's attention
// backward gathers q, k and v's gradients with `x2 / P[8]` and `x2 % P[10]`
// (the head size, 16) in its vectorised loop, an integer division per
// element where static code shifts and masks: 629 us against 115 a call
// on this VM. So a dynamic graph is first *probed*: before its first
// lowering, the graphs AOT traced at two other sizes of its symbols (the
// hints of Note [Symbolic AOT graphs], same structure, other numbers) are
// lowered and printed with every integer lifted, and VaryingParams records,
// per all-lifted kernel text, the values each parameter took. A parameter
// that took one value at every size seen is printed as its literal from
// then on; only those that varied stay P[k]. Later sizes record their
// values too, so a literal that turns out to vary (a step function of the
// sizes, equal at the probes) is lifted for every size after the one that
// showed it.
//
// Which integers are lifted never decides what a kernel computes: a text
// with its values substituted is the static source at that size whatever
// the mask (the property above), so the mask moves only how many sizes
// share one text and how fast the kernel runs. A kernel text never probed
// (a static graph under size_generic=True, a graph traced per size) lifts
// everything, as before. Counts (SizeParams::count) stay lifted: a split
// kernel's ranges are written for any count so that sizes on either side
// of a threshold share a text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/sym/expr.h"

namespace ignis::compiler {

struct Kernel;  // loop_ir.h

// When the printers record what they print (Note [Parameters that vary with
// the sizes]): not at all, a real compile's values (for texts probed
// before), or a probe's (which starts a text's entry).
enum class Observe : uint8_t { Off, Record, Probe };

// The process's record of the values each kernel's parameters took (a
// bounded table, thread-safe), by the kernel's all-lifted text and the graph
// nodes fused into it. Two kernels can print one all-lifted text while
// different parameters vary in each (a bias gradient's column sum over 16 *
// T rows of 64 columns, a position embedding's over 16 rows of T * 64), and
// which kernels share a text can change with the sizes; the nodes' names,
// the same at every size of a symbolic graph, keep each kernel's record its
// own. A printer makes one ParamRecorder a program.
class ParamRecorder {
 public:
  explicit ParamRecorder(Observe how) : how_(how) {}
  // Records kernel k's values (those of its all-lifted text, in order) as
  // `how` says, once a program, and returns per parameter 1 when its value
  // has varied, 0 when every size seen had one value; empty when k was not
  // seen at two sizes, a probe among them (lift every parameter).
  std::vector<uint8_t> literals(const std::string& all_lifted_text, const Kernel& k,
                                const std::vector<int64_t>& values);

 private:
  Observe how_;
  std::vector<size_t> seen_;  // the kernels recorded in this program (their keys' hashes)
};
void clear_varying_params();  // (tests)

class SizeParams {
 public:
  // generic: collect the values a size-generic kernel reads from P; lift:
  // spell them as P[k] (else as the literals static code prints, with the
  // values still collected: the text T with B substituted).
  SizeParams(bool generic, bool lift) : generic_(generic), lift_(generic && lift) {}

  bool generic() const { return generic_; }
  // Print the parameters `varying` marks 0 as their literals (Note
  // [Parameters that vary with the sizes]): `varying` has one entry per
  // parameter the all-lifted text has, in its order.
  void keep_literals(std::vector<uint8_t> varying) { varying_ = std::move(varying); }

  // v as generated code spells it: P[k] (a new parameter), or its literal
  // (std::to_string, as the printers write integers of their own).
  std::string integer(int64_t v);
  // Like integer(v), but lifted whatever its value: a count the text is
  // written for any value of (a split kernel's ranges, which may be 1),
  // where 0, 1 and -1 are no different loop nests.
  std::string count(int64_t v);
  // Like integer(v), but a parameter even where the probes saw one value
  // (Note [Parameters that vary with the sizes]): what a split's count
  // decides -- the count, a range's length, a workspace offset -- is a step
  // function of the sizes, equal at nearby sizes and not at the next
  // threshold, and a text is written for any split count.
  std::string split_value(int64_t v);
  // sym::to_cpp(e), with the constants lifted.
  std::string expr(sym::Expr e);
  // The product of `sizes` (each one lifted; 1s dropped; "1" for none),
  // e.g. "(P[0]*P[2])": a numel written over the parameters already used
  // rather than as a new value that might coincide with another. An operand
  // in any context: parenthesised when it has several factors.
  std::string product(const std::vector<sym::Expr>& sizes);
  // expr(e) as an operand of `/`, `%` or `*`: parenthesised unless a
  // constant or a symbol.
  std::string operand(sym::Expr e);

  // B: the value of each parameter, P[0] first.
  const std::vector<int64_t>& values() const { return values_; }

 private:
  // "" when v is spelled as its literal.
  std::string lifted(int64_t v, bool any_value = false, bool maskable = true);

  bool generic_, lift_;
  std::vector<int64_t> values_;
  std::vector<uint8_t> varying_;
  int64_t occurrences_ = 0;
};

}  // namespace ignis::compiler
