// NVRTC, loaded at run time: CUDA C++ source in, a cubin for one GPU
// architecture out.
//
// Like the driver (driver.h), NVRTC is dlopened on first use, so ignis
// neither links it nor needs it to import. The library is looked for as
// $IGNIS_NVRTC_LIBRARY, then libnvrtc.so.13 / .12 / libnvrtc.so on the
// loader's path, then under $CUDA_HOME, $CUDA_PATH and /usr/local/cuda.
#pragma once

#include <string>
#include <vector>

namespace ignis::cuda {

// NVRTC's version as major * 1000 + minor * 10 (12080 for 12.8), or a
// RuntimeError naming every library tried when none loads.
int nvrtc_version();
// The path of the NVRTC library in use (for messages and docs).
std::string nvrtc_library();

// What nvrtc_compile returns: machine code for sm_<arch> (what a GPU loads),
// or PTX for compute_<arch>, which skips ptxas (about half of NVRTC's time)
// and still runs the front end and NVVM, where errors in generated source
// show up; the GPU-less tests check every kernel that way.
enum class NvrtcOutput { kCubin, kPtx };

// Compiles `source` (a whole translation unit; `name` labels it in errors)
// for architecture <arch> ("90" for an H100/H200) and returns the cubin (or
// the PTX). A compile error raises a RuntimeError with NVRTC's log.
std::string nvrtc_compile(const std::string& source, const std::string& name, int arch,
                          const std::vector<std::string>& options,
                          NvrtcOutput output = NvrtcOutput::kCubin);

}  // namespace ignis::cuda
