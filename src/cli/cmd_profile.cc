// `dak profile`: measures this GPU and its host link, sweeps the tiered GEMM's launch parameters,
// and writes a hardware profile (core/hardware_profile.h, format v1) that `dak plan --profile FILE`
// reads. The measurements are gpu/profile.h's; docs/profile.md explains each one.
//
//   dak profile --output profiles/my-h200.json [--force] [--name NAME] [--gemm-model llama-2-7b]
//               [--gemm-tokens 8,512] [--gemm-ratios 0,0.1,0.5,1] [--quick] [--skip-gemm]
//               [--pin-test-gib 4] [--runs 5]
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/config_locator.h"
#include "core/error.h"
#include "core/hardware_profile.h"
#include "core/op_graph.h"
#include "core/profile_fit.h"
#include "core/text_file.h"
#ifdef DAK_HAVE_CUDA
#include "gpu/profile.h"
#endif

namespace dak::cli {
namespace {

struct ProfileArgs {
  std::string output;
  bool force = false;
  std::string name;
  std::string gemm_models = "llama-2-7b";
  std::string gemm_tokens = "8,512";
  std::string gemm_ratios = "0,0.1,0.5,1";
  bool quick = false;
  bool skip_gemm = false;
  double pin_test_gib = 0;  // 0: 4 GiB, 1 GiB with --quick
  int runs = 0;             // 0: 5, 3 with --quick
  std::vector<CLI::Option*> sweep_opts;  // --gemm-model / --gemm-tokens / --gemm-ratios (ignored with --skip-gemm)
};

constexpr const char* kFooter = R"(What is measured (medians of --runs timed runs after a warm-up; GB/s = 1e9 B/s; docs/profile.md):
  B_g          best HBM read: TMA bulk stream over a 4 GiB buffer, all SMs
  B_h SM       pinned host memory read by SMs with TMA, 1..8 CTAs x 1..4 stages of 32 KiB; the best point;
               the 1 CTA x 1 stage point gives the stage latency
  B_h CE       cudaMemcpyAsync host-to-device from pinned memory (copy engine)
  shared link  copy engine and 8 SM readers at once: the link's total
  slowdown     HBM read bandwidth lost while an H2D copy runs
  contention   HBM read of 100 CTAs while 0..32 CTAs read the host with 2 or 4 stages; gives the
               congestion cap (host bytes in flight GPU-wide before HBM loses more than 3 %)
  tensor       cuBLASLt bf16 GEMM rate at M = K = 8192 by N
  overhead     per-kernel fixed cost inside a CUDA graph: fit t = a + S / B over HBM streams of S bytes
  zero copy    the ordinary kernels reading pinned host memory in place (--offload zero-copy): cuBLASLt
               GEMMs by N, K and host rows, and the decode attention kernel; stored in "zero_copy"
  pin          time to map and cudaHostRegister --pin-test-gib; pinnable_bytes records that tested size
  tiered GEMM  per linear shape of --gemm-model, N in --gemm-tokens and host share in --gemm-ratios: the
               fastest host CTAs x host stages (HBM CTAs = the other SMs); stored in "tiered_gemm"
The table prints each value next to the compiled-in h200-default profile and the ratio.
Needs a Hopper GPU: without one dak profile fails with the reason and exit code 1. It never
overwrites --output unless --force is given, and writes no other file.)";

/// --gemm-tokens: "8,512" -> {8, 512}. Throws dak::UsageError for an item that is not a whole number,
/// dak::Error for one outside [1, 8192].
std::vector<int64_t> parse_tokens(const std::string& s) {
  std::vector<int64_t> out;
  for (const std::string& tok : split_list(s)) {
    if (!is_integer_text(tok)) {
      fail_usage(fmt::format("'{}' is not a comma-separated list of token counts in [1, 8192]: {}", s, bad_item(tok)),
                 "--gemm-tokens", "write e.g. 8,512");
    }
    const std::optional<int64_t> v = parse_integer(tok);  // nullopt: beyond int64
    if (!v || *v < 1 || *v > 8192) {
      fail(fmt::format("--gemm-tokens value {} is outside [1, 8192]", tok), "--gemm-tokens", "write e.g. 8,512");
    }
    out.push_back(*v);
  }
  return out;
}

/// --gemm-ratios: "0,0.5" -> {0, 0.5}. Throws dak::UsageError for an item that is not a number,
/// dak::Error for one outside [0, 1].
std::vector<double> parse_ratios(const std::string& s) {
  std::vector<double> out;
  for (const std::string& tok : split_list(s)) {
    const std::optional<double> v = parse_number(tok);
    if (!v) {
      fail_usage(fmt::format("'{}' is not a comma-separated list of offload ratios in [0, 1]: {}", s, bad_item(tok)),
                 "--gemm-ratios", "write e.g. 0,0.1,0.5,1");
    }
    if (!(*v >= 0 && *v <= 1)) {
      fail(fmt::format("--gemm-ratios value {} is outside [0, 1]", tok), "--gemm-ratios", "write e.g. 0,0.1,0.5,1");
    }
    out.push_back(*v);
  }
  return out;
}

/// One linear shape per distinct (M, K) among the decoder-layer linears of the configs.
struct NamedShape {
  int64_t M = 0, K = 0;
  std::string label;
};

std::vector<NamedShape> linear_shapes(const std::string& models) {
  std::vector<NamedShape> out;
  for (const std::string& name : parse_name_list(models, "--gemm-model")) {
    const LocatedConfig lc = locate_model_config(name, "--gemm-model");
    const OpGraph g = build_op_graph(lc.config, StepShape{});
    for (const Op& op : g.ops) {
      if (op.kind != OpKind::kLinear || op.layer != 0) continue;
      if (op.k % 8 != 0) {
        fail(fmt::format("{} of {} has K = {}, not a multiple of 8 (the tiered GEMM's TMA row pitch)", op.role,
                         lc.name, op.k),
             "--gemm-model", "profile other models, or pass --skip-gemm");
      }
      const bool seen = std::any_of(out.begin(), out.end(), [&](const NamedShape& s) { return s.M == op.m && s.K == op.k; });
      if (!seen) out.push_back({op.m, op.k, lc.name + " " + op.role});
    }
  }
  return out;
}

[[maybe_unused]] std::string today_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}

/// Refuses to replace an existing file without --force, a symbolic link (even a dangling one, and
/// with --force: writing through it would create or replace its target, another file than --output
/// names), and a folder that does not exist.
void check_output(const std::string& path, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail(fmt::format("'{}' is a folder", path), "--output", "give a file name");
  // /dev/null, a terminal or a pipe (with a reader): written as it is (write_new_text_file), as the
  // bench reports' sinks are (trial of session 51).
  if (is_stream_sink(path)) {
    check_sink_has_reader(path, "--output");
    return;
  }
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    fail(fmt::format("'{}' is a symbolic link (to '{}'); dak profile does not write through links", path,
                     fs::read_symlink(path, ec).string()),
         "--output", "give a new file name, or the path of the link's target itself");
  }
  if (fs::exists(path, ec) && !force) {
    fail(fmt::format("'{}' exists; dak profile does not overwrite it", path), "--output",
         fmt::format("pass --force to replace it, or choose another file, e.g. {}", free_name_beside(path, ".json")));
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && fs::exists(parent, ec) && !fs::is_directory(parent, ec)) {
    fail(fmt::format("'{}' of '{}' is a file, not a folder", parent.string(), path), "--output",
         "give a path inside a folder");
  }
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    fail(fmt::format("folder '{}' of '{}' does not exist", parent.string(), path), "--output",
         "create the folder first, or write elsewhere");
  }
  // Checked before the measurement, not when the profile is written minutes later: an existing file
  // (--force) must be writable, a new one needs a folder we may write and search.
  const fs::path folder = parent.empty() ? fs::path(".") : parent;
  const bool exists = fs::exists(path, ec);
  if (exists ? ::access(path.c_str(), W_OK) != 0 : ::access(folder.c_str(), W_OK | X_OK) != 0) {
    fail(exists ? fmt::format("cannot write '{}': the file is not writable", path)
                : fmt::format("cannot create '{}': '{}' is not a writable folder", path, folder.string()),
         "--output", "write somewhere you may create files, or make the file or folder writable");
  }
}

std::string ratio_text(double measured, double reference) {
  return reference > 0 ? fmt::format("{:.3f}", measured / reference) : "-";
}

/// The human table: each profile quantity measured here next to the compiled-in default.
[[maybe_unused]] std::string profile_table(const HardwareProfile& p, const HardwareProfile& d, const ProfileMeasurements& m) {
  std::ostringstream o;
  const double gib = double(1ull << 30);
  o << fmt::format("dak profile: {}\n\n", p.device);
  o << fmt::format("| quantity | unit | measured | {} | ratio |\n|---|---|---:|---:|---:|\n", d.name);
  auto row = [&](const std::string& q, const std::string& unit, double v, double ref, int digits) {
    o << fmt::format("| {} | {} | {:.{}f} | {:.{}f} | {} |\n", q, unit, v, digits, ref, digits, ratio_text(v, ref));
  };
  row("SMs", "", double(p.sm_count), double(d.sm_count), 0);
  row("HBM capacity", "GiB", double(p.hbm_capacity_bytes) / gib, double(d.hbm_capacity_bytes) / gib, 2);
  row("HBM free after context", "GiB", double(p.hbm_free_after_context_bytes) / gib,
      double(d.hbm_free_after_context_bytes) / gib, 2);
  row("B_g HBM read (TMA bulk)", "GB/s", p.hbm_read_gbps, d.hbm_read_gbps, 0);
  row("B_h SM path (TMA from host)", "GB/s", p.host_sm_read_gbps, d.host_sm_read_gbps, 1);
  row("B_h copy engine (H2D)", "GB/s", p.host_copy_engine_gbps, d.host_copy_engine_gbps, 1);
  row("link shared by both", "GB/s", p.host_shared_total_gbps, d.host_shared_total_gbps, 1);
  row("host stage latency", "us", p.host_latency_us, d.host_latency_us, 3);
  row("congestion cap", "KiB", double(p.host_inflight_cap_bytes) / 1024, double(d.host_inflight_cap_bytes) / 1024, 0);
  row("max stages per host CTA", "", double(p.max_stages_per_cta), double(d.max_stages_per_cta), 0);
  row("HBM slowdown during H2D copy", "%", p.hbm_slowdown_during_copy * 100, d.hbm_slowdown_during_copy * 100, 1);
  row("kernel overhead in a graph", "us", p.kernel_overhead_us, d.kernel_overhead_us, 3);
  for (const TensorRatePoint& t : m.tensor)
    row(fmt::format("bf16 tensor rate, N = {}", t.tokens), "TFLOP/s", t.tflops, d.tensor_tflops_for(t.tokens), 1);
  row("pinned (tested size)", "GiB", double(p.pinnable_host_bytes) / gib, double(d.pinnable_host_bytes) / gib, 2);
  row("pin rate", "GiB/s", p.pin_gib_per_s, d.pin_gib_per_s, 2);

  o << "\nSM reads of pinned host memory (TMA bulk, " << p.host_stage_bytes
    << "-byte stages) next to the default profile's model min(B_h, in-flight / latency):\n";
  o << "| CTAs | stages | in flight KiB | GB/s | model GB/s | ratio |\n|---:|---:|---:|---:|---:|---:|\n";
  for (const HostReadPoint& h : m.host_reads) {
    const double model = d.host_direct_gbps(h.inflight_bytes());
    o << fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {} |\n", h.ctas, h.stages, h.inflight_bytes() >> 10, h.gbps,
                     model, ratio_text(h.gbps, model));
  }

  o << "\nContention: HBM read of the HBM CTAs while host CTAs stream (GB/s):\n";
  o << "| host CTAs | stages | in flight KiB | HBM | default HBM | ratio | host |\n|---:|---:|---:|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < m.contention.size(); ++i) {
    const ContentionPoint& c = m.contention[i];
    double ref = 0;
    for (const ContentionPoint& r : d.contention)
      if (r.host_ctas == c.host_ctas && r.stages_per_cta == c.stages_per_cta && r.hbm_ctas == c.hbm_ctas) ref = r.hbm_gbps;
    const double host = i < m.contention_host_gbps.size() ? m.contention_host_gbps[i] : 0;
    o << fmt::format("| {} | {} | {} | {:.0f} | {} | {} | {:.1f} |\n", c.host_ctas, c.stages_per_cta,
                     c.inflight_bytes() >> 10, c.hbm_gbps, ref > 0 ? fmt::format("{:.0f}", ref) : "-",
                     ratio_text(c.hbm_gbps, ref), host);
  }
  o << fmt::format("link shared: copy engine {:.1f} + SMs {:.1f} GB/s; HBM read alone {:.0f}, during an H2D copy {:.0f} "
                   "GB/s\n",
                   m.shared_ce_gbps, m.shared_sm_gbps, m.hbm_alone_gbps, m.hbm_during_copy_gbps);

  if (!m.zero_copy_gemm.empty() || m.zero_copy_attention_gbps > 0) {
    o << "\nZero-copy reads (the ordinary kernels on host-mapped memory; --offload zero-copy), GB/s of host bytes:\n";
    if (m.zero_copy_attention_gbps > 0) {
      o << fmt::format("decode attention, 8 sequences x 32 heads x 128, all K/V on the host: {:.1f} ({} {})\n",
                       m.zero_copy_attention_gbps, d.name,
                       d.zero_copy_attention_gbps > 0 ? fmt::format("{:.1f}", d.zero_copy_attention_gbps) : "-");
    }
    // cuBLASLt by (N, K): the rate over the row grid, which jumps with cuBLASLt's kernel choice.
    std::map<std::pair<int64_t, int64_t>, std::vector<const ZeroCopyGemmPoint*>> by_nk;
    for (const ZeroCopyGemmPoint& z : m.zero_copy_gemm) by_nk[{z.N, z.K}].push_back(&z);
    if (!by_nk.empty()) o << "| N | K | rows | min | median | max | at the most rows |\n|---:|---:|---|---:|---:|---:|---:|\n";
    for (const auto& [nk, pts] : by_nk) {
      std::vector<double> r;
      for (const ZeroCopyGemmPoint* z : pts) r.push_back(z->gbps);
      std::vector<double> sorted = r;
      std::sort(sorted.begin(), sorted.end());
      o << fmt::format("| {} | {} | {}-{} ({} points) | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", nk.first, nk.second,
                       pts.front()->rows, pts.back()->rows, pts.size(), sorted.front(), median_of(r), sorted.back(),
                       r.back());
    }
  }

  if (!m.gemm.empty()) {
    o << "\nTiered GEMM sweep (fastest launch per shape; 'planned' = plan_tiered_gemm's default schedule):\n";
    o << "| layer | M | N | K | m_host | host CTAs x stages | HBM CTAs x stages | k_splits | us | EB GB/s | planned us | "
         "planned/best |\n|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|\n";
    for (const GemmSweepResult& g : m.gemm) {
      const TieredGemmTuning& b = g.best;
      o << fmt::format("| {} | {} | {} | {} | {} | {} x {} | {} x {} | {} | {:.1f} | {:.0f} | {:.1f} | {:.3f} |\n",
                       g.label, b.M, b.N, b.K, b.m_host, b.host_ctas, b.host_stages, b.hbm_ctas, b.hbm_stages,
                       b.k_splits, b.time_us, b.eb_gbps, g.planned.time_us, g.planned.time_us / b.time_us);
    }
  }
  for (const std::string& why : m.gemm_skipped) o << "tiered GEMM skipped: " << why << "\n";
  o << "\nNote: pinnable_bytes is the size pinned by this run (--pin-test-gib), not the machine's maximum; the\n"
       "planner refuses host placements beyond it.\n";
  return o.str();
}

void run_profile_command(const ProfileArgs& a) {
  // Arguments first (typos are reported on any machine), then the output file, then the GPU.
  const std::vector<int64_t> tokens = parse_tokens(a.gemm_tokens);
  const std::vector<double> ratios = parse_ratios(a.gemm_ratios);
  const std::vector<NamedShape> shapes = a.skip_gemm ? std::vector<NamedShape>{} : linear_shapes(a.gemm_models);
  if (!(a.pin_test_gib == 0 || (a.pin_test_gib >= 1.0 / 1024 && a.pin_test_gib <= 1024))) {
    fail(fmt::format("--pin-test-gib {} is not a size from 1 MiB to 1024 GiB", a.pin_test_gib), "--pin-test-gib",
         "give e.g. --pin-test-gib 4, or 0 for the default (4 GiB, 1 with --quick)");
  }
  // One message for every value outside the range the help gives (session-24 trial: 2 was "too
  // few", -1 "outside [0, 1000]").
  if (a.runs != 0 && (a.runs < 3 || a.runs > 1000)) {
    fail(fmt::format("--runs {} is outside 3 to 1000 (or 0: the default)", a.runs), "--runs",
         "give e.g. --runs 5 (medians need 3 runs at least), or 0 for the default");
  }
  for (const CLI::Option* o : a.sweep_opts) {
    if (a.skip_gemm && o->count() > 0) {
      std::fprintf(stderr, "dak: notice: %s is ignored with --skip-gemm (no tiered GEMM sweep)\n",
                   o->get_name().c_str());
    }
  }
  if (!a.name.empty()) HardwareProfile::check_name(a.name, "--name");
  if (a.output.empty()) fail("no output file", "--output", "pass --output FILE");
  check_output(a.output, a.force);
  const std::string why = gpu_unavailable_reason();
  if (!why.empty()) {
    fail("dak profile needs a Hopper GPU: " + why, "dak profile",
         "run it on the GPU machine; without one, `dak plan` uses the compiled-in h200-default profile "
         "(profiles/h200-default.json; --profile h100-default or h100-fast-link names an H100's)");
  }
#ifdef DAK_HAVE_CUDA
  gpu::ProfileOptions opts = a.quick ? gpu::ProfileOptions::quick() : gpu::ProfileOptions{};
  opts.runs = a.runs > 0 ? a.runs : (a.quick ? 3 : 5);
  if (a.pin_test_gib > 0) opts.pin_test_bytes = uint64_t(a.pin_test_gib * double(1ull << 30));
  opts.gemm = !a.skip_gemm;
  for (const NamedShape& s : shapes) opts.gemm_shapes.push_back({s.M, s.K, s.label});
  opts.gemm_tokens = tokens;
  opts.gemm_ratios = ratios;
  opts.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const auto t0 = std::chrono::steady_clock::now();
  const ProfileMeasurements m = gpu::measure_profile(opts);
  const std::string date = today_utc();
  const std::string name = a.name.empty() ? "dak-profile-" + date : a.name;
  const HardwareProfile defaults = HardwareProfile::h200_default();
  const HardwareProfile p = build_measured_profile(m, name, date, defaults);
  const nlohmann::json j = p.to_json();
  HardwareProfile::from_json(j, "the measured profile");  // what is written must load
  std::cout << profile_table(p, defaults, m) << std::flush;

  // A file that appeared at --output during the measurement (minutes) is not replaced without
  // --force: the profile goes to a free name beside it (write_new_text_file).
  const WrittenFile w = write_new_text_file(a.output, json_text(j) + "\n", "--output", a.force);
  if (w.moved) {
    std::fprintf(stderr, "dak: notice: '%s' appeared during the measurement; the profile went to '%s' instead\n",
                 a.output.c_str(), w.path.c_str());
  }
  std::fprintf(stderr, "dak: wrote %s (profile '%s', %.1f s)\n", w.path.c_str(), name.c_str(), seconds_since(t0));
#else
  (void)tokens;
  (void)ratios;
  (void)shapes;
#endif
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto a = std::make_shared<ProfileArgs>();
  CLI::App* c = app.add_subcommand(
      "profile", "Measure this GPU and its host link (B_g, B_h, contention, tensor rate, launch overhead, pinning), "
                 "tune the tiered GEMM's launch parameters, and write a hardware profile for `dak plan --profile`");
  c->add_option("--output,-o", a->output, "Profile JSON to write (refused if it exists, unless --force)")->required();
  c->add_flag("--force", a->force, "Overwrite --output if it exists");
  c->add_option("--name", a->name, "Profile name stored in the file (default: dak-profile-<date>)");
  CLI::Option* gemm_model =
      c->add_option("--gemm-model", a->gemm_models,
                    "Configs whose decoder-layer linear shapes the tiered GEMM sweep tunes: shipped names or "
                    "config.json paths, comma-separated")
          ->capture_default_str()
          ->check(value_syntax([](const std::string& s) { parse_name_list(s, "--gemm-model"); }));
  // The comma lists' syntax is checked while parsing (exit 2), their ranges by the command (exit 1).
  CLI::Option* gemm_tokens =
      c->add_option("--gemm-tokens", a->gemm_tokens, "Tokens N of the tuned GEMMs, comma-separated, each in [1, 8192]")
          ->capture_default_str()
          ->check(value_syntax([](const std::string& s) { parse_tokens(s); }));
  CLI::Option* gemm_ratios =
      c->add_option("--gemm-ratios", a->gemm_ratios,
                    "Fractions of each weight's rows in host memory (m_host = ratio x M in whole 128-row units, as the "
                    "planner places host rows), comma-separated, in [0, 1]")
          ->capture_default_str()
          ->check(value_syntax([](const std::string& s) { parse_ratios(s); }));
  a->sweep_opts = {gemm_model, gemm_tokens, gemm_ratios};
  c->add_flag("--quick", a->quick, "Smaller buffers and 3 runs per median (smoke tests; noisier figures)");
  c->add_flag("--skip-gemm", a->skip_gemm, "Skip the tiered GEMM sweep (the profile then has no tiered_gemm entries)");
  c->add_option("--pin-test-gib", a->pin_test_gib,
                "GiB to pin for the pin rate; the profile's pinnable_bytes is this tested size (default 4, 1 with "
                "--quick)")
      ->transform(decimal_number(
          "0 (the default: 4 GiB, 1 with --quick) or a size in GiB from 0.001 (about 1 MiB) to 1024", 0.0, 1024.0));
  // whole_number reads the value as decimal (CLI11 alone took 010 as 8 and 0x10 as 16) within int;
  // run_profile_command refuses values outside the range the text gives.
  c->add_option("--runs", a->runs, "Timed runs behind each median, 3 to 1000 (0 or absent: 5, 3 with --quick)")
      ->transform(whole_number("0 (the default: 5, 3 with --quick) or a count from 3 to 1000", INT32_MIN, INT32_MAX));
  c->footer(kFooter);
  c->callback([a] { run_profile_command(*a); });
}

}  // namespace dak::cli
