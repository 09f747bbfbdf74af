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
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/sym/expr.h"

namespace ignis::compiler {

class SizeParams {
 public:
  // generic: collect the values a size-generic kernel reads from P; lift:
  // spell them as P[k] (else as the literals static code prints, with the
  // values still collected: the text T with B substituted).
  SizeParams(bool generic, bool lift) : generic_(generic), lift_(generic && lift) {}

  bool generic() const { return generic_; }

  // v as generated code spells it: P[k] (a new parameter), or its literal
  // (std::to_string, as the printers write integers of their own).
  std::string integer(int64_t v);
  // Like integer(v), but lifted whatever its value: a count the text is
  // written for any value of (a split kernel's ranges, which may be 1),
  // where 0, 1 and -1 are no different loop nests.
  std::string count(int64_t v);
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
  std::string lifted(int64_t v, bool any_value = false);

  bool generic_, lift_;
  std::vector<int64_t> values_;
};

}  // namespace ignis::compiler
