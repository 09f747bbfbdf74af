// Data-movement kernels behind the indexing ops (CPU).
//
// Most of the indexing family (index, index_put_, index_select, flip, roll,
// pad) is one pattern: every output position is a product of per-dim
// positions, and each dim maps its position to a byte offset in the
// destination and in the source, either affinely (a stride) or through a
// table (an index tensor, a reflection, a rotation). mapped_copy runs that
// pattern once for all of them; moving bytes needs only the item size, so the
// copy instantiates per size, not per dtype. gather/scatter along one dim,
// triangular masks and nonzero have kernels of their own.
#pragma once

#include <optional>
#include <vector>

#include "ignis/core/scalar.h"
#include "ignis/core/tensor.h"

namespace ignis::cpu {

// One dim of a mapped copy. Position i is at byte offset dst_stride * i in
// the destination, or dst_table[i] when the table is not empty; likewise for
// the source.
struct MapDim {
  int64_t size = 1;
  int64_t dst_stride = 0, src_stride = 0;
  std::vector<int64_t> dst_table, src_table;
};

enum class MapOp : uint8_t { Copy, Add };

// For every position of `dims` (dims[0] outermost): dst[offset] = src[offset]
// (MapOp::Add: dst += alpha * src, in `dtype` arithmetic). The first `parallel_dims`
// dims may be split across threads, so the caller guarantees that their
// positions write disjoint elements; the other dims run in order, so of two
// writes to one element the later wins (and Add sums them deterministically).
void mapped_copy(char* dst, const char* src, std::vector<MapDim> dims, ScalarType dtype,
                 MapOp op, int parallel_dims, const Scalar& alpha = Scalar(int64_t(1)));

// Byte offsets (over self's strides) of every position of the broadcast
// index shape: out[b] = sum_k wrap(indices[k][b]) * byte_strides[k]. Each
// index tensor is int32 or int64, already expanded to the same shape and
// range-checked against sizes[k]; negative values count from the end.
void index_offsets(const std::vector<Tensor>& indices, const std::vector<int64_t>& sizes,
                   const std::vector<int64_t>& byte_strides, int64_t* out);

// The stride with which positions of `sizes` (row-major order) step when the
// strides make them one affine run (dims of size 1 ignored), else nullopt.
std::optional<int64_t> collapsed_stride(const DimVector& sizes, const DimVector& strides);

// Byte offsets of every element of `t` (row-major order) over its strides.
void strided_offsets(const Tensor& t, int64_t* out);

// How the memory of two tensors overlaps (PyTorch's get_overlap_status):
// Full when they are the same elements, Partial when their dense ranges
// intersect otherwise, TooHard when one is not dense (no verdict).
enum class MemOverlap : uint8_t { No, Full, Partial, TooHard };
MemOverlap mem_overlap(const Tensor& a, const Tensor& b);
// PyTorch's message for a write that would read memory it overwrites.
inline constexpr const char* kOverlapMessage =
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation.";

// The first value of the int32/int64 tensor `index` outside [lo, hi).
std::optional<int64_t> find_out_of_range(const Tensor& index, int64_t lo, int64_t hi);

// torch.gather / scatter along `dim`. For every position p of `index`:
//   Gather:      other[p] = self[p with dim := index[p]]
//   Scatter:     self[p with dim := index[p]] = other[p]
//   ScatterAdd:  self[p with dim := index[p]] += other[p]
//   ScatterFill: self[p with dim := index[p]] = value
// Index values must already lie in [0, self.size(dim)). Writes along one
// fiber of `dim` happen in order, so repeated indices resolve like PyTorch's
// CPU kernel (the last write wins).
enum class FiberOp : uint8_t { Gather, Scatter, ScatterAdd, ScatterFill };
void gather_scatter(FiberOp op, const Tensor& self, int64_t dim, const Tensor& index,
                    const Tensor& other, const Scalar& value);

// scatter_reduce: out[p with dim := index[p]] (reduce)= src[p] for every
// position p of the int64 `index`. Without include_self the reduction at a
// scattered position starts from the src values alone. Mean divides by the
// number of values reduced (floor division for integers); Max/Min
// propagate NaN.
enum class Reduce : uint8_t { Sum, Prod, Mean, Max, Min };
void scatter_reduce(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                    Reduce r, bool include_self);

// Zeroes the elements of the matrices in the last two dims of `t` outside
// the lower (tril) or upper (triu) triangle bounded by diagonal k.
void zero_triangle(const Tensor& t, int64_t k, bool lower);

// The coordinates of the nonzero elements of `self`, row-major, as a
// contiguous [n, self.dim()] int64 tensor.
Tensor nonzero(const Tensor& self);

// The number of true elements of a bool/uint8 tensor.
int64_t count_true(const Tensor& mask);

// self[mask] for a mask covering the leading mask.dim() dims of self, whose
// other dims form one contiguous block per mask element: copies the blocks
// where the mask holds, in row-major order, into the contiguous `out`.
// (x[x > 0] without building nonzero() coordinates.)
void masked_gather(const Tensor& out, const Tensor& self, const Tensor& mask);

}  // namespace ignis::cpu
