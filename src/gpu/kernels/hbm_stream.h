// HBM read streaming with TMA bulk copies: the kernel that measures B_g, the best HBM read
// bandwidth of the GPU, which every benchmark floor divides by (DESIGN.md §2, §6).
//
// Operand: g_src [bytes] in HBM (16-byte aligned, bytes a multiple of 16), split into chunks of
// chunk_bytes (the last one may be shorter). Chunk c belongs to CTA c mod gridDim.x (a
// persistent grid, one or more CTAs per SM), so consecutive chunks stream from different SMs.
// Pipeline (per CTA): an SMEM ring of `stages` buffers of chunk_bytes, each with a "full"
// mbarrier. Thread 0 fills the ring with cp.async.bulk global->shared copies (TMA 1D bulk,
// CCCL cuda::ptx), each completing on its stage's mbarrier via complete_tx; all threads wait on
// the stage's phase parity, consume it, meet at a CTA barrier, and thread 0 refills the stage
// with the CTA's chunk `stages` ahead. Up to `stages` chunks per CTA are in flight.
// Consumption: every 32-bit word of the chunk is added into a per-thread uint64, so the data is
// demonstrably read (tests compare with the host); the CTA adds its sum to *g_checksum
// (atomic, mod 2^64). The SMEM reads are ~7x faster than an SM's share of HBM bandwidth, so
// the kernel is HBM-bound.
// Invariant: checksum = sum over all 32-bit words of g_src[0, bytes) mod 2^64, whatever the
// grid, chunk size and stage count; nothing outside [0, bytes) is read.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

struct HbmStreamParams {
  const void* g_src = nullptr;               // [bytes] HBM, 16-byte aligned
  uint64_t bytes = 0;                        // multiple of 16
  uint32_t chunk_bytes = 32 << 10;           // bytes per TMA bulk copy: multiple of 16, <= 512 KiB
  int32_t stages = 4;                        // SMEM ring depth, >= 1
  unsigned long long* g_checksum = nullptr;  // [1] uint64, HBM: += sum of the 32-bit words
};

/// Dynamic SMEM bytes one CTA needs: stages x chunk_bytes of data plus the mbarriers.
uint64_t hbm_stream_smem_bytes(uint32_t chunk_bytes, int32_t stages);

/// Resident CTAs per SM for this configuration on the current device (0: does not fit).
int hbm_stream_ctas_per_sm(uint32_t chunk_bytes, int32_t stages);

/// Launches `grid` CTAs on `stream` (graph-capturable). Throws dak::Error for an invalid
/// configuration (alignment, sizes, SMEM beyond the device's limit) or a launch error.
void hbm_stream(const HbmStreamParams& p, int grid, cudaStream_t stream);

}  // namespace dak::gpu
