// Tiered GEMM instantiations for compute-bound N > 64: two consumer warpgroups, 128-row tiles.
#include "gpu/kernels/tiered_gemm_kernel.cuh"

namespace dak::gpu::tiered_gemm_detail {

template void launch<128, 128>(const TieredGemmArgs&, const TieredGemmSchedule&, void*, cudaStream_t);

}  // namespace dak::gpu::tiered_gemm_detail
