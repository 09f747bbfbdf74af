// The Hopper (sm_90a) flash-attention kernels: warpgroup MMAs (wgmma) on
// 128-byte-swizzled shared tiles. flash_attention.cpp uses the forward on
// compute capability 9.0 forward and backward (head tiles 64 and 128, with
// or without an attn_mask) for q, k, v (and grad_out) of 16-byte aligned
// rows ($IGNIS_CUDA_FLASH_SM90=0 turns them off); every other call keeps
// the mma.sync kernels.
// flash_attention_sm90.cpp's Note explains the layout and the pipeline.
#pragma once

#include <string>

namespace ignis::cuda {

// The kernel templates ig_flash_fwd_sm90<T, HD, MASK> and ig_flash_bwd_sm90<T, HD, MASK>
// (T = ig_bf16 or ig_half, HD the head tile, 64 or 128), as CUDA
// C++ text to follow flash_attention.cpp's templates (it uses their
// IgFlashParams, ig_fa_base, ig_fa_cp16, ig_fa_exp2 and quad reductions).
// Under IG_HOST_EMULATION the wgmma wrappers call the host emulation's
// ig_host_wgmma (tests/cuda_fake/block_threads_host.h), which reads shared
// memory through the same descriptors; the fake driver selects the kernel
// when it plays a compute capability 9.0 device (FAKE_CUDA_CC=90).
const std::string& flash_sm90_templates();

// Query rows and threads a block of ig_flash_fwd_sm90 (two warpgroups of 64
// rows each), and the dynamic shared memory it needs at head tile kd with
// an attn_mask of kind `mask` (0 none, 1 bool, 2 the input's dtype).
inline constexpr int kFlashSm90Rows = 128;
inline constexpr int kFlashSm90Threads = 256;
int flash_forward_sm90_shared_bytes(int kd, int mask);

// The backward ig_flash_bwd_sm90<T, HD, MASK>: blocks of 128 keys (two
// warpgroups), and its dynamic shared memory at head tile kd with an
// attn_mask of kind `mask`.
inline constexpr int kFlashSm90BackwardKeys = 128;
int flash_backward_sm90_shared_bytes(int kd, int mask);

}  // namespace ignis::cuda
