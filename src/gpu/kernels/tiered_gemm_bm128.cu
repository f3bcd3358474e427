// Tiered GEMM instantiations for compute-bound N > 64: two consumer warpgroups, 128-row tiles.
#include "gpu/kernels/tiered_gemm_kernel.cuh"

namespace dak::gpu::tiered_gemm_detail {

template void launch<128, 128>(const TieredGemmArgs&, const TieredGemmSchedule&, void*, cudaStream_t);

int64_t co_resident_ctas(int32_t cluster) {
  using Cfg = Config<128, 128>;
  auto* kernel = &tiered_gemm_kernel<128, 128>;
  DAK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Cfg::kSmemBytes)));
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim = {unsigned(cluster), 1, 1};
  cudaLaunchConfig_t cfg{};
  const int sms = device_sm_count();
  cfg.gridDim = dim3(unsigned(sms / cluster * cluster));
  cfg.blockDim = dim3(unsigned(Cfg::kThreads));
  cfg.dynamicSmemBytes = Cfg::kSmemBytes;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int clusters = 0;
  DAK_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg));
  return int64_t(clusters) * cluster;
}

}  // namespace dak::gpu::tiered_gemm_detail
