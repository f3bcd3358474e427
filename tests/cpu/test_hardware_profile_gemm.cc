// The optional "tiered_gemm" section of the hardware profile: round trip, the exact-match lookup,
// a profile without the section (the shipped one), and invalid entries refused with dak::Error.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/hardware_profile.h"
#include "error_test_util.h"

namespace dak {
namespace {

using dak::testing::expect_error;
using nlohmann::json;

TieredGemmTuning entry(int64_t M, int64_t N, int64_t K, int64_t m_host) {
  TieredGemmTuning t;
  t.M = M;
  t.N = N;
  t.K = K;
  t.m_host = m_host;
  t.host_ctas = m_host > 0 ? 8 : 0;
  t.host_stages = m_host > 0 ? 2 : 1;
  t.hbm_ctas = m_host < M ? 124 : 0;
  t.hbm_stages = 16;
  t.k_splits = 4;
  t.time_us = 312.5;
  t.eb_gbps = double(M) * double(K) * 2 / 312.5e-6 * 1e-9;
  return t;
}

HardwareProfile with_gemms() {
  HardwareProfile p = HardwareProfile::h200_default();
  p.tiered_gemm = {entry(12288, 8, 4096, 0), entry(12288, 8, 4096, 1229), entry(12288, 8, 4096, 12288),
                   entry(4096, 512, 11008, 410)};
  return p;
}

/// The JSON of with_gemms() with tiered_gemm[0][key] replaced by `value`.
json with_field(const std::string& key, const json& value, size_t index = 1) {
  json j = with_gemms().to_json();
  j["tiered_gemm"][index][key] = value;
  return j;
}

TEST(HardwareProfileGemm, SectionRoundTripsAndLooksUpExactEntries) {
  const HardwareProfile p = with_gemms();
  const json j = p.to_json();
  ASSERT_TRUE(j.contains("tiered_gemm"));
  ASSERT_EQ(j["tiered_gemm"].size(), 4u);
  EXPECT_EQ(j["tiered_gemm"][1]["m_host"], 1229);
  EXPECT_EQ(j["tiered_gemm"][1]["host_ctas"], 8);
  const HardwareProfile back = HardwareProfile::from_json(j, "round trip");
  EXPECT_EQ(back, p);
  // Through text as well (what `dak profile` writes and `dak plan --profile` reads).
  EXPECT_EQ(HardwareProfile::from_json(json::parse(j.dump(2)), "text"), p);

  const TieredGemmTuning* t = back.find_tiered_gemm(12288, 8, 4096, 1229);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(*t, p.tiered_gemm[1]);
  ASSERT_NE(back.find_tiered_gemm(4096, 512, 11008, 410), nullptr);
  EXPECT_EQ(back.find_tiered_gemm(4096, 512, 11008, 410)->K, 11008);
  // Exact match only: no nearest neighbour for another host row count, N, M or K.
  EXPECT_EQ(back.find_tiered_gemm(12288, 8, 4096, 1228), nullptr);
  EXPECT_EQ(back.find_tiered_gemm(12288, 16, 4096, 1229), nullptr);
  EXPECT_EQ(back.find_tiered_gemm(12289, 8, 4096, 1229), nullptr);
  EXPECT_EQ(back.find_tiered_gemm(12288, 8, 4104, 1229), nullptr);
}

TEST(HardwareProfileGemm, MissingSectionMeansNoEntries) {
  const HardwareProfile shipped = HardwareProfile::h200_default();  // profiles/h200-default.json has none
  EXPECT_TRUE(shipped.tiered_gemm.empty());
  EXPECT_EQ(shipped.find_tiered_gemm(12288, 8, 4096, 0), nullptr);
  json j = with_gemms().to_json();
  j.erase("tiered_gemm");
  const HardwareProfile p = HardwareProfile::from_json(j, "no section");
  EXPECT_TRUE(p.tiered_gemm.empty());
  // An empty section is the same as none.
  j["tiered_gemm"] = json::array();
  EXPECT_EQ(HardwareProfile::from_json(j, "empty section"), p);
  // The section takes part in equality.
  EXPECT_NE(with_gemms(), shipped);
}

/// An optional field of tiered_gemm[index] (set to a value other than 1 in `p`): written, read back
/// equal, and read as 1 from a profile without it (one written before the field existed).
void expect_optional_field(const HardwareProfile& p, size_t index, const std::string& key,
                           int64_t dak::TieredGemmTuning::* field) {
  const json j = p.to_json();
  EXPECT_EQ(j["tiered_gemm"][index][key], p.tiered_gemm[index].*field) << key;
  EXPECT_EQ(HardwareProfile::from_json(j, "round trip"), p) << key;
  json old = j;
  old["tiered_gemm"][index].erase(key);
  EXPECT_EQ(HardwareProfile::from_json(old, "old").tiered_gemm[index].*field, 1) << key;
}

TEST(HardwareProfileGemm, MulticastClusterFieldIsOptionalAndChecked) {
  // Written always, read when present (profiles of earlier versions have none: 1).
  HardwareProfile p = with_gemms();
  p.tiered_gemm[3].cluster = 4;
  expect_optional_field(p, 3, "cluster", &dak::TieredGemmTuning::cluster);
  expect_error([] { HardwareProfile::from_json(with_field("cluster", 3), "three"); },
               {"tiered_gemm[1]", "cluster 3", "1, 2 or 4"});
  // Entry 1 has 8 host and 124 HBM CTAs: whole clusters of 4; 6 host CTAs are not.
  EXPECT_NO_THROW(HardwareProfile::from_json(with_field("cluster", 4), "four"));
  json bad = with_field("cluster", 4);
  bad["tiered_gemm"][1]["host_ctas"] = 6;
  expect_error([&] { HardwareProfile::from_json(bad, "six"); }, {"tiered_gemm[1]", "whole clusters of 4"});
}

TEST(HardwareProfileGemm, AccumulationChunksFieldIsOptionalAndChecked) {
  // Written always, read when present (profiles before session 36 have none: 1); chunks only with
  // k_splits 1, as TieredGemmSchedule::validate requires.
  HardwareProfile p = with_gemms();
  p.tiered_gemm[1].k_splits = 1;
  p.tiered_gemm[1].k_chunks = 4;
  expect_optional_field(p, 1, "k_chunks", &dak::TieredGemmTuning::k_chunks);
  expect_error([] { HardwareProfile::from_json(with_field("k_chunks", 0), "zero"); }, {"tiered_gemm[1]", "k_chunks"});
  // Only the chunk counts the schedule takes (new-user trial: 2, 3 and 1000 loaded without a word).
  for (const int64_t bad : {2, 3, 5, 1000}) {
    json j2 = with_field("k_chunks", bad);
    j2["tiered_gemm"][1]["k_splits"] = 1;
    expect_error([&] { HardwareProfile::from_json(j2, "odd"); },
                 {"tiered_gemm[1]", fmt::format("k_chunks {} is not 1 or 4", bad), "give 1, or 4 with k_splits 1"});
  }
  expect_error([] { HardwareProfile::from_json(with_field("k_chunks", 4), "with splits"); },
               {"tiered_gemm[1]", "k_chunks 4 with k_splits 4", "k_splits 1 only"});
}

TEST(HardwareProfileGemm, InvalidEntriesAreRefused) {
  expect_error([] { HardwareProfile::from_json(with_field("host_ctas", -1), "neg"); },
               {"tiered_gemm[1]", "host_ctas", ">= 0", "-1"});
  expect_error([] { HardwareProfile::from_json(with_field("hbm_ctas", -4), "neg"); }, {"tiered_gemm[1]", "hbm_ctas"});
  expect_error([] { HardwareProfile::from_json(with_field("host_stages", 0), "zero"); }, {"host_stages", "> 0"});
  expect_error([] { HardwareProfile::from_json(with_field("hbm_stages", -2), "neg"); }, {"hbm_stages"});
  expect_error([] { HardwareProfile::from_json(with_field("k_splits", 0), "zero"); }, {"k_splits"});
  expect_error([] { HardwareProfile::from_json(with_field("M", 0), "zero"); }, {"'M'"});
  expect_error([] { HardwareProfile::from_json(with_field("m_host", -1), "neg"); }, {"m_host"});
  expect_error([] { HardwareProfile::from_json(with_field("m_host", 12289), "big"); }, {"m_host 12289", "M = 12288"});
  expect_error([] { HardwareProfile::from_json(with_field("time_us", 0.0), "zero"); }, {"time_us"});
  expect_error([] { HardwareProfile::from_json(with_field("eb_gbps", -1.0), "neg"); }, {"eb_gbps"});
  expect_error([] { HardwareProfile::from_json(with_field("host_ctas", 2.5), "float"); }, {"host_ctas", "integer"});
  expect_error([] { HardwareProfile::from_json(with_field("host_ctas", "8"), "text"); }, {"host_ctas"});
  // Host rows but no host CTA, HBM rows but no HBM CTA.
  expect_error([] { HardwareProfile::from_json(with_field("host_ctas", 0), "no host CTA"); }, {"at least one CTA"});
  expect_error([] { HardwareProfile::from_json(with_field("hbm_ctas", 0), "no HBM CTA"); }, {"at least one CTA"});
  // More CTAs than SMs (132 in the default profile).
  expect_error([] { HardwareProfile::from_json(with_field("hbm_ctas", 130), "too many"); }, {"exceed the profile's sm_count of 132"});
  // A missing field, a wrong type for the section, a duplicate shape.
  {
    json j = with_gemms().to_json();
    j["tiered_gemm"][0].erase("hbm_stages");
    expect_error([&] { HardwareProfile::from_json(j, "missing"); }, {"lacks field 'hbm_stages'"});
  }
  {
    json j = with_gemms().to_json();
    j["tiered_gemm"] = json::object();
    expect_error([&] { HardwareProfile::from_json(j, "object"); }, {"'tiered_gemm' must be an array"});
  }
  {
    json j = with_gemms().to_json();
    j["tiered_gemm"].push_back(j["tiered_gemm"][1]);
    j["tiered_gemm"][4]["time_us"] = 100.0;
    expect_error([&] { HardwareProfile::from_json(j, "duplicate"); }, {"tiered_gemm[4]", "second entry", "m_host=1229"});
  }
  // The valid document itself loads (the failures above are the edits, not the base).
  EXPECT_NO_THROW(HardwareProfile::from_json(with_gemms().to_json(), "base"));
}

}  // namespace
}  // namespace dak
