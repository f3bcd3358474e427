// Tiered GEMM instantiation for compute-bound N of 129-256, 385-512, ... (choose_tiered_gemm_tile):
// two consumer warpgroups of 64 x 256, 128-row tiles, registers moved from the producer warpgroup.
// A file of its own so the 128-row tiles compile in parallel.
#include "gpu/kernels/tiered_gemm_kernel.cuh"

namespace dak::gpu::tiered_gemm_detail {

template void launch<128, 256>(const TieredGemmArgs&, const TieredGemmSchedule&, void*, cudaStream_t);

}  // namespace dak::gpu::tiered_gemm_detail
