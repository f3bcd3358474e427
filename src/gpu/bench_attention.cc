#include "gpu/bench_attention.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/error.h"
#include "core/host_memory.h"
#include "gpu/bench_util.h"
#include "gpu/cuda_check.h"
#include "gpu/hbm_arena.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/attention_decode.h"
#include "gpu/kernels/hbm_stream.h"
#include "gpu/kernels/random_fill.h"
#include "gpu/kernels/tiered_attention.h"

namespace dak::gpu {
namespace {

using bf16 = __nv_bfloat16;
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kFlushBytes = 256ull << 20;     // HBM read before each timed launch (> 4 x L2)
constexpr uint64_t kCellReserveBytes = 2 * kGiB;   // free HBM kept for a cell's q, out and workspaces
constexpr uint64_t kHostProbeBytes = 1 * kGiB;     // B_h stream buffer (a prefix of the host tier)
constexpr uint64_t kHostMarginBytes = 16 * kGiB;   // MemAvailable left to the system by default
constexpr int kSumSlots = 1;                       // checksum slot of the L2-flush stream

/// Bytes of HBM (or host) the K and V of `cell` take with attention_bench_kv_pad_rows() (its kv_bytes without).
uint64_t kv_alloc_bytes(const AttentionBenchCell& c) {
  return c.kv_bytes / uint64_t(c.context) * uint64_t(c.context + attention_bench_kv_pad_rows());
}

/// Everything the timed launches share: stream, gate and the L2 flush.
struct Timer {
  cudaStream_t stream = nullptr;
  HostGate gate;
  void* g_flush = nullptr;  // [kFlushBytes] HBM
  unsigned long long* g_sink = nullptr;
  int flush_grid = 0;
  bool gate_timed_out = false;

  /// `launch` enqueues one operator; timed `repeats` times after one warm-up, each after a flush,
  /// all queued behind the gate so that they run back to back. One more launch runs first, outside
  /// the gate and synchronized: the first launch of a kernel loads its module (CUDA lazy loading),
  /// which can wait for the device while the gate holds it (the full sweep of session 7 reported a
  /// gate timeout).
  Spread time(const std::function<void(cudaStream_t)>& launch, int repeats) {
    launch(stream);
    DAK_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<EventPair> ev(size_t(repeats + 1));
    const bool on_time = gate.run_gated(stream, [&] {
      for (EventPair& e : ev) {
        hbm_stream(HbmStreamParams{g_flush, kFlushBytes, 32u << 10, 4, g_sink}, flush_grid, stream);
        DAK_CUDA_CHECK(cudaEventRecord(e.begin, stream));
        launch(stream);
        DAK_CUDA_CHECK(cudaEventRecord(e.end, stream));
      }
    });
    gate_timed_out = gate_timed_out || !on_time;
    std::vector<double> t;
    for (size_t i = 1; i < ev.size(); ++i) t.push_back(ev[i].seconds());
    return spread_of(t);
  }
};

std::string gib(uint64_t b) { return fmt::format("{:.2f} GiB", double(b) / double(kGiB)); }

void check_options(const AttentionBenchOptions& o) {
  const std::string where = "dak bench attention";
  if (o.repeats < 5) fail(fmt::format("{} repeats", o.repeats), where, "pass --repeats 5 or more");
  if (o.models.empty() || o.batches.empty() || o.contexts.empty() || o.ratios.empty()) {
    fail("nothing to measure: a model, batch, context or ratio list is empty", where, "give at least one of each");
  }
  for (double r : o.ratios) {
    if (!(r >= 0 && r <= 1)) fail(fmt::format("offload ratio {}", r), where, "ratios are b_host / B in [0, 1]");
  }
  for (int64_t b : o.batches) {
    if (b < 1) fail(fmt::format("batch {}", b), where, "batches must be positive");
  }
  for (int64_t c : o.contexts) {
    if (c < 1) fail(fmt::format("context {}", c), where, "contexts must be positive");
  }
  for (const AttentionBenchShape& m : o.models) {
    check_tiered_attention_shape({1, m.num_heads, m.num_kv_heads, m.head_dim, 1});
  }
  if (o.hbm_runs < 1 || o.hbm_buffer_bytes < 16) {
    fail("the B_g measurement needs a buffer and at least one run", where, "use e.g. --hbm-buffer-gib 2 --hbm-runs 10");
  }
}

/// The b_host values of a cell: the ratios' (rounded), plus the balance point when it is new.
std::vector<AttentionBenchPoint> cell_points(const AttentionBenchOptions& o, int64_t batch, double balance_ratio) {
  std::vector<AttentionBenchPoint> pts;
  auto add = [&](int64_t b, bool balance) {
    for (const AttentionBenchPoint& p : pts) {
      if (p.b_host == b) return;
    }
    AttentionBenchPoint p;
    p.b_host = b;
    p.ratio = double(b) / double(batch);
    p.balance_point = balance;
    pts.push_back(p);
  };
  for (double r : o.ratios) add(std::llround(r * double(batch)), false);
  if (o.balance_point) {
    const int64_t b = std::llround(balance_ratio * double(batch));
    if (b > 0) add(b, true);
  }
  std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.b_host < b.b_host; });
  return pts;
}

/// Where the cell's KV lives: K and V of all B sequences in HBM, the host tier's prefix on the host.
struct KvBuffers {
  bf16* g_k = nullptr;  // [>= B * Hkv * ctx * D] HBM
  bf16* g_v = nullptr;
  bf16* h_k = nullptr;  // [host_elems] pinned host
  bf16* h_v = nullptr;
  uint64_t host_bytes_each = 0;  // bytes of h_k (and of h_v)
};

void run_cell(AttentionBenchCell& cell, const AttentionBenchOptions& o, const AttentionBenchResult& r,
              const KvBuffers& kv, Timer& timer) {
  const AttentionBenchShape& m = cell.shape;
  const int64_t B = cell.batch, ctx = cell.context, H = m.num_heads, Hkv = m.num_kv_heads, D = m.head_dim;
  const int64_t rows = ctx + attention_bench_kv_pad_rows();  // positions of a (sequence, kv head) block: the caches' max_ctx
  const TieredAttentionShape sh{B, H, Hkv, D, rows};
  const int64_t per_seq = Hkv * rows * D;  // elements of one sequence's K (or V)
  const double C = double(cell.kv_bytes), Bg = r.hbm.best_bytes_per_s, Bh = r.host.best_bytes_per_s;

  const int layers = cell.layers;
  const TieredAttentionSchedule s0 = tiered_attention_schedule(sh, 0, o.limits);
  cell.split = fmt::format("{}x{}", s0.split.num_splits, s0.split.split_keys);
  DecodeSplit dsplit = choose_decode_split(B, H, Hkv, rows, r.sm_count);
  cell.baseline_split = fmt::format("{}x{}", dsplit.num_splits, dsplit.split_keys);

  // Per-cell buffers: q, out, lengths, decode segments and both workspaces.
  const uint64_t q_elems = uint64_t(B * H * D);
  const std::vector<uint64_t> sizes = {q_elems * 2, q_elems * 2, uint64_t(B) * 4 * 5,
                                       decode_workspace_bytes(B, H, D, dsplit), uint64_t(s0.workspace_bytes())};
  uint64_t total = 0;
  for (uint64_t b : sizes) total += HbmArena::aligned_size(b);
  HbmArena arena(total, "dak bench attention per-cell buffers");
  auto* g_q = arena.allocate_array<bf16>(q_elems, "q");
  auto* g_out = arena.allocate_array<bf16>(q_elems, "out");
  auto* g_meta = arena.allocate_array<int32_t>(uint64_t(B) * 5, "lengths and segments");
  auto* g_dpart = arena.allocate_array<float>(sizes[3] / 4, "decode workspace");
  void* g_ws = arena.allocate(sizes[4], "tiered attention workspace");
  random_fill_bf16(RandomFillParams{g_q, int64_t(q_elems), 7, 0, 0.0f, 1.0f}, timer.stream);
  std::vector<int32_t> meta(size_t(B) * 5);
  for (int64_t b = 0; b < B; ++b) {
    meta[size_t(b)] = int32_t(ctx);                // tiered: keys per sequence
    meta[size_t(B + b)] = int32_t(b);              // decode: slot
    meta[size_t(2 * B + b)] = int32_t(ctx - 1);    // decode: position of the query
    meta[size_t(3 * B + b)] = 1;                   // decode: one query
    meta[size_t(4 * B + b)] = int32_t(b);          // decode: output row
  }
  DAK_CUDA_CHECK(cudaMemcpyAsync(g_meta, meta.data(), meta.size() * 4, cudaMemcpyHostToDevice, timer.stream));
  DAK_CUDA_CHECK(cudaStreamSynchronize(timer.stream));

  // One launch, and for stacked cells the per-layer time of a graph of `layers` launches, layer l
  // reading its own K / V (`one(l, stream)` enqueues layer l).
  auto measure = [&](const std::function<void(int, cudaStream_t)>& one, Spread& launch_s) {
    launch_s = timer.time([&](cudaStream_t st) { one(0, st); }, o.repeats);
    if (layers == 1) return launch_s;
    const Graph graph(timer.stream, [&] {
      for (int l = 0; l < layers; ++l) one(l, timer.stream);
    });
    Spread t = timer.time([&](cudaStream_t st) { graph.launch(st); }, o.repeats);
    t.median /= layers;
    t.min /= layers;
    t.max /= layers;
    return t;
  };

  // Baseline: the engine's decode attention over the same bytes, all B sequences in the HBM tier.
  DecodeAttentionParams dp;
  dp.attn.g_q = g_q;
  dp.attn.q_stride = H * D;
  dp.attn.kv = KvCacheLayer{nullptr, nullptr, kv.g_k, kv.g_v, int32_t(B), 0, int32_t(Hkv), int32_t(D), rows};
  dp.attn.g_out = g_out;
  dp.attn.segs = {g_meta + B, g_meta + 2 * B, g_meta + 3 * B, g_meta + 4 * B, int32_t(B)};
  dp.attn.num_heads = int32_t(H);
  dp.attn.num_kv_heads = int32_t(Hkv);
  dp.attn.head_dim = int32_t(D);
  dp.attn.scale = float(1.0 / std::sqrt(double(D)));
  dp.split = dsplit;
  dp.g_partial = g_dpart;
  cell.baseline_s = measure(
      [&](int l, cudaStream_t st) {
        DecodeAttentionParams pl = dp;
        pl.attn.kv.g_k = kv.g_k + int64_t(l) * B * per_seq;
        pl.attn.kv.g_v = kv.g_v + int64_t(l) * B * per_seq;
        attention_decode(pl, st);
      },
      cell.baseline_launch_s);
  cell.baseline_eb_bytes_per_s = C / cell.baseline_s.median;

  for (AttentionBenchPoint& p : cell.points) {
    const uint64_t host_each = uint64_t(layers) * uint64_t(p.b_host * per_seq) * 2;
    if (host_each > kv.host_bytes_each) {
      p.skipped = true;
      p.skip_reason = fmt::format("host tier {}{} > pinned {}", gib(2 * host_each),
                                  layers > 1 ? fmt::format(" ({} layers)", layers) : "", gib(2 * kv.host_bytes_each));
      continue;
    }
    // The plan for this GPU's occupancy, with the overrides.
    const TieredAttentionSchedule s =
        plan_attention_bench_point(sh, p.b_host, r.sm_count, o.limits, o.host_ctas, o.host_stages, o.hbm_stages,
                                   [](const TieredAttentionSchedule& t) { return tiered_attention_ctas_per_sm(t); });
    p.schedule = s.to_string();
    TieredAttentionArgs a;
    a.g_q = g_q;
    a.q_stride = H * D;
    a.h_k = p.b_host > 0 ? kv.h_k : nullptr;
    a.h_v = p.b_host > 0 ? kv.h_v : nullptr;
    a.g_k = p.b_host < B ? kv.g_k + p.b_host * per_seq : nullptr;
    a.g_v = p.b_host < B ? kv.g_v + p.b_host * per_seq : nullptr;
    a.g_len = g_meta;
    a.g_out = g_out;
    a.scale = float(1.0 / std::sqrt(double(D)));
    p.time_s = measure(
        [&](int l, cudaStream_t st) {
          TieredAttentionArgs al = a;
          const int64_t host_off = int64_t(l) * p.b_host * per_seq, hbm_off = int64_t(l) * B * per_seq;
          if (al.h_k) {
            al.h_k += host_off;
            al.h_v += host_off;
          }
          if (al.g_k) {
            al.g_k += hbm_off;
            al.g_v += hbm_off;
          }
          tiered_attention(al, s, g_ws, st);
        },
        p.launch_s);
#ifdef DAK_ATT_TRACE
    // Diagnostic builds: the last launch's warps, host and HBM sides apart (which side ends last).
    att_trace_report(fmt::format("{} B={} ctx={} b_h={}", m.model, B, ctx, p.b_host).c_str(), s.host_ctas);
#endif
    p.eb_bytes_per_s = C / p.time_s.median;
    p.ideal_s = std::max((1.0 - p.ratio) * C / Bg, p.ratio * C / Bh);
    p.of_ideal = p.ideal_s / p.time_s.median;
    p.target_met = p.of_ideal >= kAttentionTargetOfIdeal;
    if (p.b_host == 0) {
      cell.baseline_target_met =
          p.time_s.median <= cell.baseline_s.median || p.time_s.min <= cell.baseline_s.max;
    }
  }
}

}  // namespace

AttentionBenchResult run_attention_bench(const AttentionBenchOptions& o,
                                         const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& msg) {
    if (progress) progress(msg);
  };
  check_options(o);
  AttentionBenchResult r;
  int device = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  DAK_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  r.device = prop.name;
  r.sm_count = prop.multiProcessorCount;

  for (const AttentionBenchShape& m : o.models) {
    for (int64_t b : o.batches) {
      for (int64_t c : o.contexts) {
        AttentionBenchCell cell;
        cell.shape = m;
        cell.batch = b;
        cell.context = c;
        cell.kv_bytes = 4 * uint64_t(b) * uint64_t(c) * uint64_t(m.num_kv_heads) * uint64_t(m.head_dim);
        cell.layers = attention_bench_layers(cell.kv_bytes);
        if (cell.kv_bytes > o.max_kv_bytes) {
          cell.skipped = true;
          cell.skip_reason = fmt::format("KV of the layer {} > {} (--max-kv-gib)", gib(cell.kv_bytes), gib(o.max_kv_bytes));
        }
        r.cells.push_back(cell);
      }
    }
  }

  if (attention_bench_kv_pad_rows() > 0) {
    say(fmt::format("every K / V block holds context + {} positions (DAK_BENCH_KV_PAD_ROWS)", attention_bench_kv_pad_rows()));
  }
  say(fmt::format("measuring B_g (TMA bulk stream of {} in HBM)", gib(o.hbm_buffer_bytes)));
  r.hbm = measure_hbm_bandwidth(o.hbm_buffer_bytes, o.hbm_runs);

  // HBM: the largest cell that fits decides the KV buffer.
  size_t free_b = 0, total_b = 0;
  DAK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const uint64_t reserve = kFlushBytes + kCellReserveBytes + 4 * HbmArena::kAlignment + kSumSlots * 8;
  const uint64_t kv_cap = free_b > reserve ? uint64_t(free_b) - reserve : 0;
  uint64_t hbm_kv = 0, host_need = 0;
  const double max_ratio = *std::max_element(o.ratios.begin(), o.ratios.end());
  for (AttentionBenchCell& c : r.cells) {
    if (c.skipped) continue;
    if (kv_alloc_bytes(c) * uint64_t(c.layers) > kv_cap) {
      c.skipped = true;
      c.skip_reason = fmt::format("KV of the layer{} {} does not fit in free HBM ({})",
                                  c.layers > 1 ? fmt::format(" x {} stacked layers", c.layers) : "",
                                  gib(c.kv_bytes), gib(kv_cap));
      continue;
    }
    hbm_kv = std::max(hbm_kv, kv_alloc_bytes(c) * uint64_t(c.layers));
    const int64_t b_max = std::llround(max_ratio * double(c.batch));
    host_need = std::max(host_need, kv_alloc_bytes(c) / uint64_t(c.batch) * uint64_t(b_max) * uint64_t(c.layers));
  }
  if (hbm_kv == 0) {
    fail("no cell of the sweep fits (every one is skipped: see --max-kv-gib and the free HBM)", "dak bench attention",
         "use smaller --batch / --ctx values");
  }

  // Host: the host tier of the largest point, bounded by what the machine can pin.
  uint64_t host_limit = o.max_host_bytes;
  if (host_limit == 0) {
    const std::optional<uint64_t> avail = mem_available_bytes();
    host_limit = avail && *avail > kHostMarginBytes ? *avail - kHostMarginBytes : 4 * kGiB;
  }
  const uint64_t host_each =
      std::min(host_limit, std::max(host_need, 2 * kHostProbeBytes)) / 2 / HbmArena::kAlignment * HbmArena::kAlignment;
  say(fmt::format("pinning {} of host memory for the host tier", gib(2 * host_each)));
  PinnedHostArena host(2 * host_each, "the host KV tier of dak bench attention");
  r.host_tier_bytes = 2 * host_each;
  r.pin_s = host.pin_seconds();
  KvBuffers kv;
  kv.host_bytes_each = host_each;
  kv.h_k = host.allocate_array<bf16>(host_each / 2, "host K");
  kv.h_v = host.allocate_array<bf16>(host_each / 2, "host V");

  const uint64_t kv_each = (hbm_kv / 2 + 15) / 16 * 16;
  HbmArena hbm(2 * HbmArena::aligned_size(kv_each) + HbmArena::aligned_size(kFlushBytes) +
                   HbmArena::aligned_size(kSumSlots * 8),
               "dak bench attention KV and L2 flush buffers");
  kv.g_k = hbm.allocate_array<bf16>(kv_each / 2, "K");
  kv.g_v = hbm.allocate_array<bf16>(kv_each / 2, "V");
  Timer timer;
  timer.g_flush = hbm.allocate(kFlushBytes, "L2 flush");
  timer.g_sink = hbm.allocate_array<unsigned long long>(kSumSlots, "stream checksums");
  timer.flush_grid = std::max(1, hbm_stream_ctas_per_sm(32u << 10, 4)) * r.sm_count;
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&timer.stream, cudaStreamNonBlocking));
  try {
    // B_h first: the measurement writes its own pattern into the start of the host tier.
    const uint64_t probe = std::min(kHostProbeBytes, host_each) / 16 * 16;
    say(fmt::format("measuring B_h (TMA bulk stream of {} of pinned host memory)", gib(probe)));
    r.host = measure_host_read_bandwidth(kv.h_k, probe, o.repeats);
    say(fmt::format("filling {} of KV in HBM and {} on the host", gib(2 * kv_each), gib(2 * host_each)));
    random_fill_bf16(RandomFillParams{kv.g_k, int64_t(kv_each / 2), 11, 0, 0.0f, 1.0f}, timer.stream);
    random_fill_bf16(RandomFillParams{kv.g_v, int64_t(kv_each / 2), 11, 1, 0.0f, 1.0f}, timer.stream);
    DAK_CUDA_CHECK(cudaMemsetAsync(timer.g_flush, 0, kFlushBytes, timer.stream));
    const uint64_t copy = std::min(host_each, kv_each);
    DAK_CUDA_CHECK(cudaMemcpyAsync(kv.h_k, kv.g_k, copy, cudaMemcpyDeviceToHost, timer.stream));
    DAK_CUDA_CHECK(cudaMemcpyAsync(kv.h_v, kv.g_v, copy, cudaMemcpyDeviceToHost, timer.stream));
    DAK_CUDA_CHECK(cudaStreamSynchronize(timer.stream));

    r.balance_ratio = r.host.best_bytes_per_s / (r.hbm.best_bytes_per_s + r.host.best_bytes_per_s);

    for (AttentionBenchCell& c : r.cells) {
      if (c.skipped) continue;
      c.points = cell_points(o, c.batch, r.balance_ratio);
      say(fmt::format("{} batch {} context {} (KV {}, {} offload ratios)", c.shape.model, c.batch, c.context,
                      gib(c.kv_bytes), c.points.size()));
      run_cell(c, o, r, kv, timer);
    }
  } catch (...) {
    cudaStreamSynchronize(timer.stream);
    cudaStreamDestroy(timer.stream);
    throw;
  }
  DAK_CUDA_CHECK(cudaStreamDestroy(timer.stream));
  r.gate_timed_out = timer.gate_timed_out;
  return r;
}

}  // namespace dak::gpu
