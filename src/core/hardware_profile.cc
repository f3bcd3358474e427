#include "core/hardware_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "core/tiered_gemm_schedule.h"

namespace dak {

namespace {

using nlohmann::json;

const json& member(const json& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    fail(fmt::format("hardware profile lacks field '{}'", key), where,
         "compare with profiles/h200-default.json, or measure the profile with `dak profile --output FILE`");
  return j.at(key);
}

// Every quantity of a profile has a plausibility bound far beyond real hardware, so a typo or a
// hand edit cannot turn the planner's arithmetic into overflow, 300-digit numbers or a hang (found
// by the session-8 new-user trial: sm_count 1e12 was an allocation failure, stage_bytes 2^62 a
// division by zero).
constexpr double kMaxNumber = 1e7;   // GB/s, TFLOP/s, us, GiB/s ... (H200: 4490 GB/s, 717 TFLOP/s)
constexpr double kMinNumber = 1e-6;  // a positive quantity below this is a typo (1e-300 GB/s)
constexpr int64_t kMaxInt = int64_t(1) << 50;  // bytes (1 PiB), counts
constexpr double kMinGbps = 0.1;  // a bandwidth below 100 MB/s is a unit mistake (B/s, MB/s) or a broken run

double positive_number(const json& j, const std::string& key, const std::string& where, bool allow_zero = false,
                       double max = kMaxNumber) {
  const json& v = member(j, key, where);
  if (!v.is_number())
    fail(fmt::format("hardware profile field '{}' must be a number", key), where, "write a plain JSON number");
  double d = v.get<double>();
  if (!(d > 0 || (allow_zero && d == 0)))
    fail(fmt::format("hardware profile field '{}' must be {}, got {}", key, allow_zero ? ">= 0" : "> 0", d), where,
         "re-measure it with `dak profile` or fix the file");
  if (d > max || (d > 0 && d < kMinNumber))
    fail(fmt::format("hardware profile field '{}' = {:g} is implausible (allowed: {}{:g} to {:g})", key, d,
                     allow_zero ? "0, or " : "", kMinNumber, max),
         where, "re-measure it with `dak profile` or fix the file");
  return d;
}

/// A bandwidth field `section`.`key` in GB/s: positive_number, and at least kMinGbps.
double bandwidth_gbps(const json& j, const std::string& section, const std::string& key, const std::string& where,
                      const std::string& typical) {
  const double v = positive_number(j, key, where);
  if (v < kMinGbps)
    fail(fmt::format("{}.{} {:g} GB/s is implausible (below {:g} GB/s)", section, key, v, kMinGbps), where,
         fmt::format("give GB/s (1e9 bytes per second): {}; re-measure it with `dak profile`", typical));
  return v;
}

int64_t positive_int(const json& j, const std::string& key, const std::string& where, bool allow_zero = false,
                     int64_t max = kMaxInt) {
  const json& v = member(j, key, where);
  // A whole number past 2^64 parses as a float: it is a count out of range, not a fraction (a
  // session-36 trial's 26-digit sm_count was called "not an integer").
  if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>())) {
    const double d = v.get<double>();
    if (d > double(max))
      fail(fmt::format("hardware profile field '{}' = {} is implausible (at most {})", key, v.dump(), max), where,
           "re-measure it with `dak profile` or fix the file");
    if (d < double(std::numeric_limits<int64_t>::min()))
      fail(fmt::format("hardware profile field '{}' must be {}, got {}", key, allow_zero ? ">= 0" : "> 0", v.dump()),
           where, "re-measure it with `dak profile` or fix the file");
  }
  if (!v.is_number_integer())
    fail(fmt::format("hardware profile field '{}' must be an integer", key), where, "write a whole number");
  // An unsigned value past int64 would wrap in get<int64_t>(): compare it unsigned.
  if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(max) : v.get<int64_t>() > max)
    fail(fmt::format("hardware profile field '{}' = {} is implausible (at most {})", key, v.dump(), max), where,
         "re-measure it with `dak profile` or fix the file");
  const int64_t i = v.get<int64_t>();
  if (!(i > 0 || (allow_zero && i == 0)))
    fail(fmt::format("hardware profile field '{}' must be {}, got {}", key, allow_zero ? ">= 0" : "> 0", i), where,
         "re-measure it with `dak profile` or fix the file");
  return i;
}

std::string text(const json& j, const std::string& key, const std::string& where) {
  const json& v = member(j, key, where);
  if (!v.is_string()) fail(fmt::format("hardware profile field '{}' must be a string", key), where, "quote it");
  return v.get<std::string>();
}

}  // namespace

HardwareProfile HardwareProfile::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) fail("hardware profile is not a JSON object", where, "see profiles/h200-default.json");
  check_dak_file_kind(j, kFormat, where);  // a plan given to --profile
  if (text(j, "format", where) != kFormat)
    fail(fmt::format("not a hardware profile (format '{}')", j.at("format").get<std::string>()), where,
         fmt::format("the file must say \"format\": \"{}\"", kFormat));
  int64_t version = positive_int(j, "version", where);
  if (version != kVersion)
    fail(fmt::format("hardware profile version {} is not supported (this dak reads version {})", version, kVersion),
         where, "re-run `dak profile` with this dak, or use a matching dak");

  HardwareProfile p;
  p.name = text(j, "name", where);
  check_name(p.name, where + ": field 'name'");
  p.device = text(j, "device", where);
  p.sm_count = positive_int(j, "sm_count", where, false, 1024);

  const std::string wh = where + ": hbm";
  const json& hbm = member(j, "hbm", where);
  p.hbm_capacity_bytes = positive_int(hbm, "capacity_bytes", wh);
  p.hbm_free_after_context_bytes = positive_int(hbm, "free_after_context_bytes", wh);
  p.hbm_reserve_bytes = positive_int(hbm, "reserve_bytes", wh, true);
  p.hbm_read_gbps = bandwidth_gbps(hbm, "hbm", "read_gbps", wh, "4623 on the H200");
  if (p.hbm_free_after_context_bytes > p.hbm_capacity_bytes || p.hbm_reserve_bytes >= p.hbm_free_after_context_bytes)
    fail("hbm: need reserve_bytes < free_after_context_bytes <= capacity_bytes", wh, "fix the byte counts");

  const std::string wl = where + ": host_link";
  const json& link = member(j, "host_link", where);
  p.host_sm_read_gbps = bandwidth_gbps(link, "host_link", "sm_read_gbps", wl, "51.4 on the H200's PCIe Gen5 link");
  p.host_copy_engine_gbps = bandwidth_gbps(link, "host_link", "copy_engine_gbps", wl, "55.5 on the H200");
  p.host_shared_total_gbps = bandwidth_gbps(link, "host_link", "shared_total_gbps", wl, "53.2 on the H200");
  p.host_latency_us = positive_number(link, "latency_us", wl);
  p.host_inflight_cap_bytes = positive_int(link, "inflight_cap_bytes", wl, false, int64_t(1) << 30);
  p.host_stage_bytes = positive_int(link, "stage_bytes", wl, false, int64_t(16) << 20);
  p.max_stages_per_cta = positive_int(link, "max_stages_per_cta", wl, false, 1024);
  p.max_multicast_cluster = positive_int(link, "max_multicast_cluster", wl);
  if (p.max_multicast_cluster != 1 && p.max_multicast_cluster != 2 && p.max_multicast_cluster != 4) {
    fail(fmt::format("host_link.max_multicast_cluster {} is not 1, 2 or 4", p.max_multicast_cluster), wl,
         "give the largest TMA multicast cluster the tiered GEMM may use: 4 on Hopper (1 turns multicast off)");
  }
  if (link.contains("cluster4_ctas")) {
    p.cluster4_ctas = positive_int(link, "cluster4_ctas", wl, false, 1024);
    if (p.cluster4_ctas > p.sm_count || p.cluster4_ctas % 4 != 0)
      fail(fmt::format("host_link.cluster4_ctas {} is not a multiple of 4 up to the {} SMs", p.cluster4_ctas,
                       p.sm_count),
           wl, "give the CTAs co-resident in clusters of 4 (cudaOccupancyMaxActiveClusters x 4; 120 on the H200)");
  }
  // Both or neither: the loaded-link model of the compute tiles needs its rate and its start.
  if (link.contains("loaded_latency_us") != link.contains("loaded_start_us"))
    fail("host_link.loaded_latency_us and loaded_start_us go together: the profile gives only one", wl,
         "give both (3.9 and 15 on the H200, profiles/h200-default.json) or neither (the compute tiles' host reads "
         "are then priced at latency_us)");
  if (link.contains("loaded_latency_us")) {
    // Microseconds: past a millisecond they are a unit mistake.
    p.host_loaded_latency_us = positive_number(link, "loaded_latency_us", wl, false, 1000);
    p.host_loaded_start_us = positive_number(link, "loaded_start_us", wl, true, 1000);
  }
  p.hbm_slowdown_during_copy = positive_number(link, "hbm_slowdown_during_copy", wl, true);
  if (p.hbm_slowdown_during_copy >= 1) fail("host_link.hbm_slowdown_during_copy must be < 1", wl, "it is a fraction");

  const json& cont = member(j, "contention", where);
  if (!cont.is_array()) fail("'contention' must be an array", where, "list the probe points");
  for (size_t i = 0; i < cont.size(); ++i) {
    const std::string wc = fmt::format("{}: contention[{}]", where, i);
    ContentionPoint c;
    c.host_ctas = positive_int(cont[i], "host_ctas", wc, true, 1024);
    c.stages_per_cta = positive_int(cont[i], "stages_per_cta", wc, false, 1024);
    c.stage_bytes = positive_int(cont[i], "stage_bytes", wc, false, int64_t(16) << 20);
    c.hbm_ctas = positive_int(cont[i], "hbm_ctas", wc, false, 1024);
    c.hbm_gbps = positive_number(cont[i], "hbm_gbps", wc);
    p.contention.push_back(c);
  }
  for (const ContentionPoint& c : p.contention) {
    if (c.host_ctas == 0) continue;
    bool has_base = std::any_of(p.contention.begin(), p.contention.end(), [&](const ContentionPoint& b) {
      return b.host_ctas == 0 && b.stages_per_cta == c.stages_per_cta && b.hbm_ctas == c.hbm_ctas;
    });
    if (!has_base)
      fail(fmt::format("contention point with {} stages per CTA has no host_ctas 0 baseline", c.stages_per_cta),
           where + ": contention", "add the point measured without host CTAs");
  }

  const std::string wk = where + ": compute";
  const json& comp = member(j, "compute", where);
  p.kernel_overhead_us = positive_number(comp, "kernel_overhead_us", wk, true);
  // Optional (profiles written before session 7 lack them): the per-kernel cost inside a step's
  // dependent chain, and the rate of memory-bound linears relative to B_g.
  if (comp.contains("step_kernel_overhead_us"))
    p.step_kernel_overhead_us = positive_number(comp, "step_kernel_overhead_us", wk);
  if (comp.contains("tiered_step_kernel_overhead_us"))
    p.tiered_step_kernel_overhead_us = positive_number(comp, "tiered_step_kernel_overhead_us", wk);
  p.linear_hbm_fraction = comp.contains("linear_hbm_fraction") ? positive_number(comp, "linear_hbm_fraction", wk) : 1.0;
  // Plausible ranges: values outside them are typos or unit mistakes, and the planner would turn
  // them into infinite or absurd predictions.
  constexpr double kMaxOverheadUs = 1000;  // a millisecond per kernel
  for (const auto& [key, v] : {std::pair<const char*, double>{"kernel_overhead_us", p.kernel_overhead_us},
                               {"step_kernel_overhead_us", p.step_kernel_overhead_us},
                               {"tiered_step_kernel_overhead_us", p.tiered_step_kernel_overhead_us}}) {
    if (v > kMaxOverheadUs)
      fail(fmt::format("compute.{} {} us is more than {} us per kernel", key, v, kMaxOverheadUs), wk,
           "give microseconds per kernel (the H200 measures 2-5 us)");
  }
  if (p.linear_hbm_fraction < 0.05 || p.linear_hbm_fraction > 1)
    fail(fmt::format("compute.linear_hbm_fraction {} is outside [0.05, 1]", p.linear_hbm_fraction), wk,
         "give the fraction of hbm.read_gbps a memory-bound linear layer reaches (0.917 on the H200)");
  if (comp.contains("multicast_round_factor")) {
    p.multicast_round_factor = positive_number(comp, "multicast_round_factor", wk, false, 4);
    if (p.multicast_round_factor < 1)
      fail(fmt::format("compute.multicast_round_factor {} is below 1", p.multicast_round_factor), wk,
           "give how much slower a round of the clustered launch runs (>= 1; 1.25 on the H200)");
  }
  p.mma_min_rows = positive_int(comp, "mma_min_rows", wk, false, 1024);
  const json& rates = member(comp, "tensor_tflops", wk);
  if (!rates.is_array() || rates.empty()) {
    fail("compute.tensor_tflops must be a non-empty array of rate classes", wk,
         "list at least one, e.g. [{\"max_tokens\": 0, \"tflops\": 717}] (max_tokens 0: every token count; "
         "compare profiles/h200-default.json)");
  }
  for (size_t i = 0; i < rates.size(); ++i) {
    const std::string wr = fmt::format("{}.tensor_tflops[{}]", wk, i);
    p.tensor_tflops.push_back(
        {positive_int(rates[i], "max_tokens", wr, true), positive_number(rates[i], "tflops", wr)});
  }
  std::stable_sort(p.tensor_tflops.begin(), p.tensor_tflops.end(), [](const auto& a, const auto& b) {
    return (a.max_tokens == 0 ? INT64_MAX : a.max_tokens) < (b.max_tokens == 0 ? INT64_MAX : b.max_tokens);
  });
  if (p.tensor_tflops.back().max_tokens != 0)
    fail("compute.tensor_tflops needs a class with max_tokens 0 (no upper limit)", wk, "add the large-N class");

  const std::string wm = where + ": host_memory";
  const json& host = member(j, "host_memory", where);
  p.pinnable_host_bytes = positive_int(host, "pinnable_bytes", wm);
  p.pin_gib_per_s = positive_number(host, "pin_gib_per_s", wm);

  if (j.contains("tiered_gemm")) {
    const json& tg = j.at("tiered_gemm");
    if (!tg.is_array()) fail("'tiered_gemm' must be an array", where, "list the measured GEMM launches, or drop it");
    for (size_t i = 0; i < tg.size(); ++i) {
      const std::string wt = fmt::format("{}: tiered_gemm[{}]", where, i);
      TieredGemmTuning t;
      t.M = positive_int(tg[i], "M", wt);
      t.N = positive_int(tg[i], "N", wt);
      t.K = positive_int(tg[i], "K", wt);
      t.m_host = positive_int(tg[i], "m_host", wt, true);
      t.host_ctas = positive_int(tg[i], "host_ctas", wt, true);
      t.host_stages = positive_int(tg[i], "host_stages", wt);
      t.hbm_ctas = positive_int(tg[i], "hbm_ctas", wt, true);
      t.hbm_stages = positive_int(tg[i], "hbm_stages", wt);
      t.k_splits = positive_int(tg[i], "k_splits", wt);
      if (tg[i].contains("k_chunks")) {
        t.k_chunks = positive_int(tg[i], "k_chunks", wt);
        if (t.k_chunks != 1 && t.k_chunks != kTieredGemmKChunks)
          fail(fmt::format("k_chunks {} is not 1 or {}", t.k_chunks, kTieredGemmKChunks), wt,
               fmt::format("give 1, or {} with k_splits 1 (the accumulation chunks the tiered GEMM takes)",
                           kTieredGemmKChunks));
        if (t.k_chunks > 1 && t.k_splits != 1)
          fail(fmt::format("k_chunks {} with k_splits {}", t.k_chunks, t.k_splits), wt,
               "accumulation chunks go with k_splits 1 only: set one of them to 1");
      }
      if (tg[i].contains("cluster")) {
        t.cluster = positive_int(tg[i], "cluster", wt);
        if (t.cluster != 1 && t.cluster != 2 && t.cluster != 4)
          fail(fmt::format("cluster {} is not 1, 2 or 4", t.cluster), wt, "give the multicast cluster size, or drop it");
        if (t.host_ctas % t.cluster != 0 || t.hbm_ctas % t.cluster != 0)
          fail(fmt::format("{} host and {} HBM CTAs are not whole clusters of {}", t.host_ctas, t.hbm_ctas, t.cluster),
               wt, "re-measure it with `dak profile`, or give CTA counts that are multiples of the cluster");
      }
      t.time_us = positive_number(tg[i], "time_us", wt);
      t.eb_gbps = positive_number(tg[i], "eb_gbps", wt);
      if (t.m_host > t.M) fail(fmt::format("m_host {} exceeds M = {}", t.m_host, t.M), wt, "give 0 <= m_host <= M");
      if ((t.m_host > 0 && t.host_ctas < 1) || (t.m_host < t.M && t.hbm_ctas < 1))
        fail(fmt::format("{} host rows on {} host CTAs and {} HBM rows on {} HBM CTAs", t.m_host, t.host_ctas,
                         t.M - t.m_host, t.hbm_ctas),
             wt, "give every side that has rows at least one CTA");
      if (t.host_ctas + t.hbm_ctas > p.sm_count)
        fail(fmt::format("{} host + {} HBM CTAs exceed the profile's sm_count of {}", t.host_ctas, t.hbm_ctas,
                         p.sm_count),
             wt, "check sm_count (132 on the H200), or give this entry at most one CTA per SM");
      if (p.find_tiered_gemm(t.M, t.N, t.K, t.m_host))
        fail(fmt::format("second entry for M={} N={} K={} m_host={}", t.M, t.N, t.K, t.m_host), wt,
             "keep one entry per shape and host row count");
      p.tiered_gemm.push_back(t);
    }
  }

  if (j.contains("zero_copy")) {
    const std::string wz = where + ": zero_copy";
    const json& zc = j.at("zero_copy");
    if (!zc.is_object()) fail("'zero_copy' must be an object", where, "give {\"gemm\": [...], \"attention_gbps\": X}");
    // The ordinary kernels' reads cross the same link: a rate above the link's best (by more than a
    // measurement's spread) or below 50 MB/s (the H200 measures 4.8-51 GB/s) is a unit mistake or a typo.
    const double link = std::max(p.host_copy_engine_gbps, p.host_sm_read_gbps);
    auto checked_rate = [&](const json& obj, const char* key, const std::string& w, const std::string& what) {
      const double v = positive_number(obj, key, w);
      if (v > 1.1 * link || v < 0.05)
        fail(fmt::format("zero_copy {} {} GB/s is outside [0.05, {:.1f}] (the link carries {} GB/s at best)", what, v,
                         1.1 * link, link),
             wz, "give the measured host read rate in GB/s (dak profile measures it)");
      return v;
    };
    if (zc.contains("gemm")) {
      const json& g = zc.at("gemm");
      if (!g.is_array()) fail("zero_copy.gemm must be an array", wz, "list the measured GEMMs, or drop it");
      for (size_t i = 0; i < g.size(); ++i) {
        const std::string wg = fmt::format("{}.gemm[{}]", wz, i);
        if (!g[i].is_object())
          fail("the entry is not an object", wg, "write {\"N\": 8, \"K\": 4096, \"rows\": 1024, \"gbps\": 38.3}");
        ZeroCopyGemmPoint z;
        z.N = positive_int(g[i], "N", wg);
        z.K = positive_int(g[i], "K", wg);
        z.rows = positive_int(g[i], "rows", wg);
        z.gbps = checked_rate(g[i], "gbps", wg, "gemm rate");
        for (const ZeroCopyGemmPoint& o : p.zero_copy_gemm)
          if (o.N == z.N && o.K == z.K && o.rows == z.rows)
            fail(fmt::format("second point for N={} K={} rows={}", z.N, z.K, z.rows), wg, "keep one point per shape");
        p.zero_copy_gemm.push_back(z);
      }
    }
    if (zc.contains("attention_gbps"))
      p.zero_copy_attention_gbps = checked_rate(zc, "attention_gbps", wz, "attention_gbps");
  }

  if (j.contains("sources")) {
    const json& src = j.at("sources");
    if (!src.is_object()) fail("'sources' must be an object of strings", where, "map field names to their source");
    for (auto it = src.begin(); it != src.end(); ++it) {
      if (!it.value().is_string())
        fail(fmt::format("sources.{} must be a string", it.key()), where, "quote the citation");
      p.sources[it.key()] = it.value().get<std::string>();
    }
  }
  json known = p.to_json();
  // An empty or partial zero_copy section is known, though to_json() leaves it out.
  if (j.contains("zero_copy") && j.at("zero_copy").is_object()) {
    json& kz = known["zero_copy"];
    if (!kz.is_object()) kz = json::object();
    if (j.at("zero_copy").contains("gemm") && !kz.contains("gemm")) kz["gemm"] = json::array();
  }
  p.unknown_fields = unknown_json_fields(j, known, "sources");
  return p;
}

void HardwareProfile::check_name(const std::string& name, const std::string& where) {
  // Printed in plan headers and messages and recorded in plans: the session-33 trials printed a
  // newline and an escape sequence from it, and "h100-default " or a look-alike dash passed for
  // the compiled-in name.
  const bool ok = !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '+';
  });
  if (!ok) {
    fail(fmt::format("the hardware profile name '{}' is not 1 to 64 letters, digits, '-', '_', '.' or '+'",
                     name),
         where, "give a short name such as my-h100");
  }
}

namespace {

// The compiled-in profiles, in builtin_names() order: each name with its JSON text.
struct CompiledIn {
  const char* name;
  const char* (*json)();
};
constexpr CompiledIn kCompiledIn[] = {{"h200-default", &HardwareProfile::h200_default_json},
                                      {"h100-default", &HardwareProfile::h100_default_json},
                                      {"h100-fast-link", &HardwareProfile::h100_fast_link_json}};

// Entry I, its text parsed once per process (the H100's are 38 KB; plans, bench steps and name
// checks ask for them repeatedly).
template <size_t I>
const HardwareProfile& compiled_in() {
  static const HardwareProfile p = HardwareProfile::from_json(nlohmann::json::parse(kCompiledIn[I].json()),
                                                              std::string("compiled-in profile ") + kCompiledIn[I].name);
  return p;
}
constexpr const HardwareProfile& (*kCompiledInProfile[])() = {&compiled_in<0>, &compiled_in<1>, &compiled_in<2>};
static_assert(std::size(kCompiledInProfile) == std::size(kCompiledIn));

}  // namespace

HardwareProfile HardwareProfile::load(const std::filesystem::path& path) {
  const json j = read_json_file(path, "hardware profile",
                                "check the path given to --profile, or name a compiled-in profile (" +
                                    builtin_name_list() + "); fix the JSON (compare profiles/h200-default.json)");
  return from_json(j, path.string());
}

HardwareProfile HardwareProfile::h200_default() { return compiled_in<0>(); }

HardwareProfile HardwareProfile::h100_default() { return compiled_in<1>(); }

HardwareProfile HardwareProfile::h100_fast_link() { return compiled_in<2>(); }

const std::vector<std::string>& HardwareProfile::builtin_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const CompiledIn& c : kCompiledIn) v.emplace_back(c.name);
    return v;
  }();
  return names;
}

std::string HardwareProfile::builtin_name_list() {
  std::string out;
  for (const std::string& n : builtin_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool HardwareProfile::is_builtin(const std::string& name) {
  const std::vector<std::string>& names = builtin_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::optional<HardwareProfile> HardwareProfile::builtin(const std::string& name) {
  for (size_t i = 0; i < std::size(kCompiledIn); ++i) {
    if (name == kCompiledIn[i].name) return kCompiledInProfile[i]();
  }
  return std::nullopt;
}

std::optional<HardwareProfile> HardwareProfile::for_device(const std::string& device_name, int64_t sm_count,
                                                           uint64_t hbm_bytes) {
  std::vector<HardwareProfile> all = all_for_device(device_name, sm_count, hbm_bytes);
  if (all.empty()) return std::nullopt;
  return std::move(all.front());
}

std::vector<HardwareProfile> HardwareProfile::all_for_device(const std::string& device_name, int64_t sm_count,
                                                             uint64_t hbm_bytes) {
  if (sm_count != 132) return {};
  // The H100 80GB HBM3 (SXM) reports 79.2 GiB; the 94 GB NVL and 64 GB parts differ in B_g.
  const double gib = double(hbm_bytes) / double(uint64_t(1) << 30);
  if (device_name.find("H100 80GB HBM3") != std::string::npos && gib > 75 && gib < 82) {
    return {h100_default(), h100_fast_link()};
  }
  if (device_name.find("H200") != std::string::npos && device_name.find("GH200") == std::string::npos) {
    return {h200_default()};
  }
  return {};
}

const HardwareProfile& HardwareProfile::nearest_host_link(const std::vector<HardwareProfile>& candidates,
                                                          double measured_sm_read_gbps) {
  if (candidates.empty()) {
    fail("no hardware profile to choose from", "HardwareProfile::nearest_host_link",
         "pass the profiles all_for_device gives, and call it only where that list is not empty");
  }
  size_t best = 0;
  if (std::isfinite(measured_sm_read_gbps) && measured_sm_read_gbps > 0) {
    double best_distance = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < candidates.size(); ++i) {
      const double d = std::abs(std::log(measured_sm_read_gbps / candidates[i].host_sm_read_gbps));
      if (d < best_distance) {
        best_distance = d;
        best = i;
      }
    }
  }
  return candidates[best];
}

json HardwareProfile::to_json() const {
  json cont = json::array();
  for (const ContentionPoint& c : contention)
    cont.push_back({{"host_ctas", c.host_ctas},
                    {"stages_per_cta", c.stages_per_cta},
                    {"stage_bytes", c.stage_bytes},
                    {"hbm_ctas", c.hbm_ctas},
                    {"hbm_gbps", c.hbm_gbps}});
  json rates = json::array();
  for (const TensorRateClass& r : tensor_tflops) rates.push_back({{"max_tokens", r.max_tokens}, {"tflops", r.tflops}});
  json gemms = json::array();
  for (const TieredGemmTuning& t : tiered_gemm)
    gemms.push_back({{"M", t.M},
                     {"N", t.N},
                     {"K", t.K},
                     {"m_host", t.m_host},
                     {"host_ctas", t.host_ctas},
                     {"host_stages", t.host_stages},
                     {"hbm_ctas", t.hbm_ctas},
                     {"hbm_stages", t.hbm_stages},
                     {"k_splits", t.k_splits},
                     {"cluster", t.cluster},
                     {"k_chunks", t.k_chunks},
                     {"time_us", t.time_us},
                     {"eb_gbps", t.eb_gbps}});
  json j = {
      {"format", kFormat},
      {"version", kVersion},
      {"name", name},
      {"device", device},
      {"sm_count", sm_count},
      {"hbm",
       {{"capacity_bytes", hbm_capacity_bytes},
        {"free_after_context_bytes", hbm_free_after_context_bytes},
        {"reserve_bytes", hbm_reserve_bytes},
        {"read_gbps", hbm_read_gbps}}},
      {"host_link",
       {{"sm_read_gbps", host_sm_read_gbps},
        {"copy_engine_gbps", host_copy_engine_gbps},
        {"shared_total_gbps", host_shared_total_gbps},
        {"latency_us", host_latency_us},
        {"inflight_cap_bytes", host_inflight_cap_bytes},
        {"stage_bytes", host_stage_bytes},
        {"max_stages_per_cta", max_stages_per_cta},
        {"max_multicast_cluster", max_multicast_cluster},
        {"hbm_slowdown_during_copy", hbm_slowdown_during_copy}}},
      {"contention", cont},
      {"compute",
       {{"kernel_overhead_us", kernel_overhead_us},
        {"linear_hbm_fraction", linear_hbm_fraction},
        {"mma_min_rows", mma_min_rows},
        {"tensor_tflops", rates}}},
      {"host_memory", {{"pinnable_bytes", pinnable_host_bytes}, {"pin_gib_per_s", pin_gib_per_s}}},
  };
  if (step_kernel_overhead_us > 0) j["compute"]["step_kernel_overhead_us"] = step_kernel_overhead_us;
  if (tiered_step_kernel_overhead_us > 0)
    j["compute"]["tiered_step_kernel_overhead_us"] = tiered_step_kernel_overhead_us;
  if (cluster4_ctas > 0) j["host_link"]["cluster4_ctas"] = cluster4_ctas;
  j["compute"]["multicast_round_factor"] = multicast_round_factor;  // 1 (the absent default) too: a known field
  if (host_loaded_latency_us > 0) {
    j["host_link"]["loaded_latency_us"] = host_loaded_latency_us;
    j["host_link"]["loaded_start_us"] = host_loaded_start_us;
  }
  j["tiered_gemm"] = gemms;
  if (!zero_copy_gemm.empty() || zero_copy_attention_gbps > 0) {
    json zg = json::array();
    for (const ZeroCopyGemmPoint& z : zero_copy_gemm)
      zg.push_back({{"N", z.N}, {"K", z.K}, {"rows", z.rows}, {"gbps", z.gbps}});
    j["zero_copy"] = {{"gemm", zg}};
    if (zero_copy_attention_gbps > 0) j["zero_copy"]["attention_gbps"] = zero_copy_attention_gbps;
  }
  j["sources"] = json(sources);
  return j;
}

const TieredGemmTuning* HardwareProfile::find_tiered_gemm(int64_t M, int64_t N, int64_t K, int64_t m_host) const {
  for (const TieredGemmTuning& t : tiered_gemm)
    if (t.M == M && t.N == N && t.K == K && t.m_host == m_host) return &t;
  return nullptr;
}

namespace {

/// y at x on the piecewise-linear curve through `pts` (x ascending, in log x), clamped at the ends.
double log_interpolate(const std::map<double, double>& pts, double x) {
  if (x <= pts.begin()->first) return pts.begin()->second;
  if (x >= pts.rbegin()->first) return pts.rbegin()->second;
  const auto hi = pts.upper_bound(x);
  const auto lo = std::prev(hi);
  const double t = std::log(x / lo->first) / std::log(hi->first / lo->first);
  return lo->second + t * (hi->second - lo->second);
}

}  // namespace

double HardwareProfile::zero_copy_gemm_rate_gbps(int64_t tokens, int64_t K, int64_t rows) const {
  if (zero_copy_gemm.empty()) return host_sm_read_gbps;
  // The class: the largest measured N <= tokens, else the smallest measured N.
  int64_t n_class = -1, n_min = INT64_MAX;
  for (const ZeroCopyGemmPoint& z : zero_copy_gemm) {
    n_min = std::min(n_min, z.N);
    if (z.N <= tokens) n_class = std::max(n_class, z.N);
  }
  if (n_class < 0) n_class = n_min;
  std::map<int64_t, std::map<double, double>> by_k;  // K -> rows -> GB/s
  for (const ZeroCopyGemmPoint& z : zero_copy_gemm)
    if (z.N == n_class) by_k[z.K][double(z.rows)] = z.gbps;
  std::map<double, double> over_k;  // K -> GB/s at these rows
  for (const auto& [k, curve] : by_k) over_k[double(k)] = log_interpolate(curve, double(std::max<int64_t>(rows, 1)));
  return log_interpolate(over_k, double(std::max<int64_t>(K, 1)));
}

double HardwareProfile::tensor_tflops_for(int64_t tokens) const {
  for (const TensorRateClass& r : tensor_tflops)
    if (r.max_tokens == 0 || tokens <= r.max_tokens) return r.tflops;
  return tensor_tflops.back().tflops;
}

double HardwareProfile::hbm_factor(int64_t inflight_bytes) const {
  if (inflight_bytes <= host_inflight_cap_bytes) return 1.0;
  // (in-flight bytes, HBM fraction of its own no-host baseline) beyond the cap, lowest per size.
  std::map<int64_t, double> curve;
  for (const ContentionPoint& c : contention) {
    if (c.host_ctas == 0 || c.inflight_bytes() <= host_inflight_cap_bytes) continue;
    double base = 0;
    for (const ContentionPoint& b : contention)
      if (b.host_ctas == 0 && b.stages_per_cta == c.stages_per_cta && b.hbm_ctas == c.hbm_ctas) base = b.hbm_gbps;
    double f = std::min(1.0, c.hbm_gbps / base);
    auto [it, inserted] = curve.emplace(c.inflight_bytes(), f);
    if (!inserted) it->second = std::min(it->second, f);
  }
  double prev_x = double(host_inflight_cap_bytes), prev_f = 1.0;
  for (auto& [x, f] : curve) {
    double fx = std::min(f, prev_f);  // non-increasing
    if (double(inflight_bytes) <= double(x)) {
      double t = (double(inflight_bytes) - prev_x) / (double(x) - prev_x);
      return prev_f + t * (fx - prev_f);
    }
    prev_x = double(x);
    prev_f = fx;
  }
  return prev_f;
}

double HardwareProfile::host_direct_gbps(int64_t inflight_bytes) const {
  // bytes / microseconds = 1e6 B/s = 1e-3 GB/s.
  double latency_bound_gbps = double(inflight_bytes) / host_latency_us * 1e-3;
  return std::min(host_sm_read_gbps, latency_bound_gbps);
}

HardwareProfile HardwareProfile::for_step(bool decode, int64_t tokens) const {
  HardwareProfile p = *this;
  if (decode && tokens <= kTieredDecodeMaxTokens && tiered_step_kernel_overhead_us > 0)
    p.step_kernel_overhead_us = tiered_step_kernel_overhead_us;
  return p;
}

}  // namespace dak
