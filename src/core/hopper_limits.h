#pragma once
// Shared-memory limits of sm_90 (H100 / H200), in bytes, for host code and kernels alike (no CUDA
// include). Source: CUDA C++ Programming Guide, "Compute Capability 9.0" (Technical Specifications):
// 228 KiB of shared memory per SM, at most 227 KiB of dynamic SMEM per CTA (opt-in through
// cudaFuncAttributeMaxDynamicSharedMemorySize), and 1 KiB of each CTA's share reserved by the system.

#include <cstdint>

namespace dak::hopper {

constexpr int64_t kSmemPerSmBytes = 228 * 1024;        // shared memory of one SM
constexpr int64_t kSmemPerCtaMaxBytes = 227 * 1024;    // opt-in maximum of one CTA's dynamic SMEM
constexpr int64_t kSmemReservedPerCtaBytes = 1024;     // taken from the SM's SMEM for each resident CTA
constexpr int64_t kSmemDefaultPerCtaBytes = 48 * 1024; // dynamic SMEM a launch may use without opting in

}  // namespace dak::hopper
