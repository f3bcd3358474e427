#include "gpu/gemm_cublaslt.h"

#include <fmt/format.h>

#include <algorithm>

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

CublasLtGemm::Plan& CublasLtGemm::plan_for(const GemmArgs& g) {
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
  Plan& plan = plan_for(g);
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
