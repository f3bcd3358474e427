// Row gather with optional learned-position rows and an addend: the token embedding
// (Llama/Mistral/Qwen2: out = E_tok[id]; OPT: out = E_tok[id] + E_pos[pos + 2]) and, with a
// different table, a gather of selected activation rows (e.g. the last token of each sequence).
//
//   out[t, e] = table[ids[t], e] + pos_table[positions[t] + pos_offset, e] + add[t, e]
//
// with each of the three terms present only when its pointer is non-null, summed in fp32 and
// written as fp32 and/or bf16. An id or position outside its table writes NaN for that row
// (callers validate ids on the host first; the NaN makes a missed check visible).
// Tiling: one CTA per token row, threads stride over E. Bandwidth-trivial next to the GEMMs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

struct EmbeddingParams {
  const __nv_bfloat16* g_table = nullptr;      // [num_rows, E] bf16, HBM; null: no table term
  const int32_t* g_ids = nullptr;              // [T] int32, HBM: row of g_table per token
  int64_t num_rows = 0;
  const __nv_bfloat16* g_pos_table = nullptr;  // [num_pos, E] bf16, HBM; null: no position term
  const int32_t* g_positions = nullptr;        // [T] int32, HBM: position of each token
  int32_t pos_offset = 0;                      // OPT: 2 (OPTLearnedPositionalEmbedding)
  int64_t num_pos = 0;
  const __nv_bfloat16* g_add = nullptr;        // [T, E] bf16, HBM; null: no addend
  float* g_out_f32 = nullptr;                  // [T, E] fp32, HBM; null: not written
  __nv_bfloat16* g_out_bf16 = nullptr;         // [T, E] bf16, HBM; null: not written
  int64_t T = 0;                               // rows
  int64_t E = 0;                               // row width (elements)
};

/// Launches on `stream`; T == 0 is a no-op. Throws dak::Error on a launch error.
void embedding_gather(const EmbeddingParams& p, cudaStream_t stream);

}  // namespace dak::gpu
