// view_as_real(view_as_complex(x)) is x, and view_as_complex(view_as_real(z))
// is z: the two views change the dtype and nothing else (a pair's geometry
// comes back exactly; Note [Complex tensors] in ops/complex.cpp). Complex
// ops lower to real ops whose result is viewed as complex, which the
// program then views as real again -- LLaMA's rotary embedding,
// view_as_real(view_as_complex(x) * freqs) -- and the pair, run as two
// extern calls, kept the multiply and what follows in separate kernels.
#pragma once

#include "ignis/graph/graph.h"

namespace ignis::graph {

// Replaces every use of such a pair's outer view by the inner view's input;
// returns how many did. Views left unused are erased.
size_t cancel_complex_views(Graph& g);

// Whether cancel_complex_views would rewrite anything.
bool has_complex_view_pair(const Graph& g);

}  // namespace ignis::graph
