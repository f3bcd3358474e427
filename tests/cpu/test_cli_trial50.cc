// The 50th session's trial findings (checkpoints and model loading) end to end: model.safetensors
// beside an index that does not list it is named; rope_scaling without a type is refused; a GGUF
// without tokenizer.ggml.pre gets a notice; a tokenizer or generation file given as the model names
// the folder; an index file given to dak plan stands for its folder; a defaulted num_key_value_heads
// is named; one shard given alone, a PEFT prefix and GPTQ tensors say what they are; unused tensors
// of other dtypes are ignored (inspect lists them); a Hugging Face repository id, a cache folder and
// a big-endian GGUF are named as such; JSON of many keys parses in linear time.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint_test_util.h"
#include "cli_test_util.h"
#include "core/error.h"
#include "core/json_file.h"

namespace {

namespace fs = std::filesystem;
using dak::testing::contains;
using dak::testing::RunResult;
using nlohmann::json;

RunResult run_dak(const std::string& args) { return dak::testing::run_dak_env("", args); }

using dak::testing::fresh_test_dir;

fs::path st_data() { return dak::testing::data_dir() / "safetensors"; }

/// The tiny single-file checkpoint's header and data, split.
std::pair<json, std::string> tiny_safetensors() {
  const std::string bytes = dak::testing::read_bytes(st_data() / "tiny_llama_single" / "model.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return {json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

/// A copy of the tiny checkpoint in `dir` with `edit` applied to its header and `extra` bytes of data
/// appended (for tensors the edit adds at the end), and `config_edit` to its config.json.
void write_tiny(const fs::path& dir, const std::function<void(json&, size_t data_size)>& edit, size_t extra = 0,
                const std::function<void(json&)>& config_edit = {}) {
  auto [header, data] = tiny_safetensors();
  edit(header, data.size());
  data.append(extra, '\0');
  dak::testing::write_bytes(dir / "model.safetensors", dak::testing::safetensors_image(header.dump(), data));
  json config = dak::testing::read_json(st_data() / "tiny_llama_single" / "config.json");
  if (config_edit) config_edit(config);
  std::ofstream(dir / "config.json") << config.dump(1);
}

const std::string kGen = "generate --device cpu --prompt-ids 1,2 -n 1 --model ";

TEST(CliTrial50, ModelSafetensorsBesideAnIndexThatDoesNotListItIsNamed) {
  const fs::path dir = fresh_test_dir("dak_trial50_both");
  fs::copy(st_data() / "tiny_llama_sharded", dir, fs::copy_options::recursive);
  RunResult r = run_dak(kGen + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "beside model.safetensors.index.json")) << r.output;
  fs::copy(st_data() / "tiny_llama_single" / "model.safetensors", dir / "model.safetensors");
  r = run_dak(kGen + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: notice: " + dir.string() +
                                     " holds model.safetensors beside model.safetensors.index.json, which does not "
                                     "list it: using the index and its 2 shards (as vLLM does; transformers would "
                                     "load model.safetensors), ignoring model.safetensors; to run it instead, give "
                                     "its path as the model (--model " +
                                     (dir / "model.safetensors").string() + ")"))
      << r.output;
  // Following it runs the file, without the notice.
  r = run_dak(kGen + (dir / "model.safetensors").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "beside model.safetensors.index.json")) << r.output;
}

TEST(CliTrial50, RopeScalingWithoutATypeIsRefused) {
  const fs::path dir = fresh_test_dir("dak_trial50_rope");
  json config = dak::testing::read_json(st_data() / "tiny_llama_single" / "config.json");
  config["rope_scaling"] = {{"factor", 4.0}};
  std::ofstream(dir / "config.json") << config.dump();
  RunResult r = run_dak("plan --model " + (dir / "config.json").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "rope_scaling has 'factor' but no 'rope_type' (or 'type')")) << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   add \"rope_type\" to it in config.json")) << r.output;
  // Only rope_theta (transformers 5 writes it so), or an empty section: the default rope.
  config["rope_scaling"] = {{"rope_theta", 10000.0}};
  std::ofstream(dir / "config.json") << config.dump();
  EXPECT_EQ(run_dak("plan --model " + (dir / "config.json").string()).exit_code, 0);
  config["rope_scaling"] = json::object();
  std::ofstream(dir / "config.json") << config.dump();
  EXPECT_EQ(run_dak("plan --model " + (dir / "config.json").string()).exit_code, 0);
}

TEST(CliTrial50, AGgufWithoutAPreTokenizerGetsANotice) {
  const fs::path smol = fs::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf";
  RunResult r = run_dak("generate --device cpu --prompt hi -n 1 --model " + smol.string());  // .pre = smollm
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "pre-tokenizer")) << r.output;
  // The same file with the key renamed (same length: the layout stays) has none.
  std::string bytes = dak::testing::read_bytes(smol);
  const size_t at = bytes.find("tokenizer.ggml.pre");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 17] = 'x';
  const fs::path dir = fresh_test_dir("dak_trial50_pre");
  dak::testing::write_bytes(dir / "no_pre.gguf", bytes);
  r = run_dak("generate --device cpu --prompt hi -n 1 --model " + (dir / "no_pre.gguf").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "names no pre-tokenizer (tokenizer.ggml.pre): its text is split as llama.cpp's "
                                 "'default'"))
      << r.output;
}

TEST(CliTrial50, AFolderSideFileGivenAsTheModelNamesTheFolder) {
  const fs::path dir = fresh_test_dir("dak_trial50_side");
  fs::copy(st_data() / "tiny_llama_single", dir, fs::copy_options::recursive);
  std::ofstream(dir / "tokenizer_config.json") << R"({"model_type": "gpt2", "tokenizer_class": "GPT2Tokenizer"})";
  std::ofstream(dir / "generation_config.json") << R"({"bos_token_id": 1})";
  // A browser's second download of the file (Chrome, Firefox) is known by its name too.
  fs::copy_file(dir / "tokenizer_config.json", dir / "tokenizer_config (1).json");
  fs::copy_file(dir / "generation_config.json", dir / "generation_config(2).json");
  for (const std::string& cmd : {std::string("plan --model "), kGen, std::string("inspect ")}) {
    for (const char* file :
         {"tokenizer_config.json", "generation_config.json", "tokenizer_config (1).json",
          "generation_config(2).json"}) {
      const RunResult r = run_dak(cmd + "'" + (dir / file).string() + "'");
      EXPECT_EQ(r.exit_code, 1) << cmd << r.output;
      EXPECT_TRUE(contains(r.output, "'" + (dir / file).string() + "' holds the model's ")) << cmd << r.output;
      EXPECT_TRUE(contains(r.output, "not its config (config.json) or weights")) << cmd << r.output;
      EXPECT_TRUE(contains(r.output, "fix:   give the model folder instead, which holds config.json and the weights: " +
                                         dir.string()))
          << cmd << r.output;
    }
  }
  // The index of a sharded checkpoint stands for its folder in dak plan, as it does in dak generate.
  const std::string index = (st_data() / "tiny_llama_sharded" / "model.safetensors.index.json").string();
  RunResult r = run_dak("plan --model " + index);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "model     tiny_llama_sharded (llama)")) << r.output;
  EXPECT_EQ(run_dak(kGen + index).exit_code, 0);
}

TEST(CliTrial50, ADefaultedKvHeadCountIsNamed) {
  const fs::path dir = fresh_test_dir("dak_trial50_kv");
  // The tiny checkpoint has 2 heads and 1 kv head: without the key, llama's default is 2 kv heads.
  write_tiny(dir, [](json&, size_t) {}, 0, [](json& c) { c.erase("num_key_value_heads"); });
  RunResult r = run_dak(kGen + dir.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [8, 16], but the config "
                                 "needs [16, 16] (config.json has no num_key_value_heads, so it took the transformers "
                                 "default of model_type llama: 2)"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   add num_key_value_heads to config.json with the checkpoint's value (8 rows / "
                                 "head_dim 8 = 1 here)"))
      << r.output;
  // A config before GQA (no key, as many kv heads as heads) that matches its checkpoint: no notice.
  const fs::path mha = fresh_test_dir("dak_trial50_mha");
  write_tiny(
      mha,
      [](json& h, size_t end) {
        // k_proj and v_proj of 2 kv heads: 16 rows each, appended.
        h["model.layers.0.self_attn.k_proj.weight"] = {{"dtype", "F32"}, {"shape", {16, 16}},
                                                       {"data_offsets", {end, end + 1024}}};
        h["model.layers.0.self_attn.v_proj.weight"] = {{"dtype", "F32"}, {"shape", {16, 16}},
                                                       {"data_offsets", {end + 1024, end + 2048}}};
        h["model.layers.1.self_attn.k_proj.weight"] = {{"dtype", "F32"}, {"shape", {16, 16}},
                                                       {"data_offsets", {end + 2048, end + 3072}}};
        h["model.layers.1.self_attn.v_proj.weight"] = {{"dtype", "F32"}, {"shape", {16, 16}},
                                                       {"data_offsets", {end + 3072, end + 4096}}};
      },
      4096, [](json& c) { c.erase("num_key_value_heads"); });
  r = run_dak(kGen + mha.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "num_key_value_heads")) << r.output;
  // Mistral's default is 8 kv heads, which 4 heads cannot share.
  std::ofstream(dir / "mistral.json") << R"({"model_type": "mistral", "num_attention_heads": 4, "hidden_size": 64})";
  r = run_dak("plan --model " + (dir / "mistral.json").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "num_attention_heads 4 is not a multiple of num_key_value_heads 8 (config.json has no "
                                 "num_key_value_heads: 8 is the transformers default of model_type mistral)"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   add num_key_value_heads to config.json")) << r.output;
}

TEST(CliTrial50, WhatACheckpointHoldsInsteadOfAMissingTensorIsSaid) {
  // One shard alone.
  const fs::path shards = st_data() / "tiny_llama_sharded";
  bool named = false;
  for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    const RunResult r = run_dak(kGen + (shards / shard).string());
    EXPECT_EQ(r.exit_code, 1) << r.output;
    if (contains(r.output, "missing tensor")) {
      named = true;
      EXPECT_TRUE(contains(r.output, std::string("; ") + shard + " is one shard of a sharded checkpoint")) << r.output;
      EXPECT_TRUE(contains(r.output, "fix:   give the folder that holds all the shards and "
                                     "model.safetensors.index.json: --model " + shards.string()))
          << r.output;
    }
  }
  EXPECT_TRUE(named);
  // A PEFT model saved unmerged: every name behind "base_model.model.".
  const fs::path peft = fresh_test_dir("dak_trial50_peft");
  write_tiny(peft, [](json& h, size_t) {
    json renamed;
    for (auto& [k, v] : h.items()) renamed[k == "__metadata__" ? k : "base_model.model." + k] = v;
    h = renamed;
  });
  RunResult r = run_dak(kGen + peft.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "its tensor names start with 'base_model.model.'")) << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   this looks like a PEFT (LoRA) model saved unmerged")) << r.output;
}

TEST(CliTrial50, TensorsInOtherDtypesAreRefusedOnlyWhereTheModelNeedsThem) {
  // An unused int64 buffer (position_ids): ignored, as transformers ignores it; inspect lists it.
  const fs::path buffer = fresh_test_dir("dak_trial50_i64");
  write_tiny(buffer, [](json& h, size_t end) {
    h["model.layers.0.self_attn.rotary_emb.position_ids"] = {{"dtype", "I64"}, {"shape", {8}},
                                                            {"data_offsets", {end, end + 64}}};
  }, 64);
  RunResult r = run_dak(kGen + buffer.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run_dak("inspect " + buffer.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "not read      1 tensor in dtypes dak does not use, which the model does not need:\n"
                                 "  model.layers.0.self_attn.rotary_emb.position_ids  I64  [8]"))
      << r.output;
  const json j = json::parse(run_dak("inspect --output json " + buffer.string()).output);
  ASSERT_EQ(j["unread_tensors"].size(), 1u) << j.dump();
  EXPECT_EQ(j["unread_tensors"][0]["dtype"], "I64");
  // Its bytes are still checked: a size that does not match its shape is an error.
  const fs::path bad = fresh_test_dir("dak_trial50_i64_bad");
  write_tiny(bad, [](json& h, size_t end) {
    h["position_ids"] = {{"dtype", "I64"}, {"shape", {8}}, {"data_offsets", {end, end + 60}}};
  }, 64);
  r = run_dak(kGen + bad.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "spans 60 bytes, but its shape and dtype need 64 bytes")) << r.output;
  // A weight the model needs in f64: refused for its dtype.
  const fs::path f64 = fresh_test_dir("dak_trial50_f64");
  write_tiny(f64, [](json& h, size_t end) {
    const json norm = h["model.norm.weight"];  // 16 f32 values
    h["model.norm.weight"] = {{"dtype", "F64"}, {"shape", norm["shape"]}, {"data_offsets", {end, end + 128}}};
  }, 128);
  r = run_dak(kGen + f64.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "tensor 'model.norm.weight' has dtype F64, which dak does not support")) << r.output;
  // GPTQ: q_proj.qweight (int32) in place of q_proj.weight, with the config's quantization_config.
  const fs::path gptq = fresh_test_dir("dak_trial50_gptq");
  write_tiny(
      gptq,
      [](json& h, size_t end) {
        h.erase("model.layers.0.self_attn.q_proj.weight");
        h["model.layers.0.self_attn.q_proj.qweight"] = {{"dtype", "I32"}, {"shape", {2, 16}},
                                                        {"data_offsets", {end, end + 128}}};
      },
      128, [](json& c) { c["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}}; });
  r = run_dak(kGen + gptq.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "missing tensor 'model.layers.0.self_attn.q_proj.weight' (llama model, 2 layers): the "
                                 "checkpoint holds quantized weights ('model.layers.0.self_attn.q_proj.qweight', I32) "
                                 "in its place (config.json's quantization_config: quant_method 'gptq')"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "use the model's unquantized release, or a GGUF conversion of it")) << r.output;
  EXPECT_FALSE(contains(r.output, "torch.bfloat16")) << r.output;
}

TEST(CliTrial50, RepositoryIdsCacheFoldersAndBigEndianFilesAreNamed) {
  RunResult r = run_dak(kGen + "HuggingFaceTB/SmolLM2-135M-Instruct");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string hint = "; if 'HuggingFaceTB/SmolLM2-135M-Instruct' is a Hugging Face repository: dak reads models "
                           "from local files and downloads nothing, so download it first (e.g. hf download "
                           "HuggingFaceTB/SmolLM2-135M-Instruct --local-dir SmolLM2-135M-Instruct, huggingface_hub's "
                           "command) and give that folder";
  EXPECT_TRUE(contains(r.output, hint)) << r.output;
  r = run_dak(kGen + "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/tree/main");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, hint)) << r.output;
  EXPECT_TRUE(contains(r.output, "  fix:   check the path")) << r.output;
  r = run_dak(kGen + "no/such.gguf");  // a file path: no repository hint
  EXPECT_FALSE(contains(r.output, "huggingface-cli")) << r.output;

  const fs::path cache = fresh_test_dir("dak_trial50_cache") / "models--org--tiny";
  fs::create_directories(cache / "snapshots");
  fs::create_directories(cache / "blobs");
  fs::copy(st_data() / "tiny_llama_single", cache / "snapshots" / "0123abc", fs::copy_options::recursive);
  r = run_dak(kGen + cache.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "it looks like a Hugging Face cache folder, which keeps each download in "
                                 "snapshots/<revision>/"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   give the snapshot folder: --model " + (cache / "snapshots/0123abc").string()))
      << r.output;
  EXPECT_EQ(run_dak(kGen + (cache / "snapshots/0123abc").string()).exit_code, 0);
  // dak plan says the same; with two snapshots the fix names the one refs/main names.
  fs::copy(st_data() / "tiny_llama_single", cache / "snapshots" / "ffff000", fs::copy_options::recursive);
  fs::create_directories(cache / "refs");
  std::ofstream(cache / "refs" / "main") << "0123abc";
  r = run_dak("plan --model " + cache.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "it looks like a Hugging Face cache folder")) << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   give one of its 2 snapshot folders, e.g. the one refs/main names: --model " +
                                     (cache / "snapshots/0123abc").string()))
      << r.output;

  const fs::path be = fresh_test_dir("dak_trial50_be");
  std::string gguf = dak::testing::read_bytes(dak::testing::data_dir() / "gguf" / "tiny_llama.gguf");
  const uint32_t swapped = __builtin_bswap32(uint32_t(3));
  std::memcpy(gguf.data() + 4, &swapped, 4);
  dak::testing::write_bytes(be / "be.gguf", gguf);
  r = run_dak("inspect " + (be / "be.gguf").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "a big-endian GGUF file (version 3 with its bytes swapped)")) << r.output;

  // A GGUF whose block_count is below its layers: the file's names and metadata, not "the config".
  gguf = dak::testing::read_bytes(dak::testing::data_dir() / "gguf" / "tiny_llama.gguf");
  const std::string key = "llama.block_count";
  const size_t at = gguf.find(key);
  ASSERT_NE(at, std::string::npos);
  uint32_t type = 0, layers = 0;
  std::memcpy(&type, gguf.data() + at + key.size(), 4);
  std::memcpy(&layers, gguf.data() + at + key.size() + 4, 4);
  ASSERT_EQ(type, 4u);  // uint32
  ASSERT_GE(layers, 2u);
  const uint32_t fewer = layers - 1;
  std::memcpy(gguf.data() + at + key.size() + 4, &fewer, 4);
  dak::testing::write_bytes(be / "fewer.gguf", gguf);
  r = run_dak("inspect " + (be / "fewer.gguf").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "tensor 'blk." + std::to_string(fewer) + ".")) << r.output;
  EXPECT_TRUE(contains(r.output, "but the file's metadata (block_count) says " + std::to_string(fewer) + " layer"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   the GGUF file's metadata does not match its tensors")) << r.output;
}

TEST(CliTrial50, TheRecheckOfTheFixes) {
  // (rope_scaling beside rope_parameters: test_model_config.cc, RopeScalingBesideRopeParametersWins.)
  const fs::path dir = fresh_test_dir("dak_trial50_recheck");
  json config = dak::testing::read_json(st_data() / "tiny_llama_single" / "config.json");
  // A section of theta and partial_rotary_factor 1 (transformers 5) needs no type.
  config["rope_parameters"] = {{"rope_theta", 5000.0}, {"partial_rotary_factor", 1.0}};
  std::ofstream(dir / "partial1.json") << config.dump();
  RunResult r = run_dak("plan --model " + (dir / "partial1.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;

  // A PEFT adapter's folder, its adapter_config.json or its weights: named as an adapter, with its base.
  const fs::path ad = fresh_test_dir("dak_trial50_adapter");
  std::ofstream(ad / "adapter_config.json") << R"({"base_model_name_or_path": "org/base", "peft_type": "LORA"})";
  fs::copy(st_data() / "tiny_llama_single" / "model.safetensors", ad / "adapter_model.safetensors");
  for (const fs::path& m : {ad, ad / "adapter_config.json", ad / "adapter_model.safetensors"}) {
    for (const std::string& cmd : {kGen, std::string("plan --model ")}) {
      r = run_dak(cmd + m.string());
      EXPECT_EQ(r.exit_code, 1) << cmd << m << r.output;
      EXPECT_TRUE(contains(r.output, "the folder holds a PEFT (LoRA) adapter (adapter_config.json), not a model"))
          << cmd << m << r.output;
      EXPECT_TRUE(contains(r.output, "merge the adapter into its base model (org/base)")) << cmd << m << r.output;
    }
  }

  // A quantization_config alone blames nothing: a missing norm is a completeness matter.
  const fs::path q = fresh_test_dir("dak_trial50_qcfg");
  write_tiny(q, [](json& h, size_t) { h.erase("model.norm.weight"); }, 0,
             [](json& c) { c["quantization_config"] = {{"quant_method", "fp8"}}; });
  r = run_dak(kGen + q.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "missing tensor 'model.norm.weight'")) << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   check that the checkpoint is complete")) << r.output;
  EXPECT_FALSE(contains(r.output, "quantized")) << r.output;

  // dak plan on a quantized checkpoint's config plans bf16 weights, and says so.
  r = run_dak("plan --model " + q.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "has a quantization_config (quant_method fp8): the plan counts the model's weights "
                                 "in bf16"))
      << r.output;
  EXPECT_FALSE(contains(run_dak("plan --model " + (st_data() / "tiny_llama_single").string()).output,
                        "quantization_config"));

  // dak perplexity says a GGUF has no pre-tokenizer too (the split sets the score).
  std::string bytes = dak::testing::read_bytes(fs::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf");
  bytes[bytes.find("tokenizer.ggml.pre") + 17] = 'x';
  dak::testing::write_bytes(dir / "no_pre.gguf", bytes);
  std::ofstream(dir / "text.txt") << "The three primary colors are red, yellow and blue. They mix into the others.";
  r = run_dak("perplexity --device cpu --model " + (dir / "no_pre.gguf").string() + " --file " +
              (dir / "text.txt").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "names no pre-tokenizer (tokenizer.ggml.pre)")) << r.output;

  // A --no-staged plan: a staged path in it is refused, and the remake command keeps the planner's options.
  const std::string plan = (dir / "nostaged.json").string();
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 1 --prompt-len 2 --gen-len 4 --offload-ratio 0.3 --no-staged "
                    "--tile-rows 64 --allocator uniform --profile h200-default --output json > " + plan).exit_code,
            0);
  json p = dak::testing::read_json(plan);
  for (json& op : p["operators"]) {
    if (op["kind"] == "linear" && op["host_bytes"].get<int64_t>() > 0) {
      op["data_path"] = "staged";
      break;
    }
  }
  std::ofstream(dir / "staged.json") << p.dump(1);
  r = run_dak("generate --model llama-2-7b --random-weights --prompt-ids 1,2 -n 4 --plan " +
              (dir / "staged.json").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "data_path 'staged' in a plan made with --no-staged")) << r.output;
  r = run_dak("generate --model llama-2-7b --random-weights --prompt-ids 1,2,3,4,5,6,7,8,9 -n 4 --plan " + plan);
  EXPECT_EQ(r.exit_code, 1) << r.output;  // more positions than the plan's: remade with its options
  EXPECT_TRUE(contains(r.output, " --no-staged")) << r.output;
  EXPECT_TRUE(contains(r.output, " --tile-rows 64")) << r.output;
  EXPECT_TRUE(contains(r.output, " --allocator uniform")) << r.output;
}

TEST(CliTrial50, ASafetensorsFileIsKnownByItsContentWhateverItsName) {
  const fs::path dir = fresh_test_dir("dak_trial50_named");
  fs::copy(st_data() / "tiny_llama_single" / "config.json", dir / "config.json");
  fs::copy(st_data() / "tiny_llama_single" / "model.safetensors", dir / "weights.bin");
  fs::copy(st_data() / "tiny_llama_single" / "model.safetensors", dir / "weights.gguf");
  const RunResult named = run_dak(kGen + (dir / "weights.bin").string());
  EXPECT_EQ(named.exit_code, 0) << named.output;
  EXPECT_EQ(dak::testing::run_dak_env("", kGen + (dir / "weights.bin").string(), false).output,
            dak::testing::run_dak_env("", kGen + (st_data() / "tiny_llama_single").string(), false).output);
  const RunResult gguf = run_dak(kGen + (dir / "weights.gguf").string());
  EXPECT_EQ(gguf.exit_code, 1) << gguf.output;
  EXPECT_TRUE(contains(gguf.output, "not a GGUF file: its bytes begin as a safetensors file's")) << gguf.output;
  EXPECT_TRUE(contains(gguf.output, "fix:   rename it to .safetensors")) << gguf.output;
  // Other bytes under another name stay unrecognized.
  std::ofstream(dir / "notes.bin") << "hello, not weights";
  const RunResult other = run_dak(kGen + (dir / "notes.bin").string());
  EXPECT_EQ(other.exit_code, 1) << other.output;
  EXPECT_TRUE(contains(other.output, "unrecognized checkpoint file")) << other.output;
}

TEST(CliTrial50, ManyKeysParseAndADuplicateAmongThemIsFound) {
  // A safetensors header of 200k tensors took minutes (the duplicate-key check made the parser rescan
  // each object); the SAX pass is linear. No timing here: ctest's timeout would stop the old one.
  std::string text = "{";
  for (int i = 0; i < 200000; ++i) text += "\"t" + std::to_string(i) + "\":{\"a\":[1,2]},";
  text += "\"t7\":{\"a\":[]}}";
  try {
    (void)dak::parse_json_text(text, "the header", "h.json", "fix it");
    FAIL() << "no error";
  } catch (const dak::Error& e) {
    EXPECT_TRUE(contains(e.what(), "the header has the key \"t7\" twice in one object")) << e.what();
  }
  text.replace(text.rfind("\"t7\""), 4, "\"u7\"");
  EXPECT_EQ(dak::parse_json_text(text, "the header", "h.json", "fix it").size(), 200001u);
  // Nesting beyond the limit is still refused before the document is built.
  EXPECT_THROW(dak::parse_json_text(std::string(100, '[') + std::string(100, ']'), "x", "x.json", "f"), dak::Error);
}

}  // namespace
