// Row gather with optional learned-position rows and an addend: the token embedding
// (Llama/Mistral/Qwen2: out = E_tok[id]; OPT: out = E_tok[id] + E_pos[pos + 2]) and, with a
// different table, a gather of selected activation rows (e.g. the last token of each sequence).
//
//   out[t, e] = table[ids[t], e] + pos_table[positions[t] + pos_offset, e] + add[t, e]
//
// with each of the three terms present only when its pointer is non-null, summed in fp32 and
// written as fp32 and/or bf16. An id or position outside its table writes NaN for that row
// (callers validate ids on the host first; the NaN makes a missed check visible).
// Tables may be split along their rows between the host tier and HBM (an offload plan): rows
// [0, host_rows) are read from pinned mapped host memory in place (a step gathers T rows, so the
// PCIe reads are tiny), the others from HBM.
// Tiling: one CTA per token row, threads stride over E. Bandwidth-trivial next to the GEMMs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

struct EmbeddingParams {
  const __nv_bfloat16* g_table = nullptr;      // [num_rows - table_host_rows, E] bf16, HBM: rows
                                               //   [table_host_rows, num_rows); null: no table term
  const __nv_bfloat16* h_table = nullptr;      // [table_host_rows, E] bf16, pinned mapped host: rows
                                               //   [0, table_host_rows) (offloaded; read in place)
  int64_t table_host_rows = 0;
  const int32_t* g_ids = nullptr;              // [T] int32, HBM: row of the table per token
  int64_t num_rows = 0;
  const __nv_bfloat16* g_pos_table = nullptr;  // [num_pos - pos_host_rows, E] bf16, HBM; null (with
                                               //   pos_host_rows == 0): no position term
  const __nv_bfloat16* h_pos_table = nullptr;  // [pos_host_rows, E] bf16, pinned mapped host
  int64_t pos_host_rows = 0;
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
