// Dense GEMMs through cuBLASLt: y[N, M] = x[N, K] . W[M, K]^T (+ bias[M]) (ReLU optional).
//
// Row-major operands as the engine stores them (Linear weights [out, in], activations
// [tokens, features]); bf16 inputs, fp32 accumulation (CUBLAS_COMPUTE_32F), bf16 or fp32
// output. In cuBLASLt's column-major terms: D[M, N] = op_T(W as col-major K x M) . X (col-major
// K x N), so no transposes are materialized. Bias (and ReLU) ride the cuBLASLt epilogue; when
// the heuristic offers no algorithm with that epilogue for a shape, the plain GEMM runs and the
// bias/ReLU kernels of kernels/activation.h finish the job.
// One plan (descriptors + heuristic's algorithm) is cached per (shape, output type, epilogue,
// operand alignment); run() is graph-capturable once the plan exists (no allocation, the
// workspace is fixed at construction).
// Tuning (set_tuning, off by default): a plan created while tuning is on and its stream is not
// capturing, for a weight of at least kTuneMinL2Multiple times the L2 (so that every launch streams
// it from HBM, as in a decode step), times cuBLASLt's first kTuneCandidates heuristic candidates on
// the call's own operands and keeps the fastest where it is at least kTuneMinGain faster than the
// first heuristic. Only candidates that reduce over K as the first does (the same split-K count and
// reduction scheme) and give its bits on those operands take part, so a tuned plan computes what the
// first heuristic computes; the pick itself depends on timing. Measured on an H100
// (docs/perf-notes.md session 48): the first heuristic is up to 7 % slower than another candidate on
// decode linears of 33-128 tokens; tuning costs 20-40 ms per plan.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace dak::gpu {

enum class GemmOut : int32_t { kBf16, kF32 };

struct GemmArgs {
  const __nv_bfloat16* g_x = nullptr;     // [N, ldx] bf16, HBM: first K columns used
  int64_t ldx = 0;                        // elements between rows of x (0: K)
  const __nv_bfloat16* g_w = nullptr;     // [M, K] bf16 (nn.Linear weight layout), HBM or pinned mapped
                                          //   host memory (read in place: the zero-copy offload mode)
  const __nv_bfloat16* g_bias = nullptr;  // [M] bf16, HBM; null = no bias (bf16 output only)
  void* g_y = nullptr;                    // [N, ldy] bf16 or fp32 (out), HBM: first M columns written
  int64_t ldy = 0;                        // elements between rows of y (0: M); a strided y needs
                                          //   cuBLASLt's fused bias/ReLU epilogue when either is set
  int64_t N = 0;                          // rows (tokens)
  int64_t M = 0;                          // output features
  int64_t K = 0;                          // input features
  GemmOut out = GemmOut::kBf16;
  bool relu = false;                      // y = relu(x W^T + bias) (bf16 output only)
};

class CublasLtGemm {
 public:
  /// `g_workspace` (HBM, `workspace_bytes`, 256-byte aligned) is lent to every matmul.
  CublasLtGemm(void* g_workspace, uint64_t workspace_bytes);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  /// Enqueues the GEMM on `stream`. N == 0 is a no-op. Throws dak::Error for unsupported
  /// arguments (fp32 output with bias or ReLU, non-positive sizes) and cuBLASLt failures.
  void run(const GemmArgs& a, cudaStream_t stream);

  /// Recommended workspace (32 MiB, cuBLAS's guidance for Hopper).
  static constexpr uint64_t kWorkspaceBytes = 32ull << 20;

  /// Heuristic candidates a tuned plan times, at most, and the least gain (fraction of the first
  /// candidate's median time) for which it takes another.
  static constexpr int kTuneCandidates = 8;
  static constexpr double kTuneMinGain = 0.02;
  /// Weights smaller than this many L2 sizes are not tuned; launches per timed round.
  static constexpr double kTuneMinL2Multiple = 1.5;
  static constexpr int kTuneLaunches = 4;

  /// While on, plans created by run() outside a stream capture are tuned (see the file comment; a
  /// plan too small to tune counts in neither tuned_plans() nor retuned_plans()):
  /// run() then synchronizes `stream` and copies y to the host once per candidate, so turn it on
  /// only for a pass whose GPU work nothing else holds back (an eager warm-up step). Plans made
  /// before stay as they are.
  void set_tuning(bool on) { tuning_ = on; }

  /// Plans tuned so far, and how many of them took a candidate other than the first heuristic.
  int64_t tuned_plans() const { return tuned_plans_; }
  int64_t retuned_plans() const { return retuned_plans_; }

 private:
  struct Plan;
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int32_t, int32_t, int32_t>;
  Plan& plan_for(const GemmArgs& a, cudaStream_t stream);
  void tune(Plan& plan, const GemmArgs& a, cudaStream_t stream, const cublasLtMatmulPreference_t pref);

  cublasLtHandle_t handle_ = nullptr;
  void* g_workspace_ = nullptr;
  uint64_t workspace_bytes_ = 0;
  std::map<Key, std::unique_ptr<Plan>> plans_;
  bool tuning_ = false;
  int64_t tuned_plans_ = 0, retuned_plans_ = 0;
};

}  // namespace dak::gpu
