// Memory formats, as PyTorch names them: the order in which a tensor's
// elements are laid out in memory, asked for by clone, contiguous, to,
// empty and the *_like creators (`memory_format=`), and tested by
// is_contiguous(memory_format=). ChannelsLast is NCHW's sizes with NHWC's
// strides (4-D), ChannelsLast3d NCDHW's with NDHWC's (5-D); Preserve keeps
// the source's layout where it is dense (Note [Memory formats] in
// memory_format.cpp).
#pragma once

#include <cstdint>

#include "ignis/core/dim_vector.h"

namespace ignis {

enum class MemoryFormat : int8_t { Contiguous = 0, Preserve = 1, ChannelsLast = 2, ChannelsLast3d = 3 };

// "contiguous_format", "preserve_format", "channels_last", "channels_last_3d".
const char* memory_format_name(MemoryFormat f);

// Dense strides laying `sizes` out in format `f` (Contiguous, ChannelsLast or
// ChannelsLast3d). A ValueError names the rank when ChannelsLast is asked of
// a tensor that is not 4-D (ChannelsLast3d: not 5-D), as PyTorch does.
DimVector strides_in_format(const DimVector& sizes, MemoryFormat f);

// Whether `strides` are those of format `f` for `sizes`, size-1 dims' strides
// ignored (PyTorch's is_contiguous(memory_format) / is_channels_last_contiguous).
bool has_format(const DimVector& sizes, const DimVector& strides, MemoryFormat f);

// The format strides look like, as torch's suggest_memory_format decides it:
// ChannelsLast (4-D) or ChannelsLast3d (5-D) where the strides run over the
// channels innermost and the batch outermost (ambiguous cases, a channel
// dim of size 1 among them, are Contiguous), else Contiguous. `to(memory_format=f)`
// returns its input unchanged when this is f.
MemoryFormat suggest_memory_format(const DimVector& sizes, const DimVector& strides);

}  // namespace ignis
