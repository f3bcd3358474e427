// GpuWeights: every weight of a model as bf16, in one HBM arena and (with an offload placement)
// one pinned host arena holding the leading rows of split weights, from one of two sources:
// a checkpoint (converted to bf16) or deterministic random values for a config (--random-weights).
//
// The tensor-name table and the fusions mirror the CPU reference (core/cpu_model.cc):
//   qkv     = rows of q_proj, k_proj, v_proj concatenated: [H*D + 2*Hkv*D, hidden] (+ bias)
//   gate_up = rows of gate_proj then up_proj: [2I, hidden]; OPT: fc1 alone [I, hidden]
//   down    = down_proj / fc2 [hidden, I]; o = o_proj / out_proj [hidden, H*D]
//   lm_head = embed_tokens when tie_word_embeddings (the HF model ties them even if the file
//             stores lm_head too)
// Loading: shapes are checked against the config and the total size is known before any HBM
// is allocated; require_free_hbm refuses a model that does not fit, naming both amounts.
// Checkpoint source: each tensor is decoded by Checkpoint::read_f32 (fp16/bf16/fp32 and GGUF
// quantized types), staged through pinned host buffers in 64 MiB chunks (two in flight), and
// converted on the GPU by convert_f32_to_bf16 straight into its arena slice.
// Random source: the same table of HF-named tensors (random_tensor_table), each generated in
// place by kernels/random_fill.h from (seed, its index in the table, element index): no host
// memory and no file, so any config.json runs, a 70B one included. Values follow the HF
// initialisation scale (initializer_range 0.02): matrices, embeddings and biases uniform with
// mean 0 and standard deviation 0.02; norm weights mean 1 (same spread), norm biases mean 0.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/model_config.h"
#include "core/placement.h"
#include "gpu/hbm_arena.h"
#include "gpu/host_arena.h"

namespace dak {
class Checkpoint;
}

namespace dak::gpu {

using bf16 = __nv_bfloat16;

/// One linear layer's weight W [out, in] bf16, split along its rows (M) between the two tiers as
/// an offload plan says (core/placement.h): rows [0, m_host) in pinned mapped host memory, read by
/// the tiered GEMM's host CTAs over PCIe; rows [m_host, out) in HBM. Bias always in HBM.
struct GpuLinear {
  const bf16* w = nullptr;    // [out - m_host, in] bf16, HBM: rows [m_host, out); null when m_host == out
  const bf16* h_w = nullptr;  // [m_host, in] bf16, pinned mapped host: rows [0, m_host); null when m_host == 0
  int64_t m_host = 0;         // rows in the host tier
  const bf16* b = nullptr;    // [out] bf16, HBM; null = no bias
  int64_t out = 0, in = 0;
  bool staged = false;        // the plan stages the host rows through the copy engine (prefetch path)
};

/// An embedding table [rows, cols] bf16 split like GpuLinear: rows [0, host_rows) on the host.
struct GpuTable {
  const bf16* g = nullptr;  // [rows - host_rows, cols] bf16, HBM; null when host_rows == rows
  const bf16* h = nullptr;  // [host_rows, cols] bf16, pinned mapped host; null when host_rows == 0
  int64_t host_rows = 0, rows = 0, cols = 0;
  bool staged = false;      // tied LM head: the plan stages its host rows (gathers read in place)
  bool empty() const { return rows == 0; }
};

struct GpuNorm {
  const bf16* w = nullptr;  // [hidden] bf16, HBM; null = no affine weight
  const bf16* b = nullptr;  // [hidden] bf16, HBM; null = no bias (always null for RMSNorm)
};

struct GpuLayer {
  GpuNorm attn_norm, mlp_norm;
  GpuLinear qkv, o, gate_up, down;
};

/// One tensor of the random-weights table: the HF tensor it stands for and how it is generated.
struct RandomTensorSpec {
  std::string name;            // canonical HF name, e.g. "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;  // row-major, as the checkpoint would store it
  uint64_t stream = 0;         // random_fill stream: the tensor's index in the table
  float mean = 0.0f;           // values mean + half_range * x, x uniform on [-1, 1) (random_fill.h)
  float half_range = 0.0f;
};

struct GpuWeights {
  ModelConfig config;
  HbmArena arena;                   // owns every HBM pointer below
  PinnedHostArena host;             // owns every host-tier pointer below (empty without offload)
  GpuTable embed;                   // [V, E]
  GpuTable positions;               // OPT: [max_pos + 2, hidden]; else empty
  GpuLinear project_in;             // OPT with word_embed_proj_dim != hidden: [hidden, E]; else empty
  GpuLinear project_out;            // [E, hidden]; else empty
  GpuNorm final_norm;
  bool has_final_norm = false;      // false only for post-LN OPT
  GpuLinear lm_head;                // [V, E] (the embed table's tiers when tied)
  std::vector<GpuLayer> layers;
  const float* inv_freq = nullptr;  // [D/2] fp32 RoPE inverse frequencies; null for OPT
  float rope_attention_factor = 1.f;  // cos / sin multiplier (cpu::rope_attention_factor; yarn)
  /// The q and k heads of every layer's qkv (weight rows and bias) are in the paired row order
  /// (core/rope_layout.h): true for RoPE models whose head_dim is pairable (every RoPE model the GPU
  /// kernels run), so RoPE kernels and the qkv GEMM's RoPE epilogue must take that order.
  bool rope_paired_rows = false;
  /// Every layer's gate_up (weight rows and bias) is in the paired order with D = 2I (gate row j and
  /// up row j 8 rows apart: core/rope_layout.h engine_pairs_gate_up), so the activation kernel takes
  /// ActivationParams::paired and the gate_up GEMM may run the gated activation in its epilogue.
  bool gate_up_paired_rows = false;
  uint64_t bytes = 0;               // HBM arena bytes (bf16 weights + inv_freq, aligned)
  uint64_t host_bytes = 0;          // host-tier bytes (the offloaded rows, 256-byte aligned slices)

  /// HBM and host-tier bytes of a model's weights under a placement.
  struct Bytes {
    uint64_t hbm = 0, host = 0;
  };

  /// Bytes the weights will take in HBM, without reading or allocating anything. Throws
  /// dak::Error (naming the tensor) when a tensor is missing or has the wrong shape.
  static uint64_t plan_bytes(const Checkpoint& ckpt);

  /// Checks shapes, refuses if the HBM part does not fit in free HBM, pins the host tier
  /// (PinnedHostArena: refused before mapping when it exceeds available host memory), then
  /// uploads every weight to its tier on the current CUDA device. `placement` (optional) gives
  /// the host rows of each weight group (core/placement.h); null keeps everything in HBM.
  /// Throws dak::Error, also when the placement was made for another model or names a weight
  /// group the model lacks. `progress` (optional) is called after each tensor is uploaded
  /// (core/engine.h's LoadProgress: parameters so far and in all).
  static GpuWeights load(const Checkpoint& ckpt, const Placement* placement = nullptr,
                         const LoadProgress& progress = {});

  /// Bytes the weights of `config` take in HBM (either source), everything in HBM.
  static uint64_t plan_bytes(const ModelConfig& config);
  /// HBM and host bytes of the weights of `config` under `placement` (null: all HBM). Throws
  /// dak::Error like load() for a placement of another model.
  static Bytes plan_bytes(const ModelConfig& config, const Placement* placement);

  /// The tensors a checkpoint of `config` holds, in the engine's table order, with the random
  /// fill of each (stream = index in this list). Config only: nothing is read or allocated.
  static std::vector<RandomTensorSpec> random_tensor_table(const ModelConfig& config);

  /// Deterministic random weights for `config`, generated on the current CUDA device (host-tier
  /// rows written in place over PCIe): the same (config, seed) gives the same bits in either tier. Refuses (dak::Error, before allocating) when they do not
  /// fit in free HBM; `where` names the config in messages. Throws dak::Error for a config the
  /// GPU kernels do not support.
  static GpuWeights random(const ModelConfig& config, uint64_t seed, const std::string& where,
                           const Placement* placement = nullptr);
};

}  // namespace dak::gpu
