#include "gpu/gpu_weights.h"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "core/checkpoint.h"
#include "core/cpu_ops.h"
#include "core/error.h"
#include "core/tensor_names.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/convert.h"
#include "gpu/kernels/random_fill.h"

namespace dak::gpu {
namespace {

constexpr float kInitStd = 0.02f;                      // HF initializer_range default
constexpr float kInitHalfRange = kInitStd * 1.7320508f;  // uniform on [-a, a) has std a / sqrt(3)

/// One bf16 arena slice, filled from source tensors placed at element offsets.
struct Slice {
  struct Part {
    std::string name;            // canonical HF tensor name
    std::vector<int64_t> shape;  // what the config requires
    uint64_t offset = 0;         // elements into the slice
    uint64_t elems = 0;
    float mean = 0.0f;           // random source: values mean + half_range * U[-1, 1)
    float half_range = kInitHalfRange;
  };
  uint64_t elems = 0;
  std::vector<Part> parts;
  const bf16** target = nullptr;  // where the slice's device pointer goes
};

/// Lists the slices of `c` (config only), pointing their targets into `w`. `where` names the
/// model in messages.
std::vector<Slice> plan_slices(const ModelConfig& c, GpuWeights& w, const std::string& where) {
  const TensorNames& nm = tensor_names(c.arch);
  std::vector<Slice> slices;

  auto elems_of = [](const std::vector<int64_t>& shape) {
    uint64_t n = 1;
    for (int64_t d : shape) n *= uint64_t(d);
    return n;
  };
  auto single = [&](const std::string& name, std::vector<int64_t> shape, const bf16** target, float mean = 0.0f) {
    Slice s;
    s.elems = elems_of(shape);
    s.parts.push_back({name, std::move(shape), 0, s.elems, mean});
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
      ws.parts.push_back({base + ".weight", {rows, in}, uint64_t(row * in), uint64_t(rows * in)});
      if (bias) bs.parts.push_back({base + ".bias", {rows}, uint64_t(row), uint64_t(rows)});
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
    single(base + ".weight", {c.hidden_size}, &n.w, 1.0f);
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

/// The checkpoint tensor of every part of `slices` (same nesting), checked against the shapes
/// the config requires. Throws dak::Error naming the first missing or misshapen tensor.
std::vector<std::vector<const TensorInfo*>> resolve_tensors(const Checkpoint& ckpt, const std::vector<Slice>& slices) {
  const ModelConfig& c = ckpt.config();
  const std::string where = ckpt.path().string();
  auto find = [&](const std::string& name) -> const TensorInfo* {
    if (const TensorInfo* t = ckpt.find(name)) return t;
    // facebook/opt-* checkpoints are saved without the wrapper's "model." prefix.
    if (name.starts_with("model.")) return ckpt.find(std::string_view(name).substr(6));
    return nullptr;
  };
  std::vector<std::vector<const TensorInfo*>> out;
  out.reserve(slices.size());
  for (const Slice& s : slices) {
    auto& infos = out.emplace_back();
    for (const Slice::Part& p : s.parts) {
      const TensorInfo* t = find(p.name);
      if (!t) {
        fail(fmt::format("missing tensor '{}' ({} model)", p.name, arch_name(c.arch)), where,
             "check that the checkpoint is complete and that config.json belongs to it");
      }
      if (t->shape != p.shape) {
        fail(fmt::format("tensor '{}' has shape [{}], the config needs [{}]", p.name, fmt::join(t->shape, ", "),
                         fmt::join(p.shape, ", ")),
             t->file.empty() ? where : t->file, "check that config.json belongs to this checkpoint");
      }
      infos.push_back(t);
    }
  }
  return out;
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
  const std::vector<Slice> slices = plan_slices(ckpt.config(), w, ckpt.path().string());
  resolve_tensors(ckpt, slices);
  return arena_bytes(slices, ckpt.config());
}

uint64_t GpuWeights::plan_bytes(const ModelConfig& config) {
  GpuWeights w;
  return arena_bytes(plan_slices(config, w, "model config"), config);
}

std::vector<RandomTensorSpec> GpuWeights::random_tensor_table(const ModelConfig& config) {
  GpuWeights w;
  std::vector<RandomTensorSpec> table;
  for (const Slice& s : plan_slices(config, w, "model config")) {
    for (const Slice::Part& p : s.parts) table.push_back({p.name, p.shape, table.size(), p.mean, p.half_range});
  }
  return table;
}

namespace {

/// Writes the RoPE inverse frequencies (non-OPT) into the arena; the last step of both sources.
void upload_inv_freq(GpuWeights& w) {
  if (w.config.arch == Arch::kOpt) return;
  const std::vector<float> f = cpu::rope_inv_freq(w.config);
  float* g_f = w.arena.allocate_array<float>(f.size(), "rope inv_freq");
  DAK_CUDA_CHECK(cudaMemcpy(g_f, f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice));
  w.inv_freq = g_f;
}

}  // namespace

GpuWeights GpuWeights::load(const Checkpoint& ckpt) {
  const ModelConfig& c = ckpt.config();
  const std::string where = ckpt.path().string();
  check_supported(c, where);
  GpuWeights w;
  w.config = c;
  const std::vector<Slice> slices = plan_slices(c, w, where);
  const auto infos = resolve_tensors(ckpt, slices);
  w.bytes = arena_bytes(slices, c);
  uint64_t largest = 0;
  for (const Slice& s : slices) {
    for (const Slice::Part& p : s.parts) largest = std::max(largest, p.elems);
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
    for (size_t i = 0; i < slices.size(); ++i) {
      const Slice& s = slices[i];
      bf16* dst = w.arena.allocate_array<bf16>(s.elems, "weight slice");
      *s.target = dst;
      for (size_t j = 0; j < s.parts.size(); ++j) {
        const std::vector<float> v = ckpt.read_f32(*infos[i][j]);
        stager.upload(v.data(), v.size(), dst + s.parts[j].offset);
      }
    }
    upload_inv_freq(w);
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

GpuWeights GpuWeights::random(const ModelConfig& config, uint64_t seed, const std::string& where) {
  check_supported(config, where);
  GpuWeights w;
  w.config = config;
  const std::vector<Slice> slices = plan_slices(config, w, where);
  w.bytes = arena_bytes(slices, config);
  // HbmArena refuses (before cudaMalloc) when the bytes do not fit in free HBM.
  w.arena = HbmArena(w.bytes, fmt::format("random bf16 weights of {} (seed {})", where, seed));
  uint64_t stream_id = 0;  // the part's index in random_tensor_table
  for (const Slice& s : slices) {
    bf16* dst = w.arena.allocate_array<bf16>(s.elems, "weight slice");
    *s.target = dst;
    for (const Slice::Part& p : s.parts) {
      random_fill_bf16(RandomFillParams{dst + p.offset, int64_t(p.elems), seed, stream_id++, p.mean, p.half_range},
                       nullptr);
    }
  }
  upload_inv_freq(w);
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  if (config.tie_word_embeddings) w.lm_head = w.embed;
  return w;
}

}  // namespace dak::gpu
