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
  // Only where W streams from HBM in every launch, as in a decode step: a weight that fits the L2
  // (with room) would be timed from it, which no decode step does.
  int device = 0, l2_bytes = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  if (double(g.M) * double(g.K) * 2.0 < kTuneMinL2Multiple * double(l2_bytes) || !plan.epilogue_fused) return;
  // Only weights in device memory: a zero-copy weight (host memory, read over PCIe) would be timed
  // at the link's pace, many times the cost the file comment gives.
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, g.g_w) != cudaSuccess || attr.type != cudaMemoryTypeDevice) {
    cudaGetLastError();
    return;
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {  // e.g. the legacy stream beside a capture
    cudaGetLastError();
    return;
  }
  if (capture != cudaStreamCaptureStatusNone) return;
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
  // Candidate 0 is the plan's algorithm (the first heuristic): the reference of speed and bits. The
  // others must reduce over K as it does (the same split-K count and reduction scheme), and then
  // also give its bits on these operands.
  const auto config = [](const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
    uint32_t v = 0;
    size_t written = 0;
    return cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written) == CUBLAS_STATUS_SUCCESS
               ? int64_t(v)
               : int64_t(-1);
  };
  const int64_t split_k = config(plan.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  const int64_t reduction = config(plan.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  std::vector<cublasLtMatmulAlgo_t> algos{plan.algo};
  for (int i = 0; i < count; ++i) {
    const cublasLtMatmulAlgo_t& a = results[i].algo;
    if (results[i].state != CUBLAS_STATUS_SUCCESS || std::memcmp(&a, &plan.algo, sizeof(a)) == 0) continue;
    if (split_k < 0 || config(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) != split_k ||
        config(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) != reduction) {
      continue;
    }
    algos.push_back(a);
  }
  ++tuned_plans_;
  if (algos.size() < 2) return;
  const float alpha = 1.f, beta = 0.f;
  const auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
    if (cublasLtMatmul(handle_, plan.desc, &alpha, g.g_w, plan.a, g.g_x, plan.b, &beta, g.g_y, plan.d, g.g_y, plan.d,
                       &algo, g_workspace_, workspace_bytes_, stream) == CUBLAS_STATUS_SUCCESS) {
      return true;
    }
    cudaGetLastError();  // a refused launch must not be blamed on the next kernel
    return false;
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
  // Speed: rounds of kTuneLaunches back-to-back launches per candidate behind one untimed launch,
  // so the GPU never waits for the host's enqueue inside the timed span (a decode step replays a
  // graph, without host cost); the median of the rounds after the first.
  cudaEvent_t ev[2] = {nullptr, nullptr};
  cudaError_t err = cudaEventCreate(&ev[0]);
  if (err == cudaSuccess) err = cudaEventCreate(&ev[1]);
  std::vector<std::vector<float>> ms(same.size());
  std::vector<bool> failed(same.size(), false);
  for (int round = 0; round < 4 && err == cudaSuccess; ++round) {
    for (size_t j = 0; j < same.size() && err == cudaSuccess; ++j) {
      const cublasLtMatmulAlgo_t& algo = algos[same[j]];
      bool ok = launch(algo);
      if ((err = cudaEventRecord(ev[0], stream)) != cudaSuccess) break;
      for (int k = 0; k < kTuneLaunches; ++k) ok = launch(algo) && ok;
      float t = 0;
      if ((err = cudaEventRecord(ev[1], stream)) != cudaSuccess || (err = cudaEventSynchronize(ev[1])) != cudaSuccess ||
          (err = cudaEventElapsedTime(&t, ev[0], ev[1])) != cudaSuccess) {
        break;
      }
      failed[j] = failed[j] || !ok;  // a refused launch would time near 0: never the fastest
      if (round > 0) ms[j].push_back(t);
    }
  }
  if (ev[0]) cudaEventDestroy(ev[0]);
  if (ev[1]) cudaEventDestroy(ev[1]);
  DAK_CUDA_CHECK(err);
  if (failed[0]) return;
  const auto median = [](std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  size_t best = 0;
  for (size_t j = 1; j < same.size(); ++j) {
    if (!failed[j] && median(ms[j]) < median(ms[best])) best = j;
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
