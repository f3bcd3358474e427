#include "gpu/gemm_cublaslt.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/activation.h"

namespace dak::gpu {
namespace {

void check_lt(cublasStatus_t st, const char* expr, int line) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  fail(fmt::format("cuBLASLt call failed: {} ({})", expr, cublasLtGetStatusString(st)),
       fmt::format("gemm_cublaslt.cc:{}", line),
       "check the GPU and driver (nvidia-smi); if it persists, report the shapes in this message");
}

#define DAK_LT_CHECK(expr) check_lt((expr), #expr, __LINE__)

// Largest power of two (<= 256) dividing the address: what the heuristic may assume.
int32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int32_t align = 256;
  while (align > 1 && a % uint32_t(align) != 0) align /= 2;
  return align;
}

}  // namespace

struct CublasLtGemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool epilogue_fused = true;  // false: bias/ReLU applied by a kernel after the GEMM

  ~Plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

CublasLtGemm::CublasLtGemm(void* g_workspace, uint64_t workspace_bytes)
    : g_workspace_(g_workspace), workspace_bytes_(workspace_bytes) {
  DAK_LT_CHECK(cublasLtCreate(&handle_));
}

CublasLtGemm::~CublasLtGemm() {
  plans_.clear();
  if (handle_) cublasLtDestroy(handle_);
}

CublasLtGemm::Plan& CublasLtGemm::plan_for(const GemmArgs& g, cudaStream_t stream) {
  const int64_t ldx = g.ldx > 0 ? g.ldx : g.K;
  const int64_t ldy = g.ldy > 0 ? g.ldy : g.M;
  const int32_t align = std::min({alignment_of(g.g_x), alignment_of(g.g_w), alignment_of(g.g_y),
                                  g.g_bias ? alignment_of(g.g_bias) : 256});
  const int32_t epilogue = (g.g_bias ? 1 : 0) | (g.relu ? 2 : 0);
  const Key key{g.N, g.M, g.K, ldx, ldy, int32_t(g.out), epilogue, align};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;

  auto plan = std::make_unique<Plan>();
  const cudaDataType_t out_type = g.out == GemmOut::kBf16 ? CUDA_R_16BF : CUDA_R_32F;
  DAK_LT_CHECK(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  DAK_LT_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)));
  DAK_LT_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)));
  DAK_LT_CHECK(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, uint64_t(g.K), uint64_t(g.M), g.K));
  DAK_LT_CHECK(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, uint64_t(g.K), uint64_t(g.N), ldx));
  DAK_LT_CHECK(cublasLtMatrixLayoutCreate(&plan->d, out_type, uint64_t(g.M), uint64_t(g.N), ldy));

  cublasLtMatmulPreference_t pref = nullptr;
  DAK_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = workspace_bytes_;
  const uint32_t align_u = uint32_t(align);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    cublasLtMatmulPreferenceSetAttribute(pref, attr, &align_u, sizeof(align_u));
  }

  auto try_heuristic = [&](cublasLtEpilogue_t epi) {
    DAK_LT_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    if (epi != CUBLASLT_EPILOGUE_DEFAULT && epi != CUBLASLT_EPILOGUE_RELU) {
      const int32_t bias_type = CUDA_R_16BF;
      DAK_LT_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                  sizeof(bias_type)));
      DAK_LT_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.g_bias,
                                                  sizeof(g.g_bias)));
    }
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->d,
                                                             plan->d, pref, 1, &result, &count);
    if (st != CUBLAS_STATUS_SUCCESS || count == 0) return false;
    plan->algo = result.algo;
    return true;
  };

  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.g_bias && g.relu) {
    epi = CUBLASLT_EPILOGUE_RELU_BIAS;
  } else if (g.g_bias) {
    epi = CUBLASLT_EPILOGUE_BIAS;
  } else if (g.relu) {
    epi = CUBLASLT_EPILOGUE_RELU;
  }
  bool ok = try_heuristic(epi);
  if (!ok && epi != CUBLASLT_EPILOGUE_DEFAULT) {
    plan->epilogue_fused = false;
    ok = try_heuristic(CUBLASLT_EPILOGUE_DEFAULT);
  }
  if (ok && tuning_) {
    try {
      tune(*plan, g, stream, pref);
    } catch (...) {
      cublasLtMatmulPreferenceDestroy(pref);
      throw;
    }
  }
  cublasLtMatmulPreferenceDestroy(pref);
  if (!ok) {
    fail(fmt::format("cuBLASLt has no algorithm for y[{}, {}] = x[{}, {}] W[{}, {}]^T (bf16 in, {} out, "
                     "alignment {} B)",
                     g.N, g.M, g.N, g.K, g.M, g.K, g.out == GemmOut::kBf16 ? "bf16" : "fp32", align),
         "gemm_cublaslt", "report this model's shapes to dak");
  }
  auto& ref = *plan;
  plans_.emplace(key, std::move(plan));
  return ref;
}

void CublasLtGemm::tune(Plan& plan, const GemmArgs& g, cudaStream_t stream, const cublasLtMatmulPreference_t pref) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  DAK_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone || !plan.epilogue_fused) return;
  const size_t elt = g.out == GemmOut::kBf16 ? 2 : 4;
  const int64_t ldy = g.ldy > 0 ? g.ldy : g.M, ldx = g.ldx > 0 ? g.ldx : g.K;
  // The candidates run on the call's own operands: y must not overlap what they read.
  const auto overlaps = [](const void* a, size_t an, const void* b, size_t bn) {
    const auto* pa = static_cast<const uint8_t*>(a);
    const auto* pb = static_cast<const uint8_t*>(b);
    return b != nullptr && pa < pb + bn && pb < pa + an;
  };
  const size_t y_span = size_t(g.N - 1) * size_t(ldy) * elt + size_t(g.M) * elt;
  if (overlaps(g.g_y, y_span, g.g_x, size_t(g.N - 1) * size_t(ldx) * 2 + size_t(g.K) * 2) ||
      overlaps(g.g_y, y_span, g.g_w, size_t(g.M) * size_t(g.K) * 2) ||
      overlaps(g.g_y, y_span, g.g_bias, size_t(g.M) * 2)) {
    return;
  }
  cublasLtMatmulHeuristicResult_t results[kTuneCandidates];
  int count = 0;
  if (cublasLtMatmulAlgoGetHeuristic(handle_, plan.desc, plan.a, plan.b, plan.d, plan.d, pref, kTuneCandidates,
                                     results, &count) != CUBLAS_STATUS_SUCCESS) {
    return;
  }
  // Candidate 0 is the plan's algorithm (the first heuristic): the reference of speed and bits.
  std::vector<cublasLtMatmulAlgo_t> algos{plan.algo};
  for (int i = 0; i < count; ++i) {
    if (std::memcmp(&results[i].algo, &plan.algo, sizeof(plan.algo)) != 0) algos.push_back(results[i].algo);
  }
  ++tuned_plans_;
  if (algos.size() < 2) return;
  const float alpha = 1.f, beta = 0.f;
  const auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(handle_, plan.desc, &alpha, g.g_w, plan.a, g.g_x, plan.b, &beta, g.g_y, plan.d, g.g_y,
                          plan.d, &algo, g_workspace_, workspace_bytes_, stream) == CUBLAS_STATUS_SUCCESS;
  };
  // Bits: y of each candidate against candidate 0's (M columns of N rows, copied to the host).
  const size_t row = size_t(g.M) * elt;
  std::vector<uint8_t> ref(row * size_t(g.N)), out(ref.size());
  std::vector<size_t> same;  // indices into algos whose y is bitwise candidate 0's
  for (size_t i = 0; i < algos.size(); ++i) {
    if (!launch(algos[i])) {
      if (i == 0) return;
      continue;
    }
    DAK_CUDA_CHECK(cudaMemcpy2DAsync(i == 0 ? ref.data() : out.data(), row, g.g_y, size_t(ldy) * elt, row,
                                     size_t(g.N), cudaMemcpyDeviceToHost, stream));
    DAK_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (i == 0 || out == ref) same.push_back(i);
  }
  if (same.size() < 2) return;
  // Speed: 5 rounds, each launching every candidate once (so drifts of the clock hit all alike).
  cudaEvent_t ev[2];
  DAK_CUDA_CHECK(cudaEventCreate(&ev[0]));
  DAK_CUDA_CHECK(cudaEventCreate(&ev[1]));
  std::vector<std::vector<float>> ms(same.size());
  cudaError_t err = cudaSuccess;
  for (int round = 0; round < 6 && err == cudaSuccess; ++round) {
    for (size_t j = 0; j < same.size() && err == cudaSuccess; ++j) {
      float t = 0;
      if ((err = cudaEventRecord(ev[0], stream)) != cudaSuccess) break;
      launch(algos[same[j]]);
      if ((err = cudaEventRecord(ev[1], stream)) != cudaSuccess || (err = cudaEventSynchronize(ev[1])) != cudaSuccess ||
          (err = cudaEventElapsedTime(&t, ev[0], ev[1])) != cudaSuccess) {
        break;
      }
      if (round > 0) ms[j].push_back(t);  // round 0 warms up
    }
  }
  cudaEventDestroy(ev[0]);
  cudaEventDestroy(ev[1]);
  DAK_CUDA_CHECK(err);
  const auto median = [](std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  size_t best = 0;
  for (size_t j = 1; j < same.size(); ++j) {
    if (median(ms[j]) < median(ms[best])) best = j;
  }
  if (best != 0 && median(ms[best]) <= (1.0 - kTuneMinGain) * median(ms[0])) {
    plan.algo = algos[same[best]];
    ++retuned_plans_;
  }
}

void CublasLtGemm::run(const GemmArgs& g, cudaStream_t stream) {
  if (g.N == 0) return;
  if (g.N < 0 || g.M <= 0 || g.K <= 0 || (g.ldx != 0 && g.ldx < g.K) || (g.ldy != 0 && g.ldy < g.M)) {
    fail(fmt::format("invalid GEMM shape N={} M={} K={} ldx={} ldy={}", g.N, g.M, g.K, g.ldx, g.ldy), "gemm_cublaslt",
         "this is a dak bug; please report it");
  }
  if (g.out == GemmOut::kF32 && (g.g_bias || g.relu)) {
    fail("fp32-output GEMM with a bias or ReLU epilogue is not supported", "gemm_cublaslt",
         "this is a dak bug; please report it");
  }
  Plan& plan = plan_for(g, stream);
  if (!plan.epilogue_fused && g.ldy != 0 && g.ldy != g.M) {
    fail(fmt::format("cuBLASLt has no fused bias/ReLU epilogue for y[{}, {}] with row stride {}", g.N, g.M, g.ldy),
         "gemm_cublaslt", "run this model with --offload direct (the tiered GEMM) instead of zero-copy");
  }
  if (plan.epilogue_fused && g.g_bias) {
    DAK_LT_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.g_bias,
                                                sizeof(g.g_bias)));
  }
  const float alpha = 1.f, beta = 0.f;
  DAK_LT_CHECK(cublasLtMatmul(handle_, plan.desc, &alpha, g.g_w, plan.a, g.g_x, plan.b, &beta, g.g_y, plan.d,
                              g.g_y, plan.d, &plan.algo, g_workspace_, workspace_bytes_, stream));
  if (!plan.epilogue_fused) {
    auto* y = static_cast<__nv_bfloat16*>(g.g_y);
    if (g.relu) {
      mlp_activation(ActivationParams{y, g.g_bias, y, g.N, g.M, Activation::kRelu, false}, stream);
    } else {
      add_bias_rows(y, g.g_bias, g.N, g.M, stream);
    }
  }
}

}  // namespace dak::gpu
