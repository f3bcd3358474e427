// Tiered GEMM instantiations for the bandwidth path (N <= 64): one consumer warpgroup, 64-row tiles.
#include "gpu/kernels/tiered_gemm_kernel.cuh"

namespace dak::gpu::tiered_gemm_detail {

template void launch<64, 8>(const TieredGemmArgs&, const TieredGemmSchedule&, void*, cudaStream_t);
template void launch<64, 16>(const TieredGemmArgs&, const TieredGemmSchedule&, void*, cudaStream_t);
template void launch<64, 32>(const TieredGemmArgs&, const TieredGemmSchedule&, void*, cudaStream_t);
template void launch<64, 64>(const TieredGemmArgs&, const TieredGemmSchedule&, void*, cudaStream_t);

}  // namespace dak::gpu::tiered_gemm_detail
