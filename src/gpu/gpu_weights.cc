#include "gpu/gpu_weights.h"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "core/checkpoint.h"
#include "core/cpu_ops.h"
#include "core/error.h"
#include "core/rope_layout.h"
#include "core/tensor_names.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/convert.h"
#include "gpu/kernels/random_fill.h"

namespace dak::gpu {
namespace {

constexpr float kInitStd = 0.02f;                      // HF initializer_range default
constexpr float kInitHalfRange = kInitStd * 1.7320508f;  // uniform on [-a, a) has std a / sqrt(3)

/// One weight tensor of the engine (a matrix, a fused matrix or a vector), filled from source
/// tensors placed at element offsets. A splittable slice (weight matrices and embedding tables)
/// keeps its leading `host_rows` rows in the host tier and the rest in HBM.
struct Slice {
  struct Part {
    std::string name;            // canonical HF tensor name
    std::vector<int64_t> shape;  // what the config requires
    uint64_t offset = 0;         // elements into the slice
    uint64_t elems = 0;
    float mean = 0.0f;           // random source: values mean + half_range * U[-1, 1)
    float half_range = kInitHalfRange;
    int64_t paired_head_dim = 0;  // > 0: q or k heads of this head_dim, rows stored in the paired
                                  //   order (core/rope_layout.h; shape[0] rows of `cols` elements)
    bool pairs_with_next = false;  // gate_proj of a paired gate_up (rope_layout engine_pairs_gate_up):
                                   //   this part and the next (up_proj, as many rows) are stored as one
                                   //   paired "head" of D = 2 * rows rows, filled together
  };
  uint64_t elems = 0;
  int64_t cols = 1;       // elements per row
  int64_t host_rows = 0;  // leading rows in the host tier (splittable slices only)
  std::vector<Part> parts;
  const bf16** target = nullptr;        // where the HBM pointer goes (rows [host_rows, ..))
  const bf16** h_target = nullptr;      // where the host pointer goes (splittable slices)
  int64_t* host_rows_target = nullptr;  // where host_rows goes (splittable slices)

  uint64_t host_elems() const { return uint64_t(host_rows) * uint64_t(cols); }
  uint64_t hbm_elems() const { return elems - host_elems(); }
};

/// Lists the slices of `c` (config only), pointing their targets into `w` and taking the host rows
/// of each splittable one from `placement` (null: none). `where` names the model in messages.
/// Throws dak::Error when the placement belongs to another model or one of its weight groups
/// matches no slice (an offload that would silently do nothing).
std::vector<Slice> plan_slices(const ModelConfig& c, GpuWeights& w, const std::string& where,
                               const Placement* placement = nullptr) {
  const TensorNames& nm = tensor_names(c.arch);
  std::vector<Slice> slices;
  // The placement's split of a weight group (null: none), marking it used.
  std::vector<bool> used(placement ? placement->weights.size() : 0, false);
  auto split_of = [&](const std::vector<TensorPart>& parts) -> const WeightSplit* {
    const WeightSplit* s = placement ? placement->split_of(parts, where) : nullptr;
    if (s) used[size_t(s - placement->weights.data())] = true;
    return s;
  };

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
  // An embedding table [rows, cols], splittable along its rows.
  auto table = [&](const std::string& name, int64_t rows, int64_t cols, GpuTable& t) {
    t.rows = rows;
    t.cols = cols;
    Slice s;
    s.elems = uint64_t(rows) * uint64_t(cols);
    s.cols = cols;
    const WeightSplit* split = split_of({{name, rows}});
    s.host_rows = split ? split->host_rows : 0;
    t.staged = split && s.host_rows > 0 && split->staged;  // for the tied LM head
    s.parts.push_back({name, {rows, cols}, 0, s.elems});
    s.target = &t.g;
    s.h_target = &t.h;
    s.host_rows_target = &t.host_rows;
    slices.push_back(std::move(s));
  };
  // Row-wise concatenation of `parts` (name, rows), all with `in` columns.
  // The first `paired_parts` parts hold q / k heads (core/rope_layout.h) when the model uses them;
  // with `gate_up` the two parts (gate, up) are stored interleaved when w.gate_up_paired_rows.
  auto linear = [&](std::initializer_list<std::pair<std::string, int64_t>> parts, int64_t in, bool bias,
                    GpuLinear& l, int paired_parts = 0, bool gate_up = false) {
    l.in = in;
    l.out = 0;
    for (const auto& part : parts) l.out += part.second;
    Slice ws, bs;
    ws.target = &l.w;
    ws.h_target = &l.h_w;
    ws.host_rows_target = &l.m_host;
    ws.cols = in;
    bs.target = &l.b;
    std::vector<TensorPart> split;
    int64_t row = 0;
    int index = 0;
    for (const auto& [base, rows] : parts) {
      const int64_t paired = index++ < paired_parts && w.rope_paired_rows ? c.head_dim : 0;
      const bool pairs_with_next = gate_up && w.gate_up_paired_rows && row == 0;
      ws.parts.push_back({base + ".weight", {rows, in}, uint64_t(row * in), uint64_t(rows * in)});
      ws.parts.back().paired_head_dim = paired;
      ws.parts.back().pairs_with_next = pairs_with_next;
      split.push_back({base + ".weight", rows});
      if (bias) {
        bs.parts.push_back({base + ".bias", {rows}, uint64_t(row), uint64_t(rows)});
        bs.parts.back().paired_head_dim = paired;
        bs.parts.back().pairs_with_next = pairs_with_next;
      }
      row += rows;
    }
    ws.elems = uint64_t(l.out * in);
    const WeightSplit* ps = split_of(split);
    ws.host_rows = ps ? ps->host_rows : 0;
    l.staged = ps && ws.host_rows > 0 && ps->staged;
    if (ws.host_rows > 0 && in % 8 != 0) {
      fail(fmt::format("the plan puts rows of '{}' on the host, but its {} columns are not a multiple of 8 (the "
                       "tiered GEMM reads rows with TMA, which needs 16-byte row pitches)",
                       split.front().name, in),
           where, "keep this weight in HBM (plan with --offload none for this model)");
    }
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
  w.rope_paired_rows = rope_layout::engine_pairs_rows(c);
  w.gate_up_paired_rows = rope_layout::engine_pairs_gate_up(c);
  table(std::string(nm.embed) + ".weight", c.vocab_size, e, w.embed);
  if (*nm.positions) {
    table(std::string(nm.positions) + ".weight", c.max_position_embeddings + c.position_offset, hd, w.positions);
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
  if (!c.tie_word_embeddings) linear({{nm.lm_head, c.vocab_size}}, e, false, w.lm_head);

  w.layers.assign(size_t(c.num_layers), GpuLayer{});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    GpuLayer& L = w.layers[size_t(l)];
    const std::string p = fmt::format("{}{}.", nm.layer, l);
    norm(p + nm.attn_norm, L.attn_norm);
    norm(p + nm.mlp_norm, L.mlp_norm);
    linear({{p + nm.q, c.q_dim()}, {p + nm.k, c.kv_dim()}, {p + nm.v, c.kv_dim()}}, hd, c.qkv_bias, L.qkv, 2);
    linear({{p + nm.o, hd}}, c.q_dim(), c.o_bias, L.o);
    if (c.gated_mlp) {
      linear({{p + nm.gate, c.intermediate_size}, {p + nm.up, c.intermediate_size}}, hd, c.mlp_bias, L.gate_up, 0,
             true);
    } else {
      linear({{p + nm.up, c.intermediate_size}}, hd, c.mlp_bias, L.gate_up);
    }
    linear({{p + nm.down, hd}}, c.intermediate_size, c.mlp_bias, L.down);
  }
  for (size_t i = 0; i < used.size(); ++i) {
    if (used[i]) continue;
    const WeightSplit& s = placement->weights[i];
    fail(fmt::format("the plan splits '{}' (operator '{}'), which this model does not have", s.tensors.front().name,
                     s.op),
         where, "make the plan for this model (dak plan --model <this model> ...)");
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
  for (const Slice& s : slices) total += HbmArena::aligned_size(s.hbm_elems() * sizeof(bf16));
  return total;
}

uint64_t host_arena_bytes(const std::vector<Slice>& slices) {
  uint64_t total = 0;
  for (const Slice& s : slices) total += PinnedHostArena::aligned_size(s.host_elems() * sizeof(bf16));
  return total;
}

/// Pins the host tier for `slices` (nothing when no row is offloaded).
void make_host_arena(GpuWeights& w, const std::vector<Slice>& slices, const std::string& where) {
  w.host_bytes = host_arena_bytes(slices);
  if (w.host_bytes > 0) w.host = PinnedHostArena(w.host_bytes, "host rows of the weights of " + where);
}

/// Allocates slice `s` in its tiers (HBM arena, host arena) and sets its targets.
struct SliceDst {
  bf16* host = nullptr;  // [host_elems]
  bf16* hbm = nullptr;   // [hbm_elems]
};
SliceDst place_slice(const Slice& s, GpuWeights& w) {
  SliceDst d;
  if (s.host_elems() > 0) d.host = w.host.allocate_array<bf16>(s.host_elems(), s.parts.front().name);
  if (s.hbm_elems() > 0) d.hbm = w.arena.allocate_array<bf16>(s.hbm_elems(), "weight slice");
  *s.target = d.hbm;
  if (s.h_target) *s.h_target = d.host;
  if (s.host_rows_target) *s.host_rows_target = s.host_rows;
  return d;
}

/// Calls fn(dst, first, count) for the pieces of elements [offset, offset + elems) of a slice:
/// element i < host_elems lives at host + i, the others at hbm + (i - host_elems).
template <typename Fn>
void for_each_piece(const Slice& s, const SliceDst& d, uint64_t offset, uint64_t elems, Fn&& fn) {
  const uint64_t h = s.host_elems();
  if (offset < h) fn(d.host + offset, uint64_t(0), std::min(elems, h - offset));
  if (offset + elems > h) {
    const uint64_t first = offset >= h ? 0 : h - offset;
    fn(d.hbm + (offset + first - h), first, elems - first);
  }
}

/// lm_head aliases the embedding table's tiers when the embeddings are tied.
void tie_lm_head(GpuWeights& w) {
  if (!w.config.tie_word_embeddings) return;
  w.lm_head = GpuLinear{w.embed.g, w.embed.h, w.embed.host_rows, nullptr, w.embed.rows, w.embed.cols, w.embed.staged};
}

void check_supported(const ModelConfig& c, const std::string& where) {
  if (c.head_dim > 256) {
    fail(fmt::format("head_dim {} is larger than the 256 the GPU attention kernels support", c.head_dim), where,
         "run this model with --device cpu");
  }
}

/// Reorders `rows` rows of `cols` fp32 values (heads of D rows, natural order) into the paired
/// order of core/rope_layout.h, in place.
void to_paired_rows(std::vector<float>& v, int64_t D, int64_t rows, int64_t cols) {
  std::vector<float> head(size_t(D * cols));
  for (int64_t h0 = 0; h0 + D <= rows; h0 += D) {
    float* src = v.data() + h0 * cols;
    std::copy(src, src + D * cols, head.begin());
    for (int64_t i = 0; i < D; ++i) {
      std::copy_n(head.begin() + i * cols, cols, src + rope_layout::paired_row(i, D) * cols);
    }
  }
}

constexpr uint64_t kChunkElems = 16ull << 20;  // fp32 elements per staging chunk (64 MiB)

/// Two pinned host buffers + two HBM fp32 buffers, alternated so that filling one chunk on
/// the host overlaps the copy and conversion of the previous one.
class Stager {
 public:
  Stager(uint64_t chunk_elems, cudaStream_t stream) : chunk_(chunk_elems), stream_(stream) {
    arena_ = HbmArena(2 * HbmArena::aligned_size(chunk_ * sizeof(float)), "weight upload staging", kWeightHbmFix);
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

uint64_t GpuWeights::plan_bytes(const ModelConfig& config) { return plan_bytes(config, nullptr).hbm; }

GpuWeights::Bytes GpuWeights::plan_bytes(const ModelConfig& config, const Placement* placement) {
  GpuWeights w;
  const std::vector<Slice> slices = plan_slices(config, w, "model config", placement);
  return Bytes{arena_bytes(slices, config), host_arena_bytes(slices)};
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
  w.rope_attention_factor = cpu::rope_attention_factor(w.config);
}

}  // namespace

GpuWeights GpuWeights::load(const Checkpoint& ckpt, const Placement* placement, const LoadProgress& progress) {
  const ModelConfig& c = ckpt.config();
  const std::string where = ckpt.path().string();
  check_supported(c, where);
  GpuWeights w;
  w.config = c;
  const std::vector<Slice> slices = plan_slices(c, w, where, placement);
  const auto infos = resolve_tensors(ckpt, slices);
  w.bytes = arena_bytes(slices, c);
  uint64_t largest = 0;
  for (const Slice& s : slices) {
    for (const Slice::Part& p : s.parts) largest = std::max(largest, p.elems);
  }
  const uint64_t chunk = std::max<uint64_t>(1, std::min(kChunkElems, largest));
  const uint64_t staging = 2 * HbmArena::aligned_size(chunk * sizeof(float));
  require_free_hbm(w.bytes + staging, fmt::format("the bf16 weights of {} ({}) plus upload staging ({})", where,
                                                  format_gib(w.bytes), format_gib(staging)),
                   kWeightHbmFix);
  make_host_arena(w, slices, where);
  w.arena = HbmArena(w.bytes, "bf16 weights of " + where, kWeightHbmFix);

  uint64_t total = 0, done = 0;
  for (const Slice& s : slices) {
    for (const Slice::Part& p : s.parts) total += p.elems;
  }
  cudaStream_t stream = nullptr;
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  try {
    Stager stager(chunk, stream);
    for (size_t i = 0; i < slices.size(); ++i) {
      const Slice& s = slices[i];
      const SliceDst dst = place_slice(s, w);
      for (size_t j = 0; j < s.parts.size(); ++j) {
        const Slice::Part& part = s.parts[j];
        const int64_t cols = part.shape.size() > 1 ? part.shape[1] : 1;
        std::vector<float> v = ckpt.read_f32(*infos[i][j]);
        if (part.paired_head_dim > 0) to_paired_rows(v, part.paired_head_dim, part.shape[0], cols);
        if (part.pairs_with_next) {  // gate then up, as one paired "head" of 2I rows
          const std::vector<float> up = ckpt.read_f32(*infos[i][j + 1]);
          v.insert(v.end(), up.begin(), up.end());
          to_paired_rows(v, 2 * part.shape[0], 2 * part.shape[0], cols);
          done += s.parts[++j].elems;  // the up part is filled here
        }
        // Host-tier pieces are converted on the GPU and written in place over PCIe (mapped).
        for_each_piece(s, dst, part.offset, v.size(), [&](bf16* d, uint64_t first, uint64_t n) {
          stager.upload(v.data() + first, n, d);
        });
        done += part.elems;
        if (progress) progress(done, total);
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
  tie_lm_head(w);
  return w;
}

GpuWeights GpuWeights::random(const ModelConfig& config, uint64_t seed, const std::string& where,
                              const Placement* placement) {
  check_supported(config, where);
  GpuWeights w;
  w.config = config;
  const std::vector<Slice> slices = plan_slices(config, w, where, placement);
  w.bytes = arena_bytes(slices, config);
  // HbmArena refuses (before cudaMalloc) when the bytes do not fit in free HBM.
  w.arena = HbmArena(w.bytes, fmt::format("random bf16 weights of {} (seed {})", where, seed), kWeightHbmFix);
  make_host_arena(w, slices, where);
  uint64_t stream_id = 0;  // the part's index in random_tensor_table
  for (const Slice& s : slices) {
    const SliceDst dst = place_slice(s, w);
    for (size_t j = 0; j < s.parts.size(); ++j) {
      const Slice::Part& p = s.parts[j];
      // A paired gate_up fills gate and up in one pass, from their two streams (stream_id, + 1).
      const uint64_t elems = p.pairs_with_next ? p.elems + s.parts[j + 1].elems : p.elems;
      for_each_piece(s, dst, p.offset, elems, [&](bf16* d, uint64_t first, uint64_t n) {
        RandomFillParams f{d, int64_t(n), seed, stream_id, p.mean, p.half_range, int64_t(first)};
        if (p.paired_head_dim > 0 || p.pairs_with_next) {
          f.paired_head_dim = p.pairs_with_next ? 2 * p.shape[0] : p.paired_head_dim;
          f.second_half_next_stream = p.pairs_with_next;
          f.row_elems = p.shape.size() > 1 ? p.shape[1] : 1;
        }
        random_fill_bf16(f, nullptr);
      });
      stream_id += p.pairs_with_next ? 2 : 1;
      if (p.pairs_with_next) ++j;
    }
  }
  upload_inv_freq(w);
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  tie_lm_head(w);
  return w;
}

}  // namespace dak::gpu
