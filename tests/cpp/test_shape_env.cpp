// ShapeEnv: symbol creation (torch's names, duck sizing), evaluate() with
// ranges narrowed by one-symbol guards, replacements from equalities,
// specialisation, and the guards in torch's words over sources.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ignis/core/error.h"
#include "ignis/sym/print.h"
#include "ignis/sym/shape_env.h"

using namespace ignis::sym;

TEST(ShapeEnv, CreateSymbolNamesAndDuckSizing) {
  ShapeEnv env;
  std::vector<std::string> logs;
  env.set_logger([&](const std::string& s) { logs.push_back(s); });
  Expr a = env.create_symbol(4, "L['x'].size()[0]", 77);
  Expr b = env.create_symbol(6, "L['x'].size()[1]", 77);  // id taken: probes to 78
  EXPECT_EQ(str(a), "s77");
  EXPECT_EQ(str(b), "s78");
  EXPECT_EQ(logs[0], "create_symbol s77 = 4 for L['x'].size()[0] [2, int_oo]");
  // Duck sizing: same value, same symbol, and a guard that the sources agree.
  Expr c = env.create_symbol(4, "L['y'].size()[0]", 12);
  EXPECT_EQ(c, a);
  Expr d = env.create_symbol(4, "L['z'].size()[0]", 13, /*duck=*/false);
  EXPECT_NE(d, a);
  EXPECT_EQ(str(d), "s13");
  EXPECT_EQ(env.hint_of(a * 2 + b), 14);
  EXPECT_THROW(env.create_symbol(1, "L['w'].size()[0]", 1), ignis::Error);
  std::vector<std::string> g = env.guard_strs();
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0], "L['y'].size()[0] == L['x'].size()[0]");
  EXPECT_EQ(g[1], "2 <= L['x'].size()[0]");
}

TEST(ShapeEnv, EvaluateNarrowsRangesAndRecordsOnlyWhatIsNotKnown) {
  ShapeEnv env;
  Expr s = env.create_symbol(4, "L['x'].size()[0]", 77);
  EXPECT_TRUE(env.evaluate(ge(s, 2)));   // known from [2, inf): no guard
  EXPECT_TRUE(env.evaluate(ne(s, 1)));
  EXPECT_TRUE(env.relations().empty());
  EXPECT_FALSE(env.evaluate(gt(s, 8)));  // guard s <= 8
  EXPECT_EQ(env.symbols()[0].hi, 8);
  EXPECT_TRUE(env.evaluate(lt(s, 20)));  // now known
  EXPECT_FALSE(env.evaluate(gt(s, 9)));
  EXPECT_TRUE(env.relations().empty());
  EXPECT_EQ(env.guard_strs(), std::vector<std::string>{"2 <= L['x'].size()[0] <= 8"});
  EXPECT_TRUE(env.evaluate(gt(2 * s, 7)));  // 2*s > 7: s >= 4
  EXPECT_EQ(env.symbols()[0].lo, 4);
}

TEST(ShapeEnv, RelationsOverTwoSymbolsAndReplacements) {
  ShapeEnv env;
  Expr a = env.create_symbol(4, "L['x'].size()[0]", 77);
  Expr b = env.create_symbol(5, "L['y'].size()[0]", 33);
  EXPECT_TRUE(env.evaluate(lt(a, b)));
  ASSERT_EQ(env.relations().size(), 1u);
  EXPECT_EQ(env.source_str(env.relations()[0]), "L['x'].size()[0] < L['y'].size()[0]");
  EXPECT_TRUE(env.evaluate(lt(a, b)));  // the same question again: one guard
  // Equal symbols: a guard and a replacement (the later symbol goes).
  Expr c = env.create_symbol(4, "L['z'].size()[0]", 10, /*duck=*/false);
  EXPECT_TRUE(env.expect_equal(a, c));
  EXPECT_EQ(env.replace(c * 3), env.replace(a * 3));
  EXPECT_EQ(str(env.replace(c + b)), "s33 + s77");
  EXPECT_FALSE(env.expect_equal(a, b));  // differ at the hints
}

TEST(ShapeEnv, SpecializeGuardsEqualityAndReplaces) {
  ShapeEnv env;
  std::vector<std::string> logs;
  env.set_logger([&](const std::string& s) { logs.push_back(s); });
  Expr s = env.create_symbol(5, "L['x'].size()[0]", 77);
  Expr t = env.create_symbol(3, "L['x'].size()[1]", 27);
  EXPECT_EQ(env.specialize(s * 2, "range()"), 10);  // 2*s == 10: s == 5
  EXPECT_TRUE(env.replace(s).is_const(5));
  EXPECT_TRUE(env.is_symbolic(t));
  EXPECT_EQ(env.guard_strs()[0], "L['x'].size()[0] == 5");
  bool logged = false;
  for (const std::string& l : logs) logged |= l == "specialize 2*s77 = 10 (range())";
  EXPECT_TRUE(logged);
  // A relation over two symbols that is not an equality stays a relation.
  EXPECT_EQ(env.specialize(t * t, "index"), 9);  // non-linear: kept as Eq(t**2, 9)
  EXPECT_EQ(env.relations().size(), 1u);
}

TEST(ShapeEnv, ConstrainRangeFromAUsersMark) {
  ShapeEnv env;
  Expr s = env.create_symbol(8, "L['x'].size()[0]", 77);
  EXPECT_TRUE(env.constrain_range(s, 0, 64));  // the lower bound stays 2
  EXPECT_EQ(env.guard_strs().back(), "2 <= L['x'].size()[0] <= 64");
  // The bounds decide s > 100 and s >= 2: no guard recorded.
  EXPECT_FALSE(env.evaluate(gt(s, Expr(100))));
  EXPECT_TRUE(env.evaluate(ge(s, Expr(2))));
  EXPECT_TRUE(env.relations().empty());
  EXPECT_EQ(env.guard_strs().back(), "2 <= L['x'].size()[0] <= 64");
  // A range that leaves out the hint changes nothing.
  EXPECT_FALSE(env.constrain_range(s, 10, 20));
  EXPECT_EQ(env.guard_strs().back(), "2 <= L['x'].size()[0] <= 64");
  // A range of one value makes the symbol that constant.
  EXPECT_TRUE(env.constrain_range(s, 8, 8));
  EXPECT_FALSE(env.is_symbolic(s * 2));
  EXPECT_EQ(env.guard_strs().back(), "L['x'].size()[0] == 8");
}

// Note [Unbacked symbols]: a data-dependent size has a range and no guard; a
// question its range leaves open is an error naming what computes it.
// A runtime check's relation (Note [Runtime checks of data-dependent counts])
// narrows the one unbacked symbol it bounds, and then answers decisions;
// equalities, relations of two symbols and backed symbols are not assumed.
TEST(ShapeEnv, AssumedBoundsNarrowAnUnbackedRange) {
  ShapeEnv env;
  Expr s = env.create_symbol(6, "L['x'].size()[0]", 77);
  Expr u = env.create_unbacked("nonzero() at f.py:3", 40);
  Expr v = env.create_unbacked("nonzero() at f.py:4");
  EXPECT_EQ(env.decided(gt(u, Expr(0))), -1);
  Expr sym;
  int64_t lo = -1, hi = -1;
  ASSERT_TRUE(env.assume(gt(u, Expr(0)), &sym, &lo, &hi));
  EXPECT_EQ(sym, u);
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 40);
  ASSERT_TRUE(env.assume(lt(u * 2, Expr(21)), &sym, &lo, &hi));  // 2 u < 21: u <= 10
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 10);
  EXPECT_EQ(env.decided(gt(u, Expr(0))), 1);
  EXPECT_TRUE(env.evaluate(ne(u, Expr(0))));  // settled by the range: no DataDependentError
  EXPECT_FALSE(env.evaluate(gt(u, Expr(10))));
  EXPECT_FALSE(env.assume(eq(u, Expr(3)), &sym, &lo, &hi));
  EXPECT_FALSE(env.assume(lt(u, v), &sym, &lo, &hi));
  EXPECT_FALSE(env.assume(gt(s, Expr(3)), &sym, &lo, &hi));
  EXPECT_TRUE(env.relations().empty());
}

TEST(ShapeEnv, UnbackedSymbolsAnswerOnlyFromTheirRange) {
  ShapeEnv env;
  Expr s = env.create_symbol(6, "L['x'].size()[0]", 77);
  Expr u = env.create_unbacked("nonzero() at f.py:3", 24);
  Expr v = env.create_unbacked("nonzero() at f.py:4");
  EXPECT_EQ(str(u), "u0");
  EXPECT_EQ(str(v), "u1");
  EXPECT_TRUE(env.has_unbacked(u * 2 + 1));
  EXPECT_FALSE(env.has_unbacked(s * 2));
  // The range settles these without a guard.
  EXPECT_TRUE(env.evaluate(ge(u, Expr(0))));
  EXPECT_FALSE(env.evaluate(gt(u, Expr(24))));
  EXPECT_TRUE(env.evaluate(lt(u, Expr(100))));
  EXPECT_TRUE(env.relations().empty());
  // Everything else is data-dependent, however the hints compare.
  try {
    env.evaluate(gt(u, Expr(8)));
    FAIL() << "u0 > 8 was decided";
  } catch (const DataDependentError& e) {
    EXPECT_EQ(std::string(e.what()),
              "Could not guard on data-dependent expression u0 > 8 (u0 is nonzero() at f.py:3)");
  }
  EXPECT_THROW(env.evaluate(eq(u, s)), DataDependentError);
  EXPECT_THROW(env.expect_equal(u, v), DataDependentError);
  // Equal to the placeholder hint is no answer either; outside the range is.
  EXPECT_THROW(env.expect_equal(v, Expr(ShapeEnv::kUnbackedHint)), DataDependentError);
  EXPECT_FALSE(env.expect_equal(u, Expr(ShapeEnv::kUnbackedHint)));
  EXPECT_TRUE(env.expect_equal(u, u));
  EXPECT_THROW(env.specialize(u + s, "range()"), DataDependentError);
  EXPECT_TRUE(env.relations().empty());
  // No guard mentions them: they have no source to read.
  EXPECT_EQ(env.guard_strs(), std::vector<std::string>{"2 <= L['x'].size()[0]"});
  EXPECT_EQ(env.source_str(u + s), "L['x'].size()[0] + u0");
}
