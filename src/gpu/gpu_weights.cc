#include "gpu/gpu_weights.h"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "core/checkpoint.h"
#include "core/cpu_ops.h"
#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/convert.h"

namespace dak::gpu {
namespace {

/// Canonical HF tensor names per family (without ".weight"/".bias"); "" = absent. Same table
/// as core/cpu_model.cc (the CPU reference keeps its copy private).
struct TensorNames {
  const char* embed;
  const char* positions;
  const char* project_in;
  const char* project_out;
  const char* final_norm;
  const char* lm_head;
  const char* layer;
  const char* attn_norm;
  const char* q;
  const char* k;
  const char* v;
  const char* o;
  const char* mlp_norm;
  const char* gate;
  const char* up;
  const char* down;
};

// modeling_llama.py / modeling_mistral.py / modeling_qwen2.py.
constexpr TensorNames kLlamaNames{
    "model.embed_tokens", "", "", "", "model.norm", "lm_head", "model.layers.",
    "input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
    "self_attn.o_proj", "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj",
    "mlp.down_proj"};

// modeling_opt.py; fc1/fc2 take the up/down slots.
constexpr TensorNames kOptNames{
    "model.decoder.embed_tokens", "model.decoder.embed_positions", "model.decoder.project_in",
    "model.decoder.project_out", "model.decoder.final_layer_norm", "lm_head",
    "model.decoder.layers.", "self_attn_layer_norm", "self_attn.q_proj", "self_attn.k_proj",
    "self_attn.v_proj", "self_attn.out_proj", "final_layer_norm", "", "fc1", "fc2"};

/// One bf16 arena slice, filled from fp32 source tensors placed at element offsets.
struct Slice {
  struct Part {
    const TensorInfo* info;
    uint64_t offset;  // elements into the slice
  };
  uint64_t elems = 0;
  std::vector<Part> parts;
  const bf16** target = nullptr;  // where the slice's device pointer goes
};

/// Checks every tensor against the config and lists the slices, pointing their targets into `w`.
std::vector<Slice> plan_slices(const Checkpoint& ckpt, GpuWeights& w) {
  const ModelConfig& c = ckpt.config();
  const TensorNames& nm = c.arch == Arch::kOpt ? kOptNames : kLlamaNames;
  const std::string where = ckpt.path().string();
  std::vector<Slice> slices;

  auto find = [&](const std::string& name) -> const TensorInfo* {
    if (const TensorInfo* t = ckpt.find(name)) return t;
    // facebook/opt-* checkpoints are saved without the wrapper's "model." prefix.
    if (name.starts_with("model.")) return ckpt.find(std::string_view(name).substr(6));
    return nullptr;
  };
  auto tensor = [&](const std::string& name, const std::vector<int64_t>& shape) -> const TensorInfo* {
    const TensorInfo* t = find(name);
    if (!t) {
      fail(fmt::format("missing tensor '{}' ({} model)", name, arch_name(c.arch)), where,
           "check that the checkpoint is complete and that config.json belongs to it");
    }
    if (t->shape != shape) {
      fail(fmt::format("tensor '{}' has shape [{}], the config needs [{}]", name, fmt::join(t->shape, ", "),
                       fmt::join(shape, ", ")),
           t->file.empty() ? where : t->file, "check that config.json belongs to this checkpoint");
    }
    return t;
  };
  auto single = [&](const std::string& name, std::vector<int64_t> shape, const bf16** target) {
    Slice s;
    s.elems = 1;
    for (int64_t d : shape) s.elems *= uint64_t(d);
    s.parts.push_back({tensor(name, shape), 0});
    s.target = target;
    slices.push_back(std::move(s));
  };
  // Row-wise concatenation of `parts` (name, rows), all with `in` columns.
  auto linear = [&](std::initializer_list<std::pair<std::string, int64_t>> parts, int64_t in, bool bias,
                    GpuLinear& l) {
    l.in = in;
    l.out = 0;
    for (const auto& part : parts) l.out += part.second;
    Slice ws, bs;
    ws.target = &l.w;
    bs.target = &l.b;
    int64_t row = 0;
    for (const auto& [base, rows] : parts) {
      ws.parts.push_back({tensor(base + ".weight", {rows, in}), uint64_t(row * in)});
      if (bias) bs.parts.push_back({tensor(base + ".bias", {rows}), uint64_t(row)});
      row += rows;
    }
    ws.elems = uint64_t(l.out * in);
    bs.elems = uint64_t(l.out);
    slices.push_back(std::move(ws));
    if (bias) slices.push_back(std::move(bs));
  };
  auto norm = [&](const std::string& base, GpuNorm& n) {
    const bool affine = c.norm == NormKind::kRmsNorm || c.norm_elementwise_affine;
    if (!affine) return;
    single(base + ".weight", {c.hidden_size}, &n.w);
    if (c.norm == NormKind::kLayerNorm) single(base + ".bias", {c.hidden_size}, &n.b);
  };

  const int64_t hd = c.hidden_size, e = c.embed_dim();
  single(std::string(nm.embed) + ".weight", {c.vocab_size, e}, &w.embed);
  if (*nm.positions) {
    single(std::string(nm.positions) + ".weight", {c.max_position_embeddings + c.position_offset, hd}, &w.positions);
  }
  if (e != hd) {
    if (!*nm.project_in) {
      fail(fmt::format("{} models have no word_embed_proj_dim", arch_name(c.arch)), where, "fix config.json");
    }
    linear({{nm.project_in, hd}}, e, false, w.project_in);
    linear({{nm.project_out, e}}, hd, false, w.project_out);
  }
  w.has_final_norm = c.arch != Arch::kOpt || c.do_layer_norm_before;
  if (w.has_final_norm) norm(nm.final_norm, w.final_norm);
  if (!c.tie_word_embeddings) single(std::string(nm.lm_head) + ".weight", {c.vocab_size, e}, &w.lm_head);

  w.layers.assign(size_t(c.num_layers), GpuLayer{});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    GpuLayer& L = w.layers[size_t(l)];
    const std::string p = fmt::format("{}{}.", nm.layer, l);
    norm(p + nm.attn_norm, L.attn_norm);
    norm(p + nm.mlp_norm, L.mlp_norm);
    linear({{p + nm.q, c.q_dim()}, {p + nm.k, c.kv_dim()}, {p + nm.v, c.kv_dim()}}, hd, c.qkv_bias, L.qkv);
    linear({{p + nm.o, hd}}, c.q_dim(), c.o_bias, L.o);
    if (c.gated_mlp) {
      linear({{p + nm.gate, c.intermediate_size}, {p + nm.up, c.intermediate_size}}, hd, c.mlp_bias, L.gate_up);
    } else {
      linear({{p + nm.up, c.intermediate_size}}, hd, c.mlp_bias, L.gate_up);
    }
    linear({{p + nm.down, hd}}, c.intermediate_size, c.mlp_bias, L.down);
  }
  return slices;
}

uint64_t inv_freq_bytes(const ModelConfig& c) {
  return c.arch == Arch::kOpt ? 0 : uint64_t(c.head_dim / 2) * sizeof(float);
}

uint64_t arena_bytes(const std::vector<Slice>& slices, const ModelConfig& c) {
  uint64_t total = HbmArena::aligned_size(inv_freq_bytes(c));
  for (const Slice& s : slices) total += HbmArena::aligned_size(s.elems * sizeof(bf16));
  return total;
}

void check_supported(const ModelConfig& c, const std::string& where) {
  if (c.head_dim > 256) {
    fail(fmt::format("head_dim {} is larger than the 256 the GPU attention kernels support", c.head_dim), where,
         "run this model with --device cpu");
  }
}

constexpr uint64_t kChunkElems = 16ull << 20;  // fp32 elements per staging chunk (64 MiB)

/// Two pinned host buffers + two HBM fp32 buffers, alternated so that filling one chunk on
/// the host overlaps the copy and conversion of the previous one.
class Stager {
 public:
  Stager(uint64_t chunk_elems, cudaStream_t stream) : chunk_(chunk_elems), stream_(stream) {
    arena_ = HbmArena(2 * HbmArena::aligned_size(chunk_ * sizeof(float)), "weight upload staging");
    for (Slot& s : slots_) {
      s.g_f32 = arena_.allocate_array<float>(chunk_, "staging chunk");
      DAK_CUDA_CHECK(cudaMallocHost(&s.h_f32, chunk_ * sizeof(float)));
      DAK_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
    }
  }
  ~Stager() {
    for (Slot& s : slots_) {
      if (s.done) cudaEventDestroy(s.done);
      if (s.h_f32) cudaFreeHost(s.h_f32);
    }
  }
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  /// Converts src[0, n) (host fp32) into g_dst[0, n) (HBM bf16), asynchronously.
  void upload(const float* src, uint64_t n, bf16* g_dst) {
    for (uint64_t off = 0; off < n; off += chunk_) {
      const uint64_t cnt = std::min(chunk_, n - off);
      Slot& s = slots_[next_];
      next_ ^= 1;
      DAK_CUDA_CHECK(cudaEventSynchronize(s.done));  // the slot's previous chunk has been consumed
      std::memcpy(s.h_f32, src + off, cnt * sizeof(float));
      DAK_CUDA_CHECK(cudaMemcpyAsync(s.g_f32, s.h_f32, cnt * sizeof(float), cudaMemcpyHostToDevice, stream_));
      convert_f32_to_bf16(ConvertParams{s.g_f32, g_dst + off, int64_t(cnt)}, stream_);
      DAK_CUDA_CHECK(cudaEventRecord(s.done, stream_));
    }
  }

 private:
  struct Slot {
    float* h_f32 = nullptr;  // [chunk] pinned host
    float* g_f32 = nullptr;  // [chunk] HBM
    cudaEvent_t done = nullptr;
  };
  uint64_t chunk_;
  cudaStream_t stream_;
  HbmArena arena_;
  Slot slots_[2];
  int next_ = 0;
};

}  // namespace

uint64_t GpuWeights::plan_bytes(const Checkpoint& ckpt) {
  GpuWeights w;
  return arena_bytes(plan_slices(ckpt, w), ckpt.config());
}

GpuWeights GpuWeights::load(const Checkpoint& ckpt) {
  const ModelConfig& c = ckpt.config();
  const std::string where = ckpt.path().string();
  check_supported(c, where);
  GpuWeights w;
  w.config = c;
  const std::vector<Slice> slices = plan_slices(ckpt, w);
  w.bytes = arena_bytes(slices, c);
  uint64_t largest = 0;
  for (const Slice& s : slices) {
    for (const Slice::Part& p : s.parts) largest = std::max<uint64_t>(largest, uint64_t(p.info->num_elements()));
  }
  const uint64_t chunk = std::max<uint64_t>(1, std::min(kChunkElems, largest));
  const uint64_t staging = 2 * HbmArena::aligned_size(chunk * sizeof(float));
  require_free_hbm(w.bytes + staging, fmt::format("the bf16 weights of {} ({}) plus upload staging ({})", where,
                                                  format_gib(w.bytes), format_gib(staging)));
  w.arena = HbmArena(w.bytes, "bf16 weights of " + where);

  cudaStream_t stream = nullptr;
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  try {
    Stager stager(chunk, stream);
    for (const Slice& s : slices) {
      bf16* dst = w.arena.allocate_array<bf16>(s.elems, "weight slice");
      *s.target = dst;
      for (const Slice::Part& p : s.parts) {
        const std::vector<float> v = ckpt.read_f32(*p.info);
        stager.upload(v.data(), v.size(), dst + p.offset);
      }
    }
    if (c.arch != Arch::kOpt) {
      const std::vector<float> f = cpu::rope_inv_freq(c);
      float* g_f = w.arena.allocate_array<float>(f.size(), "rope inv_freq");
      DAK_CUDA_CHECK(cudaMemcpy(g_f, f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice));
      w.inv_freq = g_f;
    }
    DAK_CUDA_CHECK(cudaStreamSynchronize(stream));
  } catch (...) {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    throw;
  }
  DAK_CUDA_CHECK(cudaStreamDestroy(stream));
  if (c.tie_word_embeddings) w.lm_head = w.embed;
  return w;
}

}  // namespace dak::gpu
