// fp32 CPU building blocks of the reference forward pass (cpu_model.cc), one function per op,
// each following the Hugging Face modeling code it names. All tensors are row-major fp32;
// shapes use T (tokens), K (input features), M (output features), D (head dim), H (heads).
// The matrix products are OpenMP-parallel over output rows and SIMD over the inner dimension.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_config.h"

namespace dak::cpu {

/// Work (multiply-adds, ~30-100 us on one core) below which an op runs on the calling thread.
inline constexpr int64_t kMinParallelMacs = int64_t(1) << 18;

/// OpenMP threads for an op of `macs` multiply-adds: 1 below kMinParallelMacs, else the cores
/// that other processes left idle recently (Linux /proc/stat busy time minus this process's
/// own CPU time, re-measured every 250 ms; 1 until the first measurement), between 1 and
/// omp_get_max_threads(). Results do not depend on the thread count: threads split output
/// rows (and attention rows x heads), never a reduction.
/// NOTE: libgomp's default wait policy spins for milliseconds after every parallel region, so
/// on shared cores (a busy CI runner, ctest -j, a build next door) extra threads take the time
/// the serial work in between needs. Measured on the 2-core dev machine with SmolLM2-135M:
/// at load 7, decode ran at 1-3 tokens/s on 2 threads vs 10 on one; at load 2, prefill of
/// 100 tokens took 1.56 s on 2 threads vs 0.62 s on one; on idle cores 2 threads give
/// 0.40 s and 25 tokens/s (one: 0.62 s, 18 tokens/s).
int parallel_threads(int64_t macs);

/// y[T, M] = x[T, K] · w[M, K]^T (+ bias[M] when non-null): torch.nn.Linear with weights
/// stored [out, in] as in HF checkpoints. Each output is a contiguous dot product; tokens are
/// processed in blocks of 4 so a weight row is reused from cache across them. x and y must
/// not overlap.
/// On x86-64 CPUs with AVX2 and FMA an intrinsics kernel is chosen at run time (2 rows x 4
/// tokens per inner loop); elsewhere the portable loops of linear_portable run.
void linear(const float* x, int64_t t, int64_t k, const float* w, const float* bias, int64_t m,
            float* y);

/// linear() with the portable OpenMP-SIMD loops only (what runs without AVX2/FMA).
void linear_portable(const float* x, int64_t t, int64_t k, const float* w, const float* bias,
                     int64_t m, float* y);

/// RMSNorm (LlamaRMSNorm): y = w * x / sqrt(mean(x^2) + eps), per row of x[T, D].
/// y may alias x.
void rms_norm(const float* x, int64_t t, int64_t d, const float* w, float eps, float* y);

/// LayerNorm (torch.nn.LayerNorm, biased variance): y = (x - mean) / sqrt(var + eps) * w + b,
/// per row of x[T, D]; w / b may be null (elementwise_affine = false). y may alias x.
void layer_norm(const float* x, int64_t t, int64_t d, const float* w, const float* b, float eps,
                float* y);

/// In-place activation over n values (ACT2FN: silu, relu, gelu (erf), gelu_pytorch_tanh).
void activate(float* x, int64_t n, Activation a);

/// RoPE inverse frequencies [D/2] in fp32, as HF's ROPE_INIT_FUNCTIONS compute them
/// (modeling_rope_utils.py): default 1 / theta^(2i/D); linear: divided by factor;
/// llama3: _compute_llama3_parameters (low / high frequency bands, smooth interpolation
/// in between); yarn: _compute_yarn_parameters (YaRN, arXiv:2309.00071 §3: the default
/// frequencies below the correction range [low, high] of dimensions, those divided by factor
/// above it, a linear ramp between). Each fp32 operation rounds as torch's does. A GGUF's
/// rope_freqs.weight factors (ModelConfig::rope_freq_factors) then divide each frequency, as ggml
/// does (Llama 3.1 scaling in GGUF form).
std::vector<float> rope_inv_freq(const ModelConfig& c);

/// The multiplier HF applies to cos and sin (the rotary embedding's attention_scaling):
/// c.rope_attention_factor for yarn, 1 for the other types, rounded to fp32.
float rope_attention_factor(const ModelConfig& c);

/// Rotates x[H, D] in place for position `pos` in HF's rotate-half convention
/// (apply_rotary_pos_emb): with c = m cos(pos * f_i), s = m sin(pos * f_i), i < D/2, where m is
/// `attention_factor` (rope_attention_factor; 1 leaves cos and sin as they are),
/// x[i] <- x[i] c - x[i + D/2] s and x[i + D/2] <- x[i + D/2] c + x[i] s.
/// The angle is rounded to fp32 first, as HF computes it (inv_freq @ position_ids in fp32).
void apply_rope(float* x, int64_t h, int64_t d, const float* inv_freq, int64_t pos, float attention_factor = 1.0f);

/// Causal attention of one query head (eager_attention_forward):
///   out[D] = softmax_j(scale * q · k_j) · v_j,   j in [0, n_keys)
/// q [D]; key j at k + j * kv_stride and value j at v + j * kv_stride (rows of the KV cache,
/// already offset to the kv head that serves this query head: hq / (H / Hkv)). The softmax is
/// fp32, two-pass (max, then exp-sum); `scratch` holds n_keys floats. n_keys >= 1.
void attend_head(const float* q, const float* k, const float* v, int64_t kv_stride, int64_t n_keys,
                 int64_t d, float scale, float* out, float* scratch);

}  // namespace dak::cpu
