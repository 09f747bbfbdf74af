// The twins an in-place op and its functional form are, by name: add_ and
// add, index_put_ and index_put (the same overload). Functionalization maps
// in-place ops to their functional forms (aot/functionalize.cpp); the
// compiler maps a functional form back where its copy is not needed
// (compiler/memory_plan.cpp, reinplace_extern).
#pragma once

#include <string>

#include "ignis/dispatch/dispatcher.h"

namespace ignis {

// X for X_ (null when absent or when the op's name has no trailing _).
inline const OpHandle* functional_variant(const FunctionSchema& inplace) {
  if (inplace.name.empty() || inplace.name.back() != '_') return nullptr;
  const std::string base = inplace.name.substr(0, inplace.name.size() - 1);
  return Dispatcher::get().find(inplace.overload.empty() ? base : base + "." + inplace.overload);
}

// X_ for X (null when absent).
inline const OpHandle* inplace_variant(const FunctionSchema& functional) {
  const std::string twin = functional.name + "_";
  return Dispatcher::get().find(functional.overload.empty() ? twin
                                                            : twin + "." + functional.overload);
}

}  // namespace ignis
