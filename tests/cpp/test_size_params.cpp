// Size-generic code's printing context (compiler/size_params.h) and sym's
// constant hook it prints through.
#include <gtest/gtest.h>

#include "ignis/compiler/size_params.h"
#include "ignis/sym/print.h"

using namespace ignis;
using namespace ignis::sym;

TEST(SymPrint, ConstantSpellerSeesEveryLiteralOfTheCppSpelling) {
  Expr x = symbol("x", {0, 99}), y = symbol("y", {0, 6});
  std::vector<int64_t> seen;
  auto spell = [&](int64_t v) {
    seen.push_back(v);
    return v == 100 ? std::string("N") : std::string();
  };
  // coefficients, the constant term (its magnitude after the sign) and a divisor
  EXPECT_EQ(to_cpp(x + Expr(100) * y - Expr(7), {}, spell), "x + N*y - 7");
  EXPECT_EQ(seen, (std::vector<int64_t>{100, 7}));
  EXPECT_EQ(to_cpp(floordiv(x, Expr(100)), {}, spell), "(x / N)");
  EXPECT_EQ(to_cpp(x + Expr(100) * y), "x + 100*y");  // no hook: unchanged
}

TEST(SizeParams, LiftsEachOccurrenceButNeverZeroOrOne) {
  Expr x = symbol("x", {0, 99}), y = symbol("y", {0, 6});
  compiler::SizeParams p(/*generic=*/true, /*lift=*/true);
  EXPECT_EQ(p.expr(Expr(100) * x + y), "P[0]*x + y");
  EXPECT_EQ(p.integer(7), "P[1]");
  // an equal value gets its own parameter: the text never depends on
  // which sizes happen to be equal
  EXPECT_EQ(p.integer(100), "P[2]");
  EXPECT_EQ(p.integer(1), "1");
  EXPECT_EQ(p.integer(0), "0");
  EXPECT_EQ(p.integer(-1), "-1");
  // a product is one operand wherever it is printed (`i / (P[3]*P[4])`)
  EXPECT_EQ(p.product({Expr(100), Expr(1), Expr(7)}), "(P[3]*P[4])");
  EXPECT_EQ(p.product({Expr(1), Expr(9)}), "P[5]");
  EXPECT_EQ(p.product({Expr(1)}), "1");
  EXPECT_EQ(p.operand(x + y), "(x + y)");
  EXPECT_EQ(p.operand(x), "x");
  EXPECT_EQ(p.values(), (std::vector<int64_t>{100, 7, 100, 100, 7, 9}));
}

TEST(SizeParams, WithoutLiftingItPrintsTheValuesAndStillCollectsThem) {
  Expr x = symbol("x", {0, 99});
  compiler::SizeParams in_place(true, false), lifted(true, true), fixed(false, true);
  EXPECT_EQ(in_place.expr(Expr(100) * x + Expr(3)), "100*x + 3");
  EXPECT_EQ(lifted.expr(Expr(100) * x + Expr(3)), "P[0]*x + P[1]");
  EXPECT_EQ(in_place.values(), lifted.values());
  EXPECT_EQ(fixed.expr(Expr(100) * x + Expr(3)), "100*x + 3");  // static code
  EXPECT_TRUE(fixed.values().empty());
}
