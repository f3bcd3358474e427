#include "gpu/gpu_engine.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_set>

#include "core/checkpoint.h"
#include "core/env.h"
#include "core/error.h"
#include "core/plan.h"
#include "gpu/cuda_check.h"
#include "gpu/device.h"
#include "gpu/gemm_cublaslt.h"
#include "gpu/gpu_weights.h"
#include "gpu/hbm_arena.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/activation.h"
#include "gpu/kernels/attention_decode.h"
#include "gpu/kernels/attention_prefill.h"
#include "gpu/kernels/diag_empty.h"
#include "gpu/kernels/embedding.h"
#include "gpu/kernels/host_gate.h"
#include "gpu/kernels/kv_append.h"
#include "gpu/kernels/kv_cache.h"
#include "gpu/kernels/norm.h"
#include "gpu/kernels/rope.h"
#include "gpu/kernels/sampling.h"
#include "gpu/kernels/tiered_attention.h"
#include "gpu/kernels/tiered_gemm.h"

namespace dak::gpu {
namespace {

/// One forward pass: up to max_pass_tokens rows, at most one piece of each sequence.
struct Pass {
  struct Piece {
    int32_t slot, pos0, len, row0;
  };
  std::vector<int32_t> ids, pos, slot;  // [T]
  std::vector<Piece> pieces;            // [S]
  std::vector<int32_t> sel;             // [R] rows whose logits are wanted
  std::vector<int64_t> out_rows;        // [R] their rows in the step's result
  int32_t max_len = 0;

  int64_t T() const { return int64_t(ids.size()); }
  bool all_rows() const {
    if (sel.size() != ids.size()) return false;
    for (size_t i = 0; i < sel.size(); ++i) {
      if (sel[i] != int32_t(i)) return false;
    }
    return true;
  }
};

/// Static sizes of one pass, what forward() needs to enqueue it (and what a graph bakes in).
struct PassDims {
  int64_t T = 0, S = 0, R = 0;
  int32_t max_len = 0;
  bool all_rows = true;
};

/// Whether tiered decode steps fold RoPE and the KV append into the attention kernel
/// (TieredAttentionArgs::g_new; the bits are the same either way): only with DAK_ATTN_FUSE_ROPE=1.
/// Off by default: measured slower (session 17, Llama-2-7B decode: the fused attention kernel adds
/// 14.0 us per layer against 5.9 + 2.1 us for the attention and the RoPE / append kernel; the
/// cause is not known yet; docs/perf-notes.md).
bool attention_fuse_rope() {
  static const bool on = env_flag("DAK_ATTN_FUSE_ROPE", false);
  return on;
}

/// Whether qkv's epilogue may run RoPE and the KV append (TieredGemmRopeOut; same bits as the
/// separate apply_rope_kv_append launch). DAK_ROPE_EPILOGUE=0 keeps the separate kernel (A/B runs).
/// Measured on the H100: docs/perf-notes.md session 34.
bool rope_epilogue_enabled() {
  static const bool on = env_flag("DAK_ROPE_EPILOGUE", true);
  return on;
}

/// DAK_ACT_EPILOGUE=0: the gated activation in its own kernel instead of gate_up's epilogue (A/B).
bool act_epilogue_enabled() {
  static const bool on = env_flag("DAK_ACT_EPILOGUE", true);
  return on;
}

/// Diagnostic builds only (-DDAK_DIAG_SKIP_KERNELS; wrong outputs, never a release): whether
/// DAK_DIAG_SKIP (a comma list of rope, act, attn, attn_body, attn_smem) drops that kernel from every layer, to
/// bound what fusing it away could save (docs/perf-notes.md session 33); attn_body puts one empty
/// kernel of the tiered decode attention's CTA count in its place (and its combine kernel's, if
/// any), so that the kernel boundary alone is timed (session 39). The empty CTAs hold no SMEM, so
/// the next GEMM's early CTAs fit beside them as they would not beside the attention's. Always
/// false otherwise. attn_smem: the same empty kernel holding the attention's SMEM per CTA, so that
/// it keeps the next GEMM's early CTAs off the SMs as the attention does (session 40).
#ifdef DAK_DIAG_SKIP_KERNELS
bool diag_skip(const char* what) {
  static const std::string v = [] {
    const char* e = std::getenv("DAK_DIAG_SKIP");
    return "," + std::string(e ? e : "") + ",";
  }();
  return v.find("," + std::string(what) + ",") != std::string::npos;
}
#else
constexpr bool diag_skip(const char*) { return false; }
#endif

/// A decoder layer's GEMMs: the operators DAK_GEMM_TRACE and DAK_GEMM_GRID name.
constexpr StepOp kLayerGemms[] = {StepOp::kQkvProj, StepOp::kOProj, StepOp::kMlpUp, StepOp::kMlpDown};

/// A decoder layer's GEMMs with their operators, in kLayerGemms' order.
std::array<std::pair<StepOp, const GpuLinear*>, 4> layer_gemms(const GpuLayer& L) {
  return {{{StepOp::kQkvProj, &L.qkv}, {StepOp::kOProj, &L.o}, {StepOp::kMlpUp, &L.gate_up},
           {StepOp::kMlpDown, &L.down}}};
}
bool is_layer_gemm(StepOp op) {
  return std::find(std::begin(kLayerGemms), std::end(kLayerGemms), op) != std::end(kLayerGemms);
}

/// The items of an A/B switch's comma-separated OPERATOR=VALUE list in the environment variable
/// `var` (DAK_EARLY_W, DAK_GEMM_GRID), in order: take(op, value) for each item whose OPERATOR is
/// step_op_name(op) (core/env.h env_named_items, which gives the notice for any other item).
void for_each_op_item(const char* var, const char* expected,
                      const std::function<bool(StepOp op, const std::string& value)>& take) {
  std::vector<std::string> names;
  for (size_t i = 0; i < size_t(StepOp::kCount); ++i) names.emplace_back(step_op_name(StepOp(i)));
  env_named_items(var, names, expected, [&](size_t i, const std::string& value) { return take(StepOp(i), value); });
}

/// DAK_GEMM_TRACE=OP (a decoder layer's GEMM: qkv_proj, o_proj, mlp_up or mlp_down): every
/// tiered-GEMM launch of that operator in a decode step writes its per-CTA trace
/// (TieredGemmArgs::g_trace) into one HBM buffer, so that after a decode step it holds the last
/// layer's (GpuEngine::gemm_trace).
/// A diagnostic for A/B runs (docs/perf-notes.md session 41): StepOp::kCount (off) unless set; any
/// other value is ignored with a notice. Read once per process.
StepOp gemm_trace_op() {
  // The step_op_name()s of kLayerGemms, in its order.
  static const int i = env_choice("DAK_GEMM_TRACE", {"qkv_proj", "o_proj", "mlp_up", "mlp_down"});
  return i < 0 ? StepOp::kCount : kLayerGemms[i];
}
constexpr int64_t kGemmTraceCtas = 4096;                                  // CTAs the trace buffer holds
constexpr uint64_t kGemmTraceBytes = uint64_t(kGemmTraceCtas) * kGemmTraceFields * sizeof(uint64_t);

/// W stages each HBM CTA of a GEMM requests before waiting for the previous kernel
/// (TieredGemmArgs::early_w_stages), per operator: -1 (the kernel's tuned default) unless
/// DAK_EARLY_W="qkv_proj=3,o_proj=5" (a tiered GEMM's operator: a layer's GEMMs or logits; counts
/// 0-64, more than the ring holds meaning the whole ring) sets it, for A/B measurements. Read once
/// per process; any other item is ignored with a notice on stderr.
int32_t early_w_stages(StepOp op) {
  static const std::array<int32_t, size_t(StepOp::kCount)> table = [] {
    std::array<int32_t, size_t(StepOp::kCount)> t;
    t.fill(-1);
    for_each_op_item("DAK_EARLY_W",
                     "GEMM=COUNT with GEMM qkv_proj, o_proj, mlp_up, mlp_down or logits and COUNT 0 to 64, e.g. o_proj=3",
                     [&](StepOp op, const std::string& count) {
                       const int32_t n = env_decimal(count, 2);
                       if (!(is_layer_gemm(op) || op == StepOp::kLogits) || n < 0 || n > 64) return false;
                       t[size_t(op)] = n;
                       return true;
                     });
    return t;
  }();
  return table[size_t(op)];
}

/// DAK_GEMM_CUBLASLT="qkv_proj=1,o_proj=1" (a layer's GEMMs, 1 on / 0 off): those operators run on
/// cuBLASLt wherever --gemm tiered or auto would run them on the tiered GEMM without host or staged rows
/// and without an offload placement; their epilogues (norm, RoPE, activation) then run as their own
/// kernels. A diagnostic for a per-operator backend choice (docs/perf-notes.md session 51). Read once
/// per process; any other item is ignored with a notice on stderr.
const std::array<bool, size_t(StepOp::kCount)>& cublaslt_ops() {
  static const std::array<bool, size_t(StepOp::kCount)> table = [] {
    std::array<bool, size_t(StepOp::kCount)> t{};
    for_each_op_item("DAK_GEMM_CUBLASLT", "GEMM=1 or GEMM=0 with GEMM qkv_proj, o_proj, mlp_up or mlp_down",
                     [&](StepOp op, const std::string& on) {
                       if (!is_layer_gemm(op) || (on != "0" && on != "1")) return false;
                       t[size_t(op)] = on == "1";
                       return true;
                     });
    return t;
  }();
  return table;
}

/// A decode GEMM's unit grid forced for A/B measurements: k-splits and HBM CTAs of one operator.
struct GemmGrid {
  int32_t k_splits = 0;  // 0: the plan's (no override)
  int32_t hbm_ctas = 0;
};

/// DAK_GEMM_GRID="o_proj=3:96,mlp_down=3:96" (StepOp names, SPLITS:CTAS): the all-HBM launches of
/// that operator on the 64-row (decode) tiles run with k_splits = SPLITS and hbm_ctas = CTAS instead
/// of plan_tiered_gemm's choice (k_chunks 1; SPLITS capped at the shape's k-blocks, CTAS at the SM
/// count). A diagnostic (docs/perf-notes.md session 42: o_proj's CTAs on the SMs the attention holds
/// start late and end last; on the H100, o_proj=3:96 had every CTA start early yet ran 0.2 % / 1.2 %
/// slower at batch 1 / 8, and down=3:96 on top of it 3.5 % / 2.1 % more: a CTA's read rate is bound
/// by its ring, so fewer CTAs stream slower). Bits change with k_splits (the sum order), and while it
/// is set they depend on the placement: launches with host rows or staged rows keep the plan's
/// splits (a notice says so once per operator). Read once per process; an item that is not
/// GEMM=SPLITS:CTAS with a layer's GEMM is ignored with a notice.
const std::array<GemmGrid, size_t(StepOp::kCount)>& gemm_grid_overrides() {
  static const std::array<GemmGrid, size_t(StepOp::kCount)> table = [] {
    std::array<GemmGrid, size_t(StepOp::kCount)> t{};
    for_each_op_item("DAK_GEMM_GRID",
                     "GEMM=SPLITS:CTAS with a layer's GEMM, qkv_proj, o_proj, mlp_up or mlp_down, SPLITS 1 to 64 and "
                     "CTAS 1 to 4096, e.g. o_proj=3:96",
                     [&](StepOp op, const std::string& value) {
                       const size_t colon = value.find(':');
                       if (!is_layer_gemm(op) || colon == std::string::npos) return false;
                       const int32_t splits = env_decimal(value.substr(0, colon), 4);
                       const int32_t ctas = env_decimal(value.substr(colon + 1), 4);
                       if (splits < 1 || splits > 64 || ctas < 1 || ctas > 4096) return false;  // the notice's ranges
                       t[size_t(op)] = GemmGrid{splits, ctas};
                       return true;
                     });
    return t;
  }();
  return table;
}

/// The largest k-splits DAK_GEMM_GRID asks of any operator (0: none).
int32_t gemm_grid_max_splits() {
  int32_t most = 0;
  for (const GemmGrid& g : gemm_grid_overrides()) most = std::max(most, g.k_splits);
  return most;
}

}  // namespace

struct GpuEngine::Impl {
  int device = 0;
  std::string name;
  int64_t sm_count = 0;
  TieredGemmLinkLimits gemm_limits;  // congestion limits with this GPU's multicast co-residency (init)
  GpuEngineOptions options;
  GpuWeights w;
  cudaStream_t stream = nullptr;

  // ---- staged linears (prefetch mode; auto: the plan's staged ones): the host rows of each are
  // copied by the copy engine into an HBM staging ring of `slots` slots (kStagingRingSlots, or
  // DAK_STAGING_SLOTS=2..4 for A/B measurements) on copy_stream; the copy of staged linear k waits
  // for the GEMM that last read its slot (k - slots), so copies run up to slots - 1 linears ahead.
  static constexpr int kMaxSlots = 4;
  int slots = kStagingRingSlots;
  cudaStream_t copy_stream = nullptr;
  cudaEvent_t ev_fork = nullptr, ev_join = nullptr;  // main <-> copy stream
  cudaEvent_t ev_copied[kMaxSlots] = {};             // slot filled (copy stream)
  cudaEvent_t ev_consumed[kMaxSlots] = {};           // slot read (main stream)
  bf16* staging[kMaxSlots] = {};                     // [max host rows x K] bf16, HBM
  std::vector<const GpuLinear*> staged_order;  // linears with host rows, in forward() order
  size_t staged_next = 0;                      // the next of them forward() reaches

  // ---- state (start())
  HbmArena state;
  std::unique_ptr<CublasLtGemm> gemm;
  void* tiered_ws = nullptr;  // HBM workspace of the tiered GEMM (counters zero between runs)
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, TieredGemmSchedule> tiered_plans;  // (M, N, K, m_host)
  int64_t batch = 0, max_ctx = 0, tc = 0;
  std::vector<int64_t> pos;
  DecodeSplit split;
  // KV cache: one two-tier view per layer (kernels/kv_cache.h), [B][Hkv][max_ctx][D] split along
  // the batch. Slots [0, kv_host_seqs[l]) of layer l live in its host tier, the others in its HBM
  // tier, a slice of `state`. kv_host_seqs comes from the offload placement (options.placement)
  // when start() gets the plan's batch or a smaller one (start()); the host tiers are slices of kv_host.
  std::vector<KvCacheLayer> kv_layers;  // [L]
  std::vector<int64_t> kv_host_seqs;    // [L] host-tier slots of each layer (b_host)
  PinnedHostArena kv_host;              // the host tiers of every layer (empty without a KV placement)
  // Full decode steps (row b = slot b) run tiered_attention when the model allows it (no sliding
  // window that can bite, head_dim supported, G <= 16); other one-token passes attention_decode.
  bool tiered_decode = false;
  std::vector<TieredAttentionSchedule> attn_schedules;  // [L] tiered attention schedule (b_host of the layer)
  void* attn_ws = nullptr;  // tiered attention workspace (largest schedule's; layers run in stream order)
  float* resid = nullptr;                       // [tc, hidden] fp32 residual stream
  bf16* normed = nullptr;                       // [tc, hidden] normalized rows (GEMM input)
  bf16* emb = nullptr;                          // [tc, E] OPT project_in input
  bf16* qkv = nullptr;                          // [tc, H*D + 2*Hkv*D]
  bf16* attn = nullptr;                         // [tc, H*D]
  bf16* sub = nullptr;                          // [tc, hidden] sublayer output
  bf16* gu = nullptr;                           // [tc, 2I] (gated) or [tc, I]
  bf16* act = nullptr;                          // [tc, I] gated MLP activation
  bf16* fin = nullptr;                          // [tc, hidden] rows selected for logits
  bf16* fin_e = nullptr;                        // [tc, E] OPT project_out output
  float* logits = nullptr;                      // [tc, V] fp32
  float* partial = nullptr;                     // decode attention workspace
  float* norm_sumsq[2] = {nullptr, nullptr};    // [hidden / 64, T] fp32 each: fused-norm block sums
                                                //   (TieredGemmNormOut), o_proj's and down's
  uint64_t* gemm_trace = nullptr;               // [kGemmTraceCtas, kGemmTraceFields] with DAK_GEMM_TRACE, else null
  int64_t gemm_trace_ctas = 0;                  // grid of the last traced launch (a decode step's)
  bool decode_pass = false;                     // the pass being enqueued is a decode step (run_pass)
  int32_t* g_meta = nullptr;                    // packed per-pass metadata (layout: meta_* offsets)
  int32_t* h_meta = nullptr;                    // pinned host mirror
  int32_t* h_sampled = nullptr;                 // [tc] pinned host copy of g_sampled
  int32_t* g_sampled = nullptr;                 // [tc] sampled ids
  // meta_* offsets (int32 elements) into g_meta: ids, pos, slot [pass]; seg_slot, seg_pos0, seg_len,
  // seg_row0 [B] (AttentionSegments); kv_len [B] (keys of each slot after the pass, tiered_attention's
  // len); sel, counter [pass].
  int64_t meta_ids = 0, meta_pos = 0, meta_slot = 0, meta_seg_slot = 0, meta_seg_pos0 = 0, meta_seg_len = 0,
          meta_seg_row0 = 0, meta_kv_len = 0, meta_sel = 0, meta_counter = 0, meta_len = 0;

  // ---- decode graph
  bool decode_warm = false;  // one eager decode step ran since start() (cuBLASLt plans exist)
  cudaGraphExec_t graph = nullptr;
  int64_t replays = 0;

  // ---- measuring
  cudaEvent_t ev_step_begin = nullptr, ev_step_end = nullptr;  // around every step
  bool step_timed = false;                                      // both events recorded
  bool profiling = false;                 // forward() records op_events (eager steps only)
  std::vector<cudaEvent_t> op_events;     // pool; op_events[i] starts an interval of op_kinds[i]
  std::vector<StepOp> op_kinds;           // kinds recorded in the current profiled step
  int32_t* h_gate = nullptr;              // [2] mapped pinned: gate flag, gate timed out
  const int32_t* g_gate = nullptr;        // device view of h_gate

  ~Impl() {
    release_state();
    for (cudaEvent_t e : op_events) cudaEventDestroy(e);
    if (h_gate) cudaFreeHost(h_gate);
    if (ev_step_begin) cudaEventDestroy(ev_step_begin);
    if (ev_step_end) cudaEventDestroy(ev_step_end);
    if (stream) cudaStreamDestroy(stream);
    for (cudaEvent_t e : {ev_fork, ev_join}) {
      if (e) cudaEventDestroy(e);
    }
    for (int i = 0; i < kMaxSlots; ++i) {
      if (ev_copied[i]) cudaEventDestroy(ev_copied[i]);
      if (ev_consumed[i]) cudaEventDestroy(ev_consumed[i]);
    }
    if (copy_stream) cudaStreamDestroy(copy_stream);
  }

  void release_state() {
    if (graph) cudaGraphExecDestroy(graph);
    graph = nullptr;
    if (h_meta) cudaFreeHost(h_meta);
    h_meta = nullptr;
    if (h_sampled) cudaFreeHost(h_sampled);
    h_sampled = nullptr;
    gemm.reset();
    tiered_ws = nullptr;
    tiered_plans.clear();
    kv_layers.clear();
    kv_host = PinnedHostArena();
    attn_schedules.clear();
    attn_ws = nullptr;
    gemm_trace = nullptr;
    gemm_trace_ctas = 0;
    tiered_decode = false;
    state = HbmArena();
    batch = 0;
    decode_warm = false;
    replays = 0;
  }

  void use_device() const { DAK_CUDA_CHECK(cudaSetDevice(device)); }
  void init(int device_index, const std::function<GpuWeights()>& load_weights);
  void start(int64_t b, int64_t ctx);
  /// Profiling only: the work enqueued on `s` from here to the next mark belongs to `op`.
  void mark(StepOp op, cudaStream_t s);
  std::vector<int32_t> sample_step(std::span<const std::vector<int32_t>> tokens, const SamplingParams& sampling,
                                   bool eager);
  std::vector<Pass> plan_passes(std::span<const std::vector<int32_t>> tokens, bool all_logits) const;
  void upload_meta(const Pass& p);
  void forward(const PassDims& d, cudaStream_t s);
  /// Linear layers that may run on the tiered GEMM: (M = out, K = in) of every weight matrix.
  std::vector<std::pair<int64_t, int64_t>> linear_shapes() const;
  bool use_tiered(int64_t N, int64_t K) const;
  /// linear() runs `l` at N tokens on the tiered GEMM (not zero-copy; host rows, or use_tiered).
  bool runs_tiered(const GpuLinear& l, int64_t N) const;
  /// The layer linears DAK_GEMM_CUBLASLT sends to cuBLASLt (cublaslt_ops), found once.
  mutable std::optional<std::unordered_set<const GpuLinear*>> cublaslt_linears;
  /// runs_tiered, on the 64-row tiles (N <= 64): the ones that carry the RMSNorm epilogues.
  bool on_64_row_tiles(const GpuLinear& l, int64_t N) const;
  /// The model's norms can run inside the tiered GEMMs of short passes (TieredGemmNormOut / NormIn):
  /// pre-LN RMSNorm, hidden a multiple of 64, not zero-copy, not switched off (DAK_NO_FUSED_NORM=1).
  bool fused_norm_possible() const;
  /// A pass of T tokens runs its in-layer norms fused: fused_norm_possible, T <= kFusedNormMaxTokens,
  /// and every qkv and gate_up runs on the tiered GEMM's 64-row tiles (their norm-in epilogue).
  bool fused_norm(int64_t T) const;
  /// The linear `l` at T tokens can end in the norm-out epilogue (tiered, 64-row tiles, M and its
  /// host rows multiples of 64); otherwise a fused pass runs rms_norm_out after it (the same bits).
  /// DAK_NORM_OUT_KERNEL=1 runs rms_norm_out after every producer linear (A/B measurements; the
  /// norm-in epilogues stay).
  bool norm_out_fusable(const GpuLinear& l, int64_t T) const;
  uint64_t tiered_workspace_bytes(int64_t pass) const;
  /// Bytes of one prefetch staging slot: the largest host part of a staged linear (0 otherwise).
  uint64_t staging_slot_bytes() const {
    uint64_t most = 0;
    for (const GpuLinear* l : staged_order) most = std::max(most, uint64_t(l->m_host * l->in) * sizeof(bf16));
    return most;
  }
  /// Enqueues the copy of staged_order[k]'s host rows into slot k % slots on copy_stream, after the
  /// GEMM that read that slot last (k - slots).
  void issue_staging_copy(size_t k);
  /// y[N, M] = x[N, K] W^T (+ bias) (ReLU) for W = l ([M, K], rows [0, l.m_host) in the host
  /// tier): the tiered GEMM or cuBLASLt per use_tiered. `op`: the step operator it computes
  /// (names the GEMM for DAK_EARLY_W).
  /// `norm_out` / `norm_in` (fused-norm passes only): the tiered GEMM's RMSNorm epilogues.
  /// `rope` (qkv only, paired rows): the RoPE + KV append epilogue where the linear runs on the
  /// tiered GEMM's 64-row tiles with host rows a multiple of 16. `act` (gate_up only, paired rows):
  /// the gated activation epilogue under the same conditions (y is then not written). Returns
  /// whether the offered epilogue ran (else the caller launches apply_rope_kv_append or
  /// mlp_activation).
  bool linear(const bf16* x, const GpuLinear& l, void* y, int64_t N, bool relu, bool f32_out, cudaStream_t s,
              StepOp op = StepOp::kLogits, const TieredGemmNormOut* norm_out = nullptr,
              const TieredGemmNormIn* norm_in = nullptr, const TieredGemmRopeOut* rope = nullptr,
              const TieredGemmActOut* act = nullptr);
  void run_pass(const Pass& p, bool eager = false);
};

void GpuEngine::Impl::mark(StepOp op, cudaStream_t s) {
  if (!profiling) return;
  if (op_kinds.size() == op_events.size()) {
    cudaEvent_t e = nullptr;
    DAK_CUDA_CHECK(cudaEventCreate(&e));
    op_events.push_back(e);
  }
  DAK_CUDA_CHECK(cudaEventRecord(op_events[op_kinds.size()], s));
  op_kinds.push_back(op);
}

// ------------------------------------------------------------------------------ state

void GpuEngine::Impl::start(int64_t b, int64_t ctx) {
  const ModelConfig& c = w.config;
  if (b <= 0) fail(fmt::format("batch size must be positive, got {}", b), "GpuEngine::start", "pass at least one sequence");
  if (ctx <= 0 || ctx > c.max_position_embeddings) {
    fail(fmt::format("context of {} tokens is outside the model's context of {} tokens", ctx, c.max_position_embeddings),
         "GpuEngine::start (max_position_embeddings)", "use a shorter prompt or fewer new tokens (--max-new-tokens)");
  }
  if (b > INT32_MAX / 8 || ctx > INT32_MAX / 8) {
    fail("batch or context too large", "GpuEngine::start", "use fewer prompts at once (--max-batch), or a smaller --max-context");
  }
  use_device();
  if (batch == b && max_ctx == ctx && gemm) {
    // Same shape as the live state: keep the arena, the GEMM plans and the decode graph.
    DAK_CUDA_CHECK(cudaStreamSynchronize(stream));
    pos.assign(size_t(b), 0);
    replays = 0;
    step_timed = false;
    return;
  }
  release_state();

  const int64_t hd = c.hidden_size, E = c.embed_dim(), qd = c.q_dim(), kvd = c.kv_dim();
  const int64_t gud = c.gated_mlp ? 2 * c.intermediate_size : c.intermediate_size;
  const int64_t pass = std::max(b, std::min(b * ctx, std::max<int64_t>(1, options.max_pass_tokens)));
  const DecodeSplit sp = choose_decode_split(b, c.num_heads, c.num_kv_heads, ctx, sm_count);
  const int64_t mlen = 4 * pass + 6 * b;

  // KV cache per layer (kernels/kv_cache.h): b_host = kv_host_seqs[l] slots on the host tier (from
  // the placement), the rest in HBM; each layer's tiers are 256-byte aligned slices of one K and one
  // V allocation per tier.
  const auto L = size_t(c.num_layers);
  kv_host_seqs.assign(L, 0);
  if (options.placement) {
    // The plan's KV split applies to the batch and context it was made for, and to a smaller batch (the
    // last wave of dak generate --max-batch), which fills the plan's HBM sequences first: b_host =
    // max(0, b - (plan batch - plan b_host)), the plan's own b_host at the plan's batch.
    const Placement& pl = *options.placement;
    const bool any = std::any_of(pl.kv_host_seqs.begin(), pl.kv_host_seqs.end(), [](int64_t n) { return n > 0; });
    if (any && (b > pl.batch || ctx > pl.max_context)) {
      fail(fmt::format("the offload plan keeps KV cache in host memory for batch {} with {} positions per sequence, "
                       "this run has batch {} with {} positions",
                       pl.batch, pl.max_context, b, ctx),
           "GpuEngine::start", "make the plan for this batch and length (dak plan --batch ... --prompt-len ... --gen-len ...)");
    }
    if (any) {
      for (size_t l = 0; l < L && l < pl.kv_host_seqs.size(); ++l) {
        const int64_t hbm_seqs = std::max<int64_t>(0, pl.batch - pl.kv_host_seqs[l]);
        kv_host_seqs[l] = std::clamp<int64_t>(b - hbm_seqs, 0, b);
      }
    }
  }
  // Per layer, the aligned bytes of its K (and of its V) in each tier, and the totals (K + V).
  std::vector<uint64_t> kv_host_tier_bytes(L), kv_tier_bytes(L);
  uint64_t kv_host_bytes = 0, kv_bytes = 0;
  const uint64_t seq_bytes = uint64_t(ctx) * uint64_t(kvd) * sizeof(bf16);  // one sequence's K
  for (size_t l = 0; l < L; ++l) {
    kv_host_tier_bytes[l] = PinnedHostArena::aligned_size(uint64_t(kv_host_seqs[l]) * seq_bytes);
    kv_tier_bytes[l] = HbmArena::aligned_size(uint64_t(b - kv_host_seqs[l]) * seq_bytes);
    kv_host_bytes += 2 * kv_host_tier_bytes[l];
    kv_bytes += 2 * kv_tier_bytes[l];
  }
  // Decode steps use tiered_attention when no sliding window can bite (every key of [0, ctx) is
  // visible), the kernel has the head_dim and G <= 16; the schedule follows each layer's b_host.
  const bool tiered_attn = (c.sliding_window == 0 || c.sliding_window >= ctx) &&
                           tiered_attention::head_dim_supported(c.head_dim) && c.num_heads % c.num_kv_heads == 0 &&
                           c.num_heads / c.num_kv_heads <= tiered_attention::kMaxGroup;
  std::vector<TieredAttentionSchedule> scheds;
  uint64_t attn_ws_bytes = 0;
  if (tiered_attn) {
    const TieredAttentionShape shape{b, c.num_heads, c.num_kv_heads, c.head_dim, ctx};
    // DAK_ATTN_HBM_COPY and DAK_ATTN_COMBINE (A/B switches) are read by plan_tiered_attention.
    for (size_t l = 0; l < L; ++l) {
      const bool same = l > 0 && kv_host_seqs[l] == scheds.back().b_host;
      scheds.push_back(same ? scheds.back() : tiered_attention_schedule(shape, kv_host_seqs[l]));
      attn_ws_bytes = std::max(attn_ws_bytes, uint64_t(scheds.back().workspace_bytes()));
    }
  }
  const uint64_t bf = sizeof(bf16);
  const std::vector<uint64_t> sizes = {
      kv_bytes / 2,                                              // K: every layer's HBM tier
      kv_bytes / 2,                                              // V
      uint64_t(pass * hd) * sizeof(float),                       // resid
      uint64_t(pass * hd) * bf,                                  // normed
      w.project_in.out > 0 ? uint64_t(pass * E) * bf : 0,        // emb
      uint64_t(pass * (qd + 2 * kvd)) * bf,                      // qkv
      uint64_t(pass * qd) * bf,                                  // attn
      uint64_t(pass * hd) * bf,                                  // sub
      uint64_t(pass * gud) * bf,                                 // gu
      c.gated_mlp ? uint64_t(pass * c.intermediate_size) * bf : 0,  // act
      uint64_t(pass * hd) * bf,                                  // fin
      w.project_out.out > 0 ? uint64_t(pass * E) * bf : 0,       // fin_e
      uint64_t(pass * c.vocab_size) * sizeof(float),             // logits
      decode_workspace_bytes(b, c.num_heads, c.head_dim, sp),    // partial
      attn_ws_bytes,                                             // tiered attention workspace
      uint64_t(mlen) * sizeof(int32_t),                          // meta
      uint64_t(pass) * sizeof(int32_t),                          // sampled
      CublasLtGemm::kWorkspaceBytes,                             // cuBLASLt workspace
      tiered_workspace_bytes(pass),                              // tiered GEMM workspace
      staging_slot_bytes(),                                      // staging slot 0
      slots > 1 ? staging_slot_bytes() : 0,                      // staging slot 1
      slots > 2 ? staging_slot_bytes() : 0,                      // staging slot 2
      slots > 3 ? staging_slot_bytes() : 0,                      // staging slot 3
      fused_norm_possible() ? uint64_t(2 * (hd / 64) * kFusedNormMaxTokens) * sizeof(float) : 0,  // norm block sums
      gemm_trace_op() != StepOp::kCount ? kGemmTraceBytes : 0,   // GEMM trace
  };
  uint64_t total = 0;
  for (uint64_t s : sizes) total += HbmArena::aligned_size(s);
  require_free_hbm(total, fmt::format("the KV cache ({} for batch {} x context {}) plus activations and "
                                      "workspaces ({}), next to the resident bf16 weights ({}),",
                                      format_gib(kv_bytes), b, ctx, format_gib(total - kv_bytes), format_gib(w.bytes)));
  // The host tier first: a refused pin leaves nothing allocated.
  if (kv_host_bytes > 0) {
    kv_host = PinnedHostArena(kv_host_bytes, fmt::format("host KV cache (batch {}, context {})", b, ctx));
  }
  state = HbmArena(total, fmt::format("KV cache and activations (batch {}, context {})", b, ctx));
  size_t i = 0;
  auto take = [&](const char* what) { return state.allocate(sizes[i++], what); };
  auto* g_k = static_cast<uint8_t*>(take("k cache"));
  auto* g_v = static_cast<uint8_t*>(take("v cache"));
  kv_layers.assign(L, KvCacheLayer{});
  for (size_t l = 0; l < L; ++l) {
    KvCacheLayer& kv = kv_layers[l];
    kv.batch = int32_t(b);
    kv.b_host = int32_t(kv_host_seqs[l]);
    if (kv.b_host > 0) {
      kv.h_k = static_cast<bf16*>(kv_host.allocate(kv_host_tier_bytes[l], "host K"));
      kv.h_v = static_cast<bf16*>(kv_host.allocate(kv_host_tier_bytes[l], "host V"));
    }
    kv.num_kv_heads = int32_t(c.num_kv_heads);
    kv.head_dim = int32_t(c.head_dim);
    kv.max_ctx = ctx;
    kv.g_k = kv.b_host < kv.batch ? reinterpret_cast<bf16*>(g_k) : nullptr;
    kv.g_v = kv.b_host < kv.batch ? reinterpret_cast<bf16*>(g_v) : nullptr;
    g_k += kv_tier_bytes[l];
    g_v += kv_tier_bytes[l];
  }
  resid = static_cast<float*>(take("residual"));
  normed = static_cast<bf16*>(take("normed"));
  emb = static_cast<bf16*>(take("project_in input"));
  qkv = static_cast<bf16*>(take("qkv"));
  attn = static_cast<bf16*>(take("attention output"));
  sub = static_cast<bf16*>(take("sublayer output"));
  gu = static_cast<bf16*>(take("gate_up"));
  act = static_cast<bf16*>(take("mlp activation"));
  fin = static_cast<bf16*>(take("final rows"));
  fin_e = static_cast<bf16*>(take("project_out output"));
  logits = static_cast<float*>(take("logits"));
  partial = static_cast<float*>(take("decode attention workspace"));
  attn_ws = take("tiered attention workspace");
  g_meta = static_cast<int32_t*>(take("step metadata"));
  g_sampled = static_cast<int32_t*>(take("sampled ids"));
  void* ws = take("cuBLASLt workspace");
  gemm = std::make_unique<CublasLtGemm>(ws, CublasLtGemm::kWorkspaceBytes);
  tiered_ws = take("tiered GEMM workspace");
  const size_t ws_index = i - 1;
  staging[0] = static_cast<bf16*>(take("staging slot 0"));
  staging[1] = static_cast<bf16*>(take("staging slot 1"));
  staging[2] = static_cast<bf16*>(take("staging slot 2"));
  staging[3] = static_cast<bf16*>(take("staging slot 3"));
  // A 0-byte slot is a valid, empty slice (HbmArena::allocate), never null: an unused one is
  // dropped here so that the null checks mean "off".
  norm_sumsq[0] = static_cast<float*>(take("fused norm block sums"));
  if (!fused_norm_possible()) norm_sumsq[0] = nullptr;
  norm_sumsq[1] = norm_sumsq[0] ? norm_sumsq[0] + (hd / 64) * kFusedNormMaxTokens : nullptr;
  gemm_trace = static_cast<uint64_t*>(take("GEMM trace"));
  if (gemm_trace_op() == StepOp::kCount) gemm_trace = nullptr;
  if (gemm_trace) DAK_CUDA_CHECK(cudaMemsetAsync(gemm_trace, 0, kGemmTraceBytes, stream));
  DAK_CUDA_CHECK(cudaMemsetAsync(tiered_ws, 0, sizes[ws_index], stream));
  DAK_CUDA_CHECK(cudaMallocHost(&h_meta, size_t(mlen) * sizeof(int32_t)));
  DAK_CUDA_CHECK(cudaMallocHost(&h_sampled, size_t(pass) * sizeof(int32_t)));

  meta_ids = 0;
  meta_pos = pass;
  meta_slot = 2 * pass;
  meta_seg_slot = 3 * pass;
  meta_seg_pos0 = meta_seg_slot + b;
  meta_seg_len = meta_seg_pos0 + b;
  meta_seg_row0 = meta_seg_len + b;
  meta_kv_len = meta_seg_row0 + b;
  meta_sel = meta_kv_len + b;
  meta_counter = meta_sel + pass;
  meta_len = mlen;

  batch = b;
  max_ctx = ctx;
  tc = pass;
  split = sp;
  tiered_decode = tiered_attn;
  attn_schedules = std::move(scheds);
  pos.assign(size_t(b), 0);
}

// ------------------------------------------------------------------------------ passes

std::vector<Pass> GpuEngine::Impl::plan_passes(std::span<const std::vector<int32_t>> tokens, bool all_logits) const {
  const ModelConfig& c = w.config;
  if (batch == 0) fail("step() before start()", "GpuEngine::step", "call start(batch, max_context) first");
  if (int64_t(tokens.size()) != batch) {
    fail(fmt::format("step() got {} sequences, the cache holds {}", tokens.size(), batch), "GpuEngine::step",
         "pass one (possibly empty) token list per sequence");
  }
  for (int64_t b = 0; b < batch; ++b) {
    const auto& ids = tokens[size_t(b)];
    if (pos[size_t(b)] + int64_t(ids.size()) > max_ctx) {
      fail(fmt::format("sequence {} would reach {} tokens ({} cached + {} new), beyond the context of {} given "
                       "to start()",
                       b, pos[size_t(b)] + int64_t(ids.size()), pos[size_t(b)], ids.size(), max_ctx),
           "GpuEngine::step", "start() with a larger max_context, or generate fewer tokens");
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= c.vocab_size) {
        fail(fmt::format("token id {} (sequence {}, index {}) is outside the vocabulary of {}", ids[i], b, i,
                         c.vocab_size),
             "GpuEngine::step", "tokenize with the tokenizer that belongs to this model");
      }
    }
  }
  std::vector<Pass> passes;
  int64_t global_row = 0;
  Pass cur;
  auto flush = [&] {
    if (cur.ids.empty()) return;
    passes.push_back(std::move(cur));
    cur = Pass{};
  };
  for (int64_t b = 0; b < batch; ++b) {
    const auto& ids = tokens[size_t(b)];
    const int64_t n = int64_t(ids.size());
    int64_t done = 0;
    while (done < n) {
      if (cur.T() == tc) flush();
      const int64_t take = std::min(n - done, tc - cur.T());
      const int32_t row0 = int32_t(cur.T());
      cur.pieces.push_back({int32_t(b), int32_t(pos[size_t(b)] + done), int32_t(take), row0});
      cur.max_len = std::max(cur.max_len, int32_t(take));
      for (int64_t i = 0; i < take; ++i) {
        const int32_t row = int32_t(cur.T());
        cur.ids.push_back(ids[size_t(done + i)]);
        cur.pos.push_back(int32_t(pos[size_t(b)] + done + i));
        cur.slot.push_back(int32_t(b));
        if (all_logits) {
          cur.sel.push_back(row);
          cur.out_rows.push_back(global_row);
        } else if (done + i == n - 1) {
          cur.sel.push_back(row);
          cur.out_rows.push_back(b);
        }
        ++global_row;
      }
      done += take;
    }
  }
  flush();
  return passes;
}

void GpuEngine::Impl::upload_meta(const Pass& p) {
  // The previous pass's copy from h_meta may still be in flight (a pass without logits rows
  // does not synchronize): wait before overwriting the pinned buffer.
  DAK_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::fill_n(h_meta, meta_len, 0);
  std::copy(p.ids.begin(), p.ids.end(), h_meta + meta_ids);
  std::copy(p.pos.begin(), p.pos.end(), h_meta + meta_pos);
  std::copy(p.slot.begin(), p.slot.end(), h_meta + meta_slot);
  for (size_t s = 0; s < p.pieces.size(); ++s) {
    h_meta[meta_seg_slot + int64_t(s)] = p.pieces[s].slot;
    h_meta[meta_seg_pos0 + int64_t(s)] = p.pieces[s].pos0;
    h_meta[meta_seg_len + int64_t(s)] = p.pieces[s].len;
    h_meta[meta_seg_row0 + int64_t(s)] = p.pieces[s].row0;
    // Keys of the slot once the piece is appended (decode: pos0 + 1); slots without a piece keep 0.
    h_meta[meta_kv_len + p.pieces[s].slot] = p.pieces[s].pos0 + p.pieces[s].len;
  }
  std::copy(p.sel.begin(), p.sel.end(), h_meta + meta_sel);
  // RNG counter of a sampled row: the position the sampled token will take.
  for (size_t r = 0; r < p.sel.size(); ++r) h_meta[meta_counter + int64_t(r)] = p.pos[size_t(p.sel[r])] + 1;
  DAK_CUDA_CHECK(cudaMemcpyAsync(g_meta, h_meta, size_t(meta_len) * sizeof(int32_t), cudaMemcpyHostToDevice, stream));
}

// ------------------------------------------------------------------------------ forward

void GpuEngine::Impl::forward(const PassDims& d, cudaStream_t s) {
  const ModelConfig& c = w.config;
  const int64_t T = d.T, hd = c.hidden_size, E = c.embed_dim(), qd = c.q_dim(), kvd = c.kv_dim();
  const int64_t qkvd = qd + 2 * kvd, I = c.intermediate_size;
  const bool pre_ln = c.arch != Arch::kOpt || c.do_layer_norm_before;
  const NormType norm_type = c.norm == NormKind::kRmsNorm ? NormType::kRms : NormType::kLayer;
  const int32_t* ids = g_meta + meta_ids;
  const int32_t* positions = g_meta + meta_pos;
  const int32_t* slots = g_meta + meta_slot;
  const AttentionSegments segs{g_meta + meta_seg_slot, g_meta + meta_seg_pos0, g_meta + meta_seg_len,
                               g_meta + meta_seg_row0, int32_t(d.S)};
  // A full decode step: one token of every slot, row b = slot b (pieces are in slot order), as
  // tiered_attention reads q and writes out; the lengths come from device memory (graph replay).
  // Zero-copy keeps the ordinary flash-decoding kernel (it reads the host tier in place).
  const bool tiered_step = tiered_decode && d.max_len == 1 && d.T == batch && d.S == batch &&
                           options.offload_mode != OffloadMode::kZeroCopy;
  auto norm = [&](const bf16* x, const GpuNorm& n, NormResidual mode) {
    residual_norm(NormParams{x, resid, n.w, n.b, normed, T, hd, c.norm_eps, norm_type, mode}, s);
  };
  auto linear = [&](const bf16* x, const GpuLinear& l, bf16* y, StepOp op, bool relu = false,
                    const TieredGemmNormOut* norm_out = nullptr, const TieredGemmNormIn* norm_in = nullptr,
                    const TieredGemmRopeOut* rope = nullptr, const TieredGemmActOut* act = nullptr) {
    return this->linear(x, l, y, T, relu, false, s, op, norm_out, norm_in, rope, act);
  };
  // Fused norms (short passes of pre-LN RMSNorm models, fused_norm): o_proj and each layer's down
  // but the last end in the norm-out epilogue (residual add, x~ = bf16(resid * weight) into
  // `normed`, block sums of resid^2), gate_up and the next layer's qkv start with the norm-in
  // epilogue (scale by 1 / rms); only layer 0's attention norm and the final norm launch the norm
  // kernel. o_proj and down alternate the two block-sum buffers.
  const bool fuse = fused_norm(T);
  // A producer linear of a fused pass: the norm-out epilogue, or (host rows not a multiple of 64)
  // the plain GEMM into `sub` and rms_norm_out, which writes the same bits.
  auto produce = [&](const bf16* x, const GpuLinear& lin, StepOp op, const GpuNorm& next, int buf) {
    const TieredGemmNormOut out{resid, next.w, normed, norm_sumsq[buf]};
    if (norm_out_fusable(lin, T)) {
      linear(x, lin, nullptr, op, false, &out);
      return;
    }
    linear(x, lin, sub, op);
    mark(StepOp::kNorm, s);
    rms_norm_out(NormOutParams{sub, resid, next.w, normed, norm_sumsq[buf], T, hd}, s);
  };
  const TieredGemmNormIn norm_in[2] = {{norm_sumsq[0], c.norm_eps}, {norm_sumsq[1], c.norm_eps}};

  // Embedding (+ OPT project_in and learned positions) into the fp32 residual stream; post-LN
  // models also need its bf16 copy as the first layer's input.
  const bool prefetch = !staged_order.empty();
  if (prefetch) {  // fork the copy stream off `s` (also inside a graph capture) and stage the first linear
    staged_next = 0;
    DAK_CUDA_CHECK(cudaEventRecord(ev_fork, s));
    DAK_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, ev_fork, 0));
    issue_staging_copy(0);
  }
  mark(StepOp::kEmbedding, s);
  EmbeddingParams ep;
  ep.T = T;
  ep.g_positions = positions;
  ep.pos_offset = int32_t(c.position_offset);
  ep.num_pos = c.max_position_embeddings + c.position_offset;
  ep.g_out_f32 = resid;
  ep.g_out_bf16 = pre_ln ? nullptr : normed;
  ep.E = hd;
  ep.g_pos_table = w.positions.g;
  ep.h_pos_table = w.positions.h;
  ep.pos_host_rows = w.positions.host_rows;
  if (w.project_in.out > 0) {
    EmbeddingParams tok;
    tok.g_table = w.embed.g;
    tok.h_table = w.embed.h;
    tok.table_host_rows = w.embed.host_rows;
    tok.g_ids = ids;
    tok.num_rows = c.vocab_size;
    tok.g_out_bf16 = emb;
    tok.T = T;
    tok.E = E;
    embedding_gather(tok, s);
    linear(emb, w.project_in, sub, StepOp::kEmbedding);
    ep.g_add = sub;
  } else {
    ep.g_table = w.embed.g;
    ep.h_table = w.embed.h;
    ep.table_host_rows = w.embed.host_rows;
    ep.g_ids = ids;
    ep.num_rows = c.vocab_size;
  }
  embedding_gather(ep, s);

  const float scale = float(1.0 / std::sqrt(double(c.head_dim)));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const GpuLayer& L = w.layers[size_t(l)];
    const bool fused_in = fuse && l > 0;  // the previous layer's down ran the norm-out epilogue
    if (pre_ln && !fused_in) {
      mark(StepOp::kNorm, s);
      norm(l == 0 ? nullptr : sub, L.attn_norm, NormResidual::kPreNorm);
    }
    const KvCacheLayer& kvl = kv_layers[size_t(l)];
    const KvAppendParams kv{qkv, qkvd, qd, qd + kvd, slots, positions, kvl, T};
    // With DAK_ATTN_FUSE_ROPE=1 a tiered decode step folds the append into the attention kernel
    // (same bits; off by default, see attention_fuse_rope()), RoPE too where q / k keep the natural
    // row order (the attention rotates pairs (i, i + D/2)).
    const bool fused_append = tiered_step && attention_fuse_rope() &&
                              (!w.inv_freq || (!w.rope_paired_rows && tiered_attention_rope_fusable(c.head_dim)));
    const bool skip_rope = d.max_len == 1 && diag_skip("rope");
    // RoPE and the append in qkv's epilogue where it runs on the 64-row tiles (paired rows only).
    TieredGemmRopeOut rope_out;
    const bool offer_rope = w.inv_freq && w.rope_paired_rows && !fused_append && !skip_rope && rope_epilogue_enabled();
    if (offer_rope) {
      rope_out = TieredGemmRopeOut{positions, w.inv_freq, w.rope_attention_factor, int32_t(c.num_heads),
                                   slots, positions, kvl};
    }
    mark(StepOp::kQkvProj, s);
    const bool rope_done = linear(normed, L.qkv, qkv, StepOp::kQkvProj, false, nullptr,
                                  fused_in ? &norm_in[1] : nullptr, offer_rope ? &rope_out : nullptr);
    if (rope_done || fused_append || skip_rope) {
      // nothing here (no launch, so no profiled interval): qkv's epilogue did it, or
      // tiered_attention below writes row len - 1
    } else if (w.inv_freq) {  // one launch: RoPE on q and k, rotated k and v into the cache
      mark(StepOp::kRopeKvAppend, s);
      RopeParams rp{qkv, qkvd, 0, qd, positions, w.inv_freq, T, int32_t(c.num_heads),
                    int32_t(c.num_kv_heads), int32_t(c.head_dim), w.rope_attention_factor};
      rp.paired_rows = w.rope_paired_rows;
      apply_rope_kv_append(rp, kv, s);
    } else {
      mark(StepOp::kRopeKvAppend, s);
      kv_append(kv, s);
    }
    AttentionParams ap;
    ap.g_q = qkv;
    ap.q_stride = qkvd;
    ap.kv = kvl;
    ap.g_out = attn;
    ap.segs = segs;
    ap.num_heads = int32_t(c.num_heads);
    ap.num_kv_heads = int32_t(c.num_kv_heads);
    ap.head_dim = int32_t(c.head_dim);
    ap.window = int32_t(c.sliding_window);
    ap.scale = scale;
    mark(StepOp::kAttention, s);
    if (d.max_len == 1 && diag_skip("attn")) {
      // diagnostic: no attention kernel
    } else if (tiered_step && (diag_skip("attn_body") || diag_skip("attn_smem"))) {
      // diagnostic: one empty kernel in place of the attention (diag_skip), so the kernel
      // boundary's own cost shows (attn_body against attn); attn_smem gives its CTAs the
      // attention's SMEM, so they hold the SMs the attention holds (attn_smem against attn_body)
      const TieredAttentionSchedule& as = attn_schedules[size_t(l)];
      launch_empty_dependent(std::max<int64_t>(int64_t(as.host_ctas) + as.hbm_ctas, 1), s,
                             diag_skip("attn_smem") ? as.smem_bytes() : 0);
    } else if (tiered_step) {
      TieredAttentionArgs ta{qkv, qkvd, kvl.h_k, kvl.h_v, kvl.g_k, kvl.g_v, g_meta + meta_kv_len, attn, scale};
      if (fused_append) {
        ta.g_new = qkv;
        ta.new_stride = qkvd;
        ta.new_k_offset = qd;
        ta.new_v_offset = qd + kvd;
        ta.g_inv_freq = w.inv_freq;
        ta.rope_attention_factor = w.rope_attention_factor;
      }
      tiered_attention(ta, attn_schedules[size_t(l)], attn_ws, s);
    } else if (d.max_len == 1) {
      attention_decode(DecodeAttentionParams{ap, split, partial}, s);
    } else {
      attention_prefill(ap, d.max_len, s);
    }
    mark(StepOp::kOProj, s);
    if (fuse) {
      produce(attn, L.o, StepOp::kOProj, L.mlp_norm, 0);
    } else {
      linear(attn, L.o, sub, StepOp::kOProj);
      mark(StepOp::kNorm, s);
      norm(sub, pre_ln ? L.mlp_norm : L.attn_norm, pre_ln ? NormResidual::kPreNorm : NormResidual::kPostNorm);
    }
    const bool relu_epilogue = !c.gated_mlp && c.activation == Activation::kRelu;
    mark(StepOp::kMlpUp, s);
    // The gated activation in gate_up's epilogue where it runs on the 64-row tiles (paired rows only).
    const bool skip_act = d.max_len == 1 && diag_skip("act");
    const TieredGemmActOut act_out{act, I, c.activation};
    const bool offer_act = c.gated_mlp && w.gate_up_paired_rows && !skip_act && act_epilogue_enabled();
    const bool act_done = linear(normed, L.gate_up, gu, StepOp::kMlpUp, relu_epilogue, nullptr,
                                 fuse ? &norm_in[0] : nullptr, nullptr, offer_act ? &act_out : nullptr);
    const bf16* down_in = gu;
    if (c.gated_mlp) {
      if (!act_done && !skip_act) {  // no launch (no profiled interval) when gate_up's epilogue did it
        mark(StepOp::kActivation, s);
        ActivationParams ap{gu, nullptr, act, T, I, c.activation, true};
        ap.paired = w.gate_up_paired_rows;
        mlp_activation(ap, s);
      }
      down_in = act;
    } else if (!relu_epilogue) {
      mark(StepOp::kActivation, s);
      mlp_activation(ActivationParams{gu, nullptr, gu, T, I, c.activation, false}, s);
    }
    mark(StepOp::kMlpDown, s);
    if (fuse && l + 1 < c.num_layers) {
      produce(down_in, L.down, StepOp::kMlpDown, w.layers[size_t(l + 1)].attn_norm, 1);
    } else {
      linear(down_in, L.down, sub, StepOp::kMlpDown);
    }
    if (!pre_ln) {
      mark(StepOp::kNorm, s);
      norm(sub, L.mlp_norm, NormResidual::kPostNorm);
    }
  }
  // Final norm (pre-LN: folds in the last MLP output). Post-LN OPT has none: `normed` already
  // holds the last layer's normalized output.
  if (w.has_final_norm) {
    mark(StepOp::kNorm, s);
    norm(sub, w.final_norm, NormResidual::kPreNorm);
  }

  mark(StepOp::kLogits, s);
  const bf16* head_in = normed;
  if (!d.all_rows) {
    EmbeddingParams g;
    g.g_table = normed;
    g.g_ids = g_meta + meta_sel;
    g.num_rows = T;
    g.g_out_bf16 = fin;
    g.T = d.R;
    g.E = hd;
    embedding_gather(g, s);
    head_in = fin;
  }
  if (w.project_out.out > 0) {
    this->linear(head_in, w.project_out, fin_e, d.R, false, false, s);
    head_in = fin_e;
  }
  this->linear(head_in, w.lm_head, logits, d.R, false, true, s);
  if (prefetch) {  // join: every copy is done before the pass ends
    if (staged_next != staged_order.size()) {
      fail(fmt::format("the forward pass read {} of {} staged linears", staged_next, staged_order.size()),
           "GpuEngine (prefetch)", "report this as a dak bug");
    }
    DAK_CUDA_CHECK(cudaEventRecord(ev_join, copy_stream));
    DAK_CUDA_CHECK(cudaStreamWaitEvent(s, ev_join, 0));
  }
}

std::vector<std::pair<int64_t, int64_t>> GpuEngine::Impl::linear_shapes() const {
  std::vector<std::pair<int64_t, int64_t>> v;
  auto add = [&](const GpuLinear& l) {
    if (l.out > 0) v.emplace_back(l.out, l.in);
  };
  add(w.project_in);
  add(w.project_out);
  if (!w.layers.empty()) {
    const GpuLayer& l = w.layers.front();
    add(l.qkv);
    add(l.o);
    add(l.gate_up);
    add(l.down);
  }
  add(w.lm_head);
  return v;
}

bool GpuEngine::Impl::use_tiered(int64_t N, int64_t K) const {
  if (K % 8 != 0) return false;  // TMA row pitch; cuBLASLt serves such (tiny) models
  // With an offload placement every linear runs on the tiered GEMM, whose bits do not depend on
  // the host rows: the logits are the same at every offload ratio.
  if (options.placement && options.offload_mode != OffloadMode::kZeroCopy) return true;
  switch (options.gemm) {
    case GemmBackend::kCublas: return false;
    case GemmBackend::kTiered: return true;
    case GemmBackend::kAuto: return N <= kAutoTieredMaxTokens;
  }
  return false;
}

uint64_t GpuEngine::Impl::tiered_workspace_bytes(int64_t pass) const {
  // The workspace depends on (M, N, K): take the largest over every token count a pass can have.
  int64_t most = TieredGemmSchedule::counter_bytes();
  for (const auto& [M, K] : linear_shapes()) {
    if (K % 8 == 0) most = std::max(most, tiered_gemm_workspace_bound(M, K, pass, sm_count, gemm_limits.compute_bn));
  }
  // DAK_GEMM_GRID's k-splits on the 64-row tiles (decode passes): the partials of each operator it
  // names, on that operator's shape (as linear() caps them: at most the shape's k-blocks).
  if (gemm_grid_max_splits() > 0 && !w.layers.empty()) {
    for (const auto& [op, l] : layer_gemms(w.layers.front())) {
      const int32_t splits = gemm_grid_overrides()[size_t(op)].k_splits;
      const int64_t M = l->out, K = l->in;
      for (int64_t n = 1; splits > 0 && M > 0 && K % 8 == 0 && n <= std::min<int64_t>(pass, kFusedNormMaxTokens); ++n) {
        TieredGemmSchedule g = plan_tiered_gemm(M, n, K, 0, sm_count, gemm_limits);
        if (g.tile.bm != 64) continue;
        g.k_splits = int32_t(std::min<int64_t>(splits, g.k_blocks()));
        g.k_chunks = 1;
        most = std::max(most, g.workspace_bytes());
      }
    }
  }
  return uint64_t(most);
}

void GpuEngine::Impl::issue_staging_copy(size_t k) {
  const GpuLinear& l = *staged_order[k];
  const size_t slot = k % size_t(slots);
  if (k >= size_t(slots)) DAK_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, ev_consumed[slot], 0));
  DAK_CUDA_CHECK(cudaMemcpyAsync(staging[slot], l.h_w, size_t(l.m_host * l.in) * sizeof(bf16), cudaMemcpyHostToDevice,
                                 copy_stream));
  DAK_CUDA_CHECK(cudaEventRecord(ev_copied[slot], copy_stream));
}

bool GpuEngine::Impl::fused_norm_possible() const {
  static const bool off = env_flag("DAK_NO_FUSED_NORM", false);
  const ModelConfig& c = w.config;
  const bool pre_ln = c.arch != Arch::kOpt || c.do_layer_norm_before;
  return !off && pre_ln && c.norm == NormKind::kRmsNorm && c.hidden_size % 64 == 0 &&
         options.offload_mode != OffloadMode::kZeroCopy;
}

bool GpuEngine::Impl::fused_norm(int64_t T) const {
  if (!fused_norm_possible() || T > kFusedNormMaxTokens || !norm_sumsq[0]) return false;
  for (const GpuLayer& L : w.layers) {
    if (!on_64_row_tiles(L.qkv, T) || !on_64_row_tiles(L.gate_up, T)) return false;
  }
  return true;
}

bool GpuEngine::Impl::norm_out_fusable(const GpuLinear& l, int64_t T) const {
  static const bool kernel = env_flag("DAK_NORM_OUT_KERNEL", false);
  return !kernel && on_64_row_tiles(l, T) && l.m_host % 64 == 0 && l.out % 64 == 0;
}

bool GpuEngine::Impl::runs_tiered(const GpuLinear& l, int64_t N) const {
  if (options.offload_mode == OffloadMode::kZeroCopy) return false;
  if (l.m_host > 0) return true;
  if (!options.placement && !l.staged) {  // DAK_GEMM_CUBLASLT (A/B runs)
    if (!cublaslt_linears) {
      cublaslt_linears.emplace();
      const auto& forced = cublaslt_ops();
      for (const GpuLayer& L : w.layers) {
        for (const auto& [op, lin] : layer_gemms(L)) {
          if (forced[size_t(op)]) cublaslt_linears->insert(lin);
        }
      }
    }
    if (cublaslt_linears->count(&l) > 0) return false;
  }
  return use_tiered(N, l.in);
}

bool GpuEngine::Impl::on_64_row_tiles(const GpuLinear& l, int64_t N) const {
  return runs_tiered(l, N) && choose_tiered_gemm_tile(l.out, N, l.in, sm_count, gemm_limits.compute_bn).bm == 64;
}

bool GpuEngine::Impl::linear(const bf16* x, const GpuLinear& l, void* y, int64_t N, bool relu, bool f32_out,
                             cudaStream_t s, StepOp op, const TieredGemmNormOut* norm_out,
                             const TieredGemmNormIn* norm_in, const TieredGemmRopeOut* rope,
                             const TieredGemmActOut* act) {
  const int64_t M = l.out, K = l.in;
  const bool staged = staged_next < staged_order.size() && staged_order[staged_next] == &l;
  if (runs_tiered(l, N)) {  // host rows only where K % 8 == 0 (checked at load)
    const auto key = std::make_tuple(M, N, K, l.m_host);
    auto it = tiered_plans.find(key);
    if (it == tiered_plans.end()) {
      // Staged rows sit in HBM: plan their CTAs like HBM ones (no link congestion cap, and no
      // multicast: L2 serves every n-tile, and clusters sharing HBM tiles measured 5 % slower).
      TieredGemmLinkLimits limits = gemm_limits;
      if (staged) {
        limits.inflight_cap_bytes = int64_t(1) << 40;
        limits.min_inflight_bytes = 0;
        limits.max_cluster = 1;
      }
      it = tiered_plans.emplace(key, plan_tiered_gemm(M, N, K, l.m_host, sm_count, limits)).first;
    }
    size_t slot = 0;
    if (staged) {  // `staged` means l is staged_order[staged_next]; forward() checks that all were reached
      const size_t k = staged_next++;
      if (k + 1 < staged_order.size()) issue_staging_copy(k + 1);  // overlaps this GEMM
      slot = k % size_t(slots);
      DAK_CUDA_CHECK(cudaStreamWaitEvent(s, ev_copied[slot], 0));
    }
    TieredGemmArgs a;
    a.g_x = x;
    a.h_w = staged ? staging[slot] : l.h_w;
    a.host_rows_staged = staged;
    a.g_w = l.w;
    a.g_bias = l.b;
    a.g_y = y;
    a.out = f32_out ? TieredGemmOut::kF32 : TieredGemmOut::kBf16;
    a.relu = relu;
    a.early_w_stages = early_w_stages(op);
    if (norm_out) a.norm_out = *norm_out;
    if (norm_in) {
      a.norm_in = *norm_in;
      // Its predecessor is a GEMM (o_proj, or the previous layer's down), not a small kernel whose
      // loads would queue behind W: request the whole ring early. Measured on the H200 (Llama-2-7B
      // decode, session 24 call 3): batch 1 3.695 / 3.683 -> 3.666 ms, batch 8 unchanged.
      if (a.early_w_stages < 0) a.early_w_stages = 64;  // capped by the ring in the kernel
    }
    // The pair epilogues (RoPE, activation) need the 64-row tiles and no row pair split by m_host.
    const bool pair_epilogue = it->second.tile.bm == 64 && l.m_host % 16 == 0;
    const bool rope_here = rope && pair_epilogue, act_here = act && pair_epilogue;
    if (rope_here) a.rope = *rope;
    if (act_here) a.act_out = *act;
    const TieredGemmSchedule* sched = &it->second;
    TieredGemmSchedule forced;  // DAK_GEMM_GRID (A/B measurements): all-HBM decode launches only
    if (const GemmGrid g = op < StepOp::kCount ? gemm_grid_overrides()[size_t(op)] : GemmGrid{};
        g.k_splits > 0 && decode_pass) {
      if (l.m_host == 0 && !staged && sched->tile.bm == 64) {
        forced = *sched;
        forced.k_splits = int32_t(std::min<int64_t>(g.k_splits, forced.k_blocks()));
        forced.k_chunks = 1;
        forced.hbm_ctas = int32_t(std::min({int64_t(g.hbm_ctas), sm_count, forced.hbm_units()}));
        sched = &forced;
      } else if (static std::array<bool, size_t(StepOp::kCount)> told{}; !told[size_t(op)]) {
        told[size_t(op)] = true;
        std::fprintf(stderr,
                     "dak: notice: DAK_GEMM_GRID for %s skipped where a decode launch has host or staged rows, or "
                     "runs the 128-row tiles (the plan's schedule runs there)\n",
                     step_op_name(op));
      }
    }
    // DAK_GEMM_TRACE: decode steps only, so that the records (and gemm_trace_ctas, set when the
    // launch is enqueued: eagerly or once, at the graph's capture) are the last decode layer's.
    const int64_t grid = int64_t(sched->host_ctas) + sched->hbm_ctas;
    if (gemm_trace && decode_pass && op == gemm_trace_op() && grid <= kGemmTraceCtas) {
      a.g_trace = gemm_trace;
      gemm_trace_ctas = grid;
    }
    tiered_gemm(a, *sched, tiered_ws, s);
    if (staged) DAK_CUDA_CHECK(cudaEventRecord(ev_consumed[slot], s));
    return rope_here || act_here;
  }
  if (norm_out || norm_in) {
    fail("a fused-norm linear reached cuBLASLt", "GpuEngine::linear", "report this as a bug (fused_norm() decides)");
  }
  // cuBLASLt; zero-copy: one GEMM per tier, the host rows read in place through their mapped
  // pointer (y columns [0, m_host)), the HBM rows into columns [m_host, M).
  const size_t out_bytes = f32_out ? sizeof(float) : sizeof(bf16);
  auto run = [&](const bf16* w_, int64_t row0, int64_t rows) {
    GemmArgs g;
    g.g_x = x;
    g.g_w = w_;
    g.g_bias = l.b ? l.b + row0 : nullptr;
    g.g_y = static_cast<char*>(y) + size_t(row0) * out_bytes;
    g.ldy = M;
    g.N = N;
    g.M = rows;
    g.K = K;
    g.relu = relu;
    g.out = f32_out ? GemmOut::kF32 : GemmOut::kBf16;
    gemm->run(g, s);
  };
  if (l.m_host > 0) run(l.h_w, 0, l.m_host);
  if (l.m_host < M) run(l.w, l.m_host, M - l.m_host);
  return false;
}

void GpuEngine::Impl::run_pass(const Pass& p, bool eager) {
  PassDims d;
  d.T = p.T();
  d.S = int64_t(p.pieces.size());
  d.R = int64_t(p.sel.size());
  d.max_len = p.max_len;
  d.all_rows = p.all_rows();
  upload_meta(p);
  // The decode step: every sequence appends one token, rows are the batch in order.
  const bool decode_step = d.T == batch && d.S == batch && d.max_len == 1 && d.all_rows;
  decode_pass = decode_step;  // DAK_GEMM_TRACE traces decode steps only
  if (!decode_step) {
    forward(d, stream);
    return;
  }
  if (!decode_warm || eager) {
    if (profiling) {  // hold the GPU until the whole step is enqueued (opened in sample_step)
      host_gate(HostGateParams{g_gate, const_cast<int32_t*>(g_gate) + 1}, stream);
    }
    // Eager once: creates every cuBLASLt plan outside of a capture, tuned on this step's operands
    // where the options ask (CublasLtGemm::set_tuning) and the step is not profiled (its GPU work is
    // held back until the whole step is enqueued).
    gemm->set_tuning(!profiling && cublaslt_tuning_enabled(options.tune_cublaslt));
    try {
      forward(d, stream);
    } catch (...) {
      gemm->set_tuning(false);
      throw;
    }
    gemm->set_tuning(false);
    decode_warm = true;
    return;
  }
  if (!graph) {
    cudaGraph_t g = nullptr;
    DAK_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      forward(d, stream);
    } catch (...) {
      cudaStreamEndCapture(stream, &g);
      if (g) cudaGraphDestroy(g);
      cudaGetLastError();
      throw;
    }
    DAK_CUDA_CHECK(cudaStreamEndCapture(stream, &g));
    const cudaError_t err = cudaGraphInstantiate(&graph, g, 0);
    cudaGraphDestroy(g);
    DAK_CUDA_CHECK(err);
  }
  DAK_CUDA_CHECK(cudaGraphLaunch(graph, stream));
  ++replays;
}

// ------------------------------------------------------------------------------ GpuEngine

void GpuEngine::Impl::init(int device_index, const std::function<GpuWeights()>& load_weights) {
  std::string why;
  const auto info = probe_device(device_index, &why);
  if (!info) fail("cannot run on the GPU: " + why, fmt::format("cuda:{}", device_index), "use --device cpu");
  require_hopper(*info);
  device = device_index;
  name = fmt::format("cuda:{} ({})", device_index, info->name);
  sm_count = info->sm_count;
  use_device();
  gemm_limits = tiered_gemm_cluster_limits();  // asks the driver once, outside any graph capture
  // DAK_GEMM_COMPUTE_BN=128|256 forces one compute tile at every N > 64 (A/B of the tile choice).
  switch (env_choice("DAK_GEMM_COMPUTE_BN", {"128", "256"})) {
    case 0: gemm_limits.compute_bn = 128; break;
    case 1: gemm_limits.compute_bn = 256; break;
    default: break;
  }
  w = load_weights();
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // The staged linears (prefetch mode: every one with host rows; direct: those the plan stages), in
  // the order forward() runs them in one pass; the copy stream and its events only when there are any.
  const auto is_staged = [&](const GpuLinear& l) {
    return l.out > 0 && l.m_host > 0 && (options.offload_mode == OffloadMode::kPrefetch ||
                                         (options.offload_mode == OffloadMode::kDirect && l.staged));
  };
  std::vector<const GpuLinear*> order = {&w.project_in};
  for (const GpuLayer& L : w.layers) {
    for (const GpuLinear* l : {&L.qkv, &L.o, &L.gate_up, &L.down}) order.push_back(l);
  }
  order.push_back(&w.project_out);
  order.push_back(&w.lm_head);
  for (const GpuLinear* l : order) {
    if (is_staged(*l)) staged_order.push_back(l);
  }
  if (!staged_order.empty()) {
    // DAK_STAGING_SLOTS=2..4: the ring's slot count (an A/B switch; the plan counts kStagingRingSlots).
    const int forced_slots = env_choice("DAK_STAGING_SLOTS", {"2", "3", "4"});
    slots = forced_slots < 0 ? kStagingRingSlots : forced_slots + 2;
    DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking));
    for (cudaEvent_t* e : {&ev_fork, &ev_join}) DAK_CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    for (int i = 0; i < slots; ++i) {
      DAK_CUDA_CHECK(cudaEventCreateWithFlags(&ev_copied[i], cudaEventDisableTiming));
      DAK_CUDA_CHECK(cudaEventCreateWithFlags(&ev_consumed[i], cudaEventDisableTiming));
    }
  }
  DAK_CUDA_CHECK(cudaEventCreate(&ev_step_begin));
  DAK_CUDA_CHECK(cudaEventCreate(&ev_step_end));
}

GpuEngine::GpuEngine(const Checkpoint& ckpt, int device_index, const GpuEngineOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->init(device_index, [&] {
    ckpt.config().validate(ckpt.path().string());
    return GpuWeights::load(ckpt, options.placement ? &*options.placement : nullptr, options.load_progress);
  });
}

GpuEngine::GpuEngine(const ModelConfig& config, uint64_t weight_seed, const std::string& where, int device_index,
                     const GpuEngineOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->init(device_index, [&] {
    config.validate(where);
    return GpuWeights::random(config, weight_seed, where, options.placement ? &*options.placement : nullptr);
  });
}

GpuEngine::~GpuEngine() {
  if (impl_) cudaSetDevice(impl_->device);
}

const ModelConfig& GpuEngine::config() const { return impl_->w.config; }

std::string GpuEngine::device_name() const { return impl_->name; }

void GpuEngine::start(int64_t batch, int64_t max_context) { impl_->start(batch, max_context); }

void GpuEngine::reset(int64_t b) {
  check_sequence_index(b, impl_->batch, "GpuEngine::reset");
  impl_->pos[size_t(b)] = 0;
}

int64_t GpuEngine::position(int64_t b) const {
  check_sequence_index(b, impl_->batch, "GpuEngine::position");
  return impl_->pos[size_t(b)];
}

std::vector<float> GpuEngine::step(std::span<const std::vector<int32_t>> tokens, bool all_logits) {
  Impl& m = *impl_;
  m.use_device();
  const std::vector<Pass> passes = m.plan_passes(tokens, all_logits);
  const int64_t V = m.w.config.vocab_size;
  int64_t out_rows = m.batch;
  if (all_logits) {
    out_rows = 0;
    for (const auto& t : tokens) out_rows += int64_t(t.size());
  }
  std::vector<float> result(size_t(out_rows * V), 0.0f);
  std::vector<float> rows;
  m.step_timed = false;
  DAK_CUDA_CHECK(cudaEventRecord(m.ev_step_begin, m.stream));
  for (const Pass& p : passes) {
    m.run_pass(p);
    const size_t n = p.sel.size() * size_t(V);
    if (n == 0) continue;
    if (all_logits) {  // the pass's rows are consecutive in the result
      DAK_CUDA_CHECK(cudaMemcpyAsync(result.data() + p.out_rows[0] * V, m.logits, n * sizeof(float),
                                     cudaMemcpyDeviceToHost, m.stream));
    } else {
      rows.resize(n);
      DAK_CUDA_CHECK(cudaMemcpyAsync(rows.data(), m.logits, n * sizeof(float), cudaMemcpyDeviceToHost, m.stream));
    }
    DAK_CUDA_CHECK(cudaStreamSynchronize(m.stream));
    if (!all_logits) {
      for (size_t r = 0; r < p.sel.size(); ++r) {
        std::copy_n(rows.data() + r * size_t(V), size_t(V), result.data() + p.out_rows[r] * V);
      }
    }
  }
  DAK_CUDA_CHECK(cudaEventRecord(m.ev_step_end, m.stream));
  DAK_CUDA_CHECK(cudaEventSynchronize(m.ev_step_end));
  m.step_timed = true;
  for (int64_t b = 0; b < m.batch; ++b) m.pos[size_t(b)] += int64_t(tokens[size_t(b)].size());
  return result;
}

std::vector<int32_t> GpuEngine::Impl::sample_step(std::span<const std::vector<int32_t>> tokens,
                                                  const SamplingParams& sampling, bool eager) {
  use_device();
  SampleParams sp;
  sp.g_logits = logits;
  sp.row_stride = w.config.vocab_size;
  sp.g_out_ids = g_sampled;
  sp.g_counters = g_meta + meta_counter;
  sp.V = w.config.vocab_size;
  sp.temperature = sampling.temperature;
  sp.top_k = sampling.top_k;
  sp.top_p = sampling.top_p;
  sp.seed = sampling.seed;
  sample_tokens(sp, nullptr);  // validates the parameters; B == 0 launches nothing
  const std::vector<Pass> passes = plan_passes(tokens, false);
  std::vector<int32_t> result(size_t(batch), 0);
  step_timed = false;
  DAK_CUDA_CHECK(cudaEventRecord(ev_step_begin, stream));
  for (const Pass& p : passes) {
    run_pass(p, eager);
    if (p.sel.empty()) continue;
    mark(StepOp::kSampling, stream);
    sp.B = int64_t(p.sel.size());
    sample_tokens(sp, stream);
    DAK_CUDA_CHECK(cudaMemcpyAsync(h_sampled, g_sampled, p.sel.size() * sizeof(int32_t), cudaMemcpyDeviceToHost,
                                   stream));
    if (&p == &passes.back()) {
      mark(StepOp::kCount, stream);  // end of the last profiled interval
      DAK_CUDA_CHECK(cudaEventRecord(ev_step_end, stream));
    }
    if (profiling) *reinterpret_cast<volatile int32_t*>(h_gate) = 1;  // open the gate
    DAK_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (size_t r = 0; r < p.sel.size(); ++r) result[size_t(p.out_rows[r])] = h_sampled[r];
  }
  if (!passes.empty() && !passes.back().sel.empty()) step_timed = true;
  for (int64_t b = 0; b < batch; ++b) pos[size_t(b)] += int64_t(tokens[size_t(b)].size());
  return result;
}

std::vector<int32_t> GpuEngine::step_and_sample(std::span<const std::vector<int32_t>> tokens,
                                                const SamplingParams& sampling) {
  return impl_->sample_step(tokens, sampling, false);
}

StepProfile GpuEngine::profile_decode_step(std::span<const std::vector<int32_t>> tokens,
                                           const SamplingParams& sampling, std::vector<int32_t>* ids) {
  Impl& m = *impl_;
  bool decode = int64_t(tokens.size()) == m.batch && m.batch > 0;
  for (const auto& t : tokens) decode = decode && t.size() == 1;
  if (!decode) {
    fail("profile_decode_step needs exactly one token for every sequence of the batch", "GpuEngine::profile_decode_step",
         "profile a decode step, after the prefill");
  }
  m.use_device();
  if (!m.h_gate) {
    void* g = nullptr;
    DAK_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&m.h_gate), 2 * sizeof(int32_t), cudaHostAllocMapped));
    DAK_CUDA_CHECK(cudaHostGetDevicePointer(&g, m.h_gate, 0));
    m.g_gate = static_cast<const int32_t*>(g);
  }
  m.h_gate[0] = 0;
  m.h_gate[1] = 0;
  m.op_kinds.clear();
  m.profiling = true;
  std::vector<int32_t> out;
  try {
    out = m.sample_step(tokens, sampling, /*eager=*/true);
  } catch (...) {
    m.h_gate[0] = 1;  // never leave a gate closed behind an error
    cudaStreamSynchronize(m.stream);
    m.profiling = false;
    throw;
  }
  m.profiling = false;
  StepProfile prof;
  prof.gated = m.h_gate[1] == 0;
  prof.ops.resize(size_t(StepOp::kCount));
  for (size_t k = 0; k < prof.ops.size(); ++k) prof.ops[k].op = StepOp(k);
  for (size_t i = 0; i + 1 < m.op_kinds.size(); ++i) {
    float ms = 0;
    DAK_CUDA_CHECK(cudaEventElapsedTime(&ms, m.op_events[i], m.op_events[i + 1]));
    StepOpTime& t = prof.ops[size_t(m.op_kinds[i])];
    t.time_s += double(ms) * 1e-3;
    ++t.launches;
  }
  if (ids) *ids = std::move(out);
  return prof;
}

double GpuEngine::last_step_gpu_s() const {
  if (!impl_->step_timed) return 0;
  float ms = 0;
  DAK_CUDA_CHECK(cudaEventElapsedTime(&ms, impl_->ev_step_begin, impl_->ev_step_end));
  return double(ms) * 1e-3;
}

uint64_t GpuEngine::weight_bytes() const { return impl_->w.bytes; }
uint64_t GpuEngine::host_weight_bytes() const { return impl_->w.host_bytes; }
uint64_t GpuEngine::host_kv_bytes() const { return impl_->kv_host.capacity(); }
uint64_t GpuEngine::state_bytes() const { return impl_->state.capacity(); }
int64_t GpuEngine::max_pass_tokens() const { return impl_->tc; }
int64_t GpuEngine::graph_replays() const { return impl_->replays; }

GemmTrace GpuEngine::gemm_trace() const {
  const Impl& m = *impl_;
  GemmTrace r;
  if (m.gemm_trace == nullptr || m.gemm_trace_ctas == 0) return r;
  r.op = step_op_name(gemm_trace_op());
  DAK_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  std::vector<uint64_t> t(size_t(m.gemm_trace_ctas) * kGemmTraceFields);
  DAK_CUDA_CHECK(cudaMemcpy(t.data(), m.gemm_trace, t.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  // The records (TieredGemmTraceField): the first gemm_trace_ctas are the last traced launch's (an
  // earlier launch with a larger grid may have left more behind them). A field older than its
  // record's entry (a CTA with no unit writes no first stage) counts as unset.
  for (int64_t c = 0; c < m.gemm_trace_ctas; ++c) {
    const uint64_t* f = t.data() + size_t(c) * kGemmTraceFields;
    const uint64_t entry = f[kGemmTraceEntry];
    if (entry == 0) continue;
    auto field = [&](TieredGemmTraceField i) { return f[i] >= entry ? f[i] : uint64_t(0); };
    r.ctas.push_back({entry, field(kGemmTraceDependency), field(kGemmTraceFirstFull),
                      std::max(field(kGemmTraceDone0), field(kGemmTraceDone1))});
  }
  return r;
}

std::unique_ptr<dak::Engine> make_gpu_engine(const Checkpoint& ckpt, int device_index) {
  return std::make_unique<GpuEngine>(ckpt, device_index);
}

const char* step_op_name(StepOp op) {
  switch (op) {
    case StepOp::kEmbedding: return "embedding";
    case StepOp::kNorm: return "norm";
    case StepOp::kQkvProj: return "qkv_proj";
    case StepOp::kRopeKvAppend: return "rope_kv_append";
    case StepOp::kAttention: return "attention";
    case StepOp::kOProj: return "o_proj";
    case StepOp::kMlpUp: return "mlp_up";
    case StepOp::kActivation: return "activation";
    case StepOp::kMlpDown: return "mlp_down";
    case StepOp::kLogits: return "logits";
    case StepOp::kSampling: return "sampling";
    case StepOp::kCount: break;
  }
  return "?";
}

}  // namespace dak::gpu
