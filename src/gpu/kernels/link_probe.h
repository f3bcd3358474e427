// Link probe: one launch in which some CTAs stream HBM and the others stream pinned host memory
// with TMA bulk copies, each CTA timing itself with the GPU global timer. `dak profile` uses it for
// the host-link measurements (gpu/profile.h): the SM read bandwidth B_h by CTAs x stages, the
// contention curve (HBM bandwidth of 100 CTAs while k CTAs read the host), and the link shared
// with a concurrent copy-engine transfer. It is the dual-role stream of
// ../shared/tools/h200_probe/tma_host_probe.cu, so the two measure the same thing.
//
// Roles: CTAs [0, hbm_ctas) read g_src (the HBM role), CTAs [hbm_ctas, grid) read h_src (the host
// role). Each source is split into chunks of chunk_bytes; CTA l of a role's n CTAs reads chunks
// l, l + n, l + 2n, ... modulo the source's chunk count (so a CTA may wrap around its source).
// The HBM role reads exactly hbm_chunks_per_cta chunks per CTA. The host role reads up to
// host_chunks_per_cta chunks per CTA but stops issuing once *g_stop >= stop_at (when g_stop is
// set); every HBM CTA adds 1 to *g_stop when it is done, so with stop_at = hbm_ctas the host role
// streams exactly as long as the HBM role, and a host-side write to *g_stop (a memset on another
// stream after a copy) ends it as well.
// Pipeline (per CTA): an SMEM ring of `stages` (hbm_stages or host_stages) chunk buffers with one
// "full" mbarrier each; thread 0 issues cp.async.bulk global->shared copies (CCCL cuda::ptx)
// completing on the stage's mbarrier; all threads wait on the parity, add every 32-bit word of
// the chunk into a per-thread sum, meet at a CTA barrier, and thread 0 refills the stage.
// One CTA per SM: the launch asks for the device's whole per-CTA SMEM opt-in, so a CTA count is
// an SM count (as in the probe and in the tiered GEMM), and the launcher refuses grids larger
// than the SM count (the stop protocol needs every CTA resident at once).
// Outputs: per-CTA begin/end global-timer stamps (ns) and chunk counts; per-role checksums (sum of
// the 32-bit words read, mod 2^64) so tests can check that the data really arrived.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

/// What one CTA did: global timer (ns) before its first copy and after its last chunk was
/// consumed, and the chunks it read.
struct LinkProbeCtaStats {
  unsigned long long begin_ns = 0;
  unsigned long long end_ns = 0;
  unsigned long long chunks = 0;
};

struct LinkProbeParams {
  const void* g_src = nullptr;        // [g_bytes] HBM, read by the HBM role; 16-byte aligned
  uint64_t g_bytes = 0;               // a positive multiple of chunk_bytes when hbm_ctas > 0
  const void* h_src = nullptr;        // [h_bytes] pinned mapped host memory, read by the host role; 16-byte aligned
  uint64_t h_bytes = 0;               // a positive multiple of chunk_bytes when host CTAs exist
  uint32_t chunk_bytes = 32u << 10;   // bytes per TMA bulk copy: multiple of 16, <= 512 KiB
  int32_t hbm_ctas = 0;               // CTAs [0, hbm_ctas) are the HBM role
  int32_t hbm_stages = 4;             // ring depth (chunks in flight) of an HBM CTA, >= 1
  int32_t host_stages = 2;            // ring depth of a host CTA, >= 1
  uint64_t hbm_chunks_per_cta = 0;    // chunks each HBM CTA reads
  uint64_t host_chunks_per_cta = 0;   // most chunks a host CTA reads
  unsigned int* g_stop = nullptr;     // [1] HBM, optional: host CTAs stop issuing once *g_stop >= stop_at;
                                      //   each HBM CTA adds 1 when done
  unsigned int stop_at = 1;           // >= 1
  unsigned long long* g_checksum = nullptr;  // [2] HBM: [0] += HBM role's word sum, [1] += host role's
  LinkProbeCtaStats* g_stats = nullptr;      // [grid] HBM (written)
};

/// Launches hbm_ctas + host_ctas CTAs on `stream` (one per SM). Throws dak::Error for an invalid
/// configuration (alignment, sizes, a grid above the SM count, a ring beyond the SMEM opt-in) or a
/// launch error.
void link_probe(const LinkProbeParams& p, int host_ctas, cudaStream_t stream);

}  // namespace dak::gpu
