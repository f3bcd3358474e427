// Op graph of the shipped configs against independent oracles: the published parameter counts of
// the checkpoints (model cards / `num_parameters()`), the KV-cache formula, GEMM FLOP counts from
// the HF module shapes, and the checkpoint tensor names of modeling_llama.py / modeling_opt.py.
#include <gtest/gtest.h>

#include <string>

#include "core/config_locator.h"
#include "core/error.h"
#include "core/hardware_profile.h"
#include "core/op_graph.h"

namespace dak {
namespace {

ModelConfig shipped(const std::string& name) { return locate_model_config(name).config; }

OpGraph decode_graph(const std::string& name, int64_t batch = 8, int64_t prompt = 32, int64_t gen = 32) {
  StepShape s;
  s.batch = batch, s.prompt_len = prompt, s.gen_len = gen, s.phase = Phase::kDecode;
  return build_op_graph(shipped(name), s);
}

const Op& find_op(const OpGraph& g, const std::string& name) {
  for (const Op& op : g.ops)
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}

// Published parameter counts (bf16: 2 bytes each): weights + fixed bytes of the graph must equal them.
TEST(OpGraph, WeightBytesMatchPublishedParameterCounts) {
  struct Case {
    const char* name;
    int64_t params;
  };
  for (const Case& c : {Case{"opt-6.7b", 6'658'473'984}, Case{"llama-2-7b", 6'738'415'616},
                        Case{"llama-2-70b", 68'976'648'192}, Case{"llama-3-8b", 8'030'261'248}}) {
    const OpGraph g = decode_graph(c.name);
    EXPECT_EQ(g.weight_resident_bytes() + g.fixed_bytes(), 2 * c.params) << c.name;
  }
}

TEST(OpGraph, TheLargestTileCountsWithoutOverflow) {
  // fuzz_plan_json (session 50): a plan file's tile_n 2^63 - 1 overflowed the rounded-up division of
  // a linear's work items. Any positive tile is one item per unit beyond the pass's tokens.
  StepShape s;
  s.batch = 3, s.prompt_len = 4, s.gen_len = 4;
  s.tile_n = INT64_MAX;
  const OpGraph g = build_op_graph(shipped("llama-2-7b"), s);
  int64_t linears = 0;
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::kLinear) continue;
    ++linears;
    EXPECT_EQ(op.items_per_unit, 1) << op.name;
  }
  EXPECT_GT(linears, 0);
  s.tile_n = 2;
  for (const Op& op : build_op_graph(shipped("llama-2-7b"), s).ops)
    if (op.kind == OpKind::kLinear) EXPECT_EQ(op.items_per_unit, 2) << op.name;  // 3 tokens in tiles of 2
}

TEST(OpGraph, KvBytesFollowTheCacheFormula) {
  // B × (prompt + gen) × layers × (K and V) × Hkv × D × 2 bytes.
  const OpGraph g70 = decode_graph("llama-2-70b", 16, 100, 28);
  EXPECT_EQ(g70.kv_resident_bytes(), int64_t(16) * 128 * 80 * 2 * 8 * 128 * 2);
  const OpGraph opt = decode_graph("opt-30b", 512, 32, 32);
  EXPECT_EQ(opt.kv_resident_bytes(), int64_t(512) * 64 * 48 * 2 * 56 * 128 * 2);
}

TEST(OpGraph, LlamaLayerHasFusedOperatorsWithCheckpointNames) {
  const OpGraph g = decode_graph("llama-2-70b", 4);
  const Op& qkv = find_op(g, "layers.3.qkv_proj");
  EXPECT_EQ(qkv.kind, OpKind::kLinear);
  EXPECT_EQ(qkv.m, 8192 + 2 * 1024);  // H·D + 2·Hkv·D (GQA 64:8)
  EXPECT_EQ(qkv.k, 8192);
  EXPECT_EQ(qkv.n, 4);
  ASSERT_EQ(qkv.tensors.size(), 3u);
  EXPECT_EQ(qkv.tensors[0], (TensorPart{"model.layers.3.self_attn.q_proj.weight", 8192}));
  EXPECT_EQ(qkv.tensors[1], (TensorPart{"model.layers.3.self_attn.k_proj.weight", 1024}));
  EXPECT_EQ(qkv.tensors[2], (TensorPart{"model.layers.3.self_attn.v_proj.weight", 1024}));
  const Op& gu = find_op(g, "layers.3.gate_up_proj");
  EXPECT_EQ(gu.m, 2 * 28672);
  EXPECT_EQ(gu.tensors[1].name, "model.layers.3.mlp.up_proj.weight");
  const Op& head = find_op(g, "lm_head");
  EXPECT_EQ(head.tensors[0].name, "lm_head.weight");
  EXPECT_EQ(head.units(), (32000 + 127) / 128);
  EXPECT_EQ(head.host_rows(head.units()), 32000);  // last tile is partial
  // Per layer: attn_norm, qkv, attention, o, mlp_norm, gate_up, down; plus embed, final norm, head.
  EXPECT_EQ(g.ops.size(), size_t(80 * 7 + 3));
  // Kernels as the engine launches them: the attention (RoPE and the KV append ride in qkv's
  // epilogue at 4 tokens; a prefill launches them), gate_up + the activation (priced as a kernel
  // even where it rides in gate_up's epilogue: op_graph.cc says why).
  EXPECT_EQ(find_op(g, "layers.3.attention").kernels, 1);
  EXPECT_EQ(find_op(decode_graph("llama-2-70b", 64), "layers.3.attention").kernels, 2);
  EXPECT_EQ(gu.kernels, 2);
  EXPECT_EQ(qkv.kernels, 1);
  EXPECT_EQ(find_op(g, "layers.3.down_proj").kernels, 1);
}

TEST(OpGraph, OptHasLearnedPositionsTiedHeadAndBiases) {
  const OpGraph g = decode_graph("opt-6.7b");
  const Op& emb = find_op(g, "embed_tokens");
  EXPECT_EQ(emb.tied_to, "lm_head");
  EXPECT_FALSE(emb.splittable);
  const Op& pos = find_op(g, "embed_positions");
  EXPECT_EQ(pos.m, 2048 + 2);  // OPTLearnedPositionalEmbedding offset 2
  EXPECT_EQ(find_op(g, "lm_head").tensors[0].name, "model.decoder.embed_tokens.weight");
  EXPECT_EQ(find_op(g, "layers.0.fc1").tensors[0].name, "model.decoder.layers.0.fc1.weight");
  EXPECT_EQ(find_op(g, "layers.0.o_proj").tensors[0].name, "model.decoder.layers.0.self_attn.out_proj.weight");
  EXPECT_EQ(find_op(g, "layers.0.qkv_proj").fixed_bytes, 3 * 4096 * 2);   // q/k/v biases
  EXPECT_EQ(find_op(g, "layers.0.attn_norm").fixed_bytes, 2 * 4096 * 2);  // LayerNorm weight + bias
  EXPECT_EQ(find_op(g, "layers.0.fc1").kernels, 1);  // ReLU rides in the GEMM epilogue
}

// The engine carries an RMSNorm between two linears in the tiered GEMMs' epilogues in passes of up
// to kTieredDecodeMaxTokens tokens (gpu_engine.cc, fused_norm): those norms launch nothing, layer
// 0's attention norm and the final norm still do; larger passes and LayerNorm models launch each.
TEST(OpGraph, FusedRmsNormsLaunchNothingInSmallPasses) {
  auto norm_kernels = [](const OpGraph& g) {
    int64_t n = 0, ops = 0;
    for (const Op& op : g.ops) {
      if (op.kind != OpKind::kNorm) continue;
      n += op.kernels;
      ++ops;
    }
    return std::make_pair(n, ops);
  };
  for (const char* name : {"llama-2-7b", "qwen2-7b", "llama-3-8b"}) {
    SCOPED_TRACE(name);
    const OpGraph g8 = decode_graph(name, 8);
    const int64_t L = g8.config.num_layers;
    EXPECT_EQ(norm_kernels(g8), std::make_pair(int64_t(2), 2 * L + 1));
    EXPECT_EQ(find_op(g8, "layers.0.attn_norm").kernels, 1);
    EXPECT_EQ(find_op(g8, "layers.1.attn_norm").kernels, 0);
    EXPECT_EQ(find_op(g8, "final_norm").kernels, 1);
    EXPECT_EQ(norm_kernels(decode_graph(name, kTieredDecodeMaxTokens)).first, 2);
    EXPECT_EQ(norm_kernels(decode_graph(name, kTieredDecodeMaxTokens + 1)).first, 2 * L + 1);
  }
  const OpGraph opt = decode_graph("opt-6.7b", 8);
  EXPECT_EQ(norm_kernels(opt).first, norm_kernels(opt).second) << "LayerNorm runs its own kernel";
}

TEST(OpGraph, DecodeFlopsAndStepBytes) {
  const int64_t b = 8, prompt = 32, gen = 32, ctx = prompt + gen / 2;
  const OpGraph g = decode_graph("llama-2-7b", b, prompt, gen);
  double linear_flops = 0;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::kLinear && op.layer >= 0) linear_flops += op.flops;
  // 2 FLOPs per multiply-add over the layer matrices: 4·h² + 3·h·I per layer.
  const double per_layer = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008;
  EXPECT_DOUBLE_EQ(linear_flops, 2.0 * b * per_layer * 32);
  const Op& att = find_op(g, "layers.0.attention");
  EXPECT_EQ(att.context, ctx);
  EXPECT_DOUBLE_EQ(att.flops, 4.0 * b * 32 * 128 * ctx);                       // QK^T and PV
  EXPECT_DOUBLE_EQ(att.step_bytes, double(b) * (ctx + 1) * 2 * 32 * 128 * 2);  // read ctx, append 1
  EXPECT_EQ(att.split_rows, b);
  EXPECT_EQ(att.row_bytes, (prompt + gen) * 2 * 32 * 128 * 2);
  // Weights are read whole each step.
  EXPECT_DOUBLE_EQ(find_op(g, "layers.5.down_proj").step_bytes, 4096.0 * 11008 * 2);
}

TEST(OpGraph, PrefillUsesAllPromptTokensButLogitsOnlyForTheLast) {
  StepShape s;
  s.batch = 4, s.prompt_len = 100, s.gen_len = 1, s.phase = Phase::kPrefill;
  const OpGraph g = build_op_graph(shipped("llama-3-8b"), s);
  EXPECT_EQ(find_op(g, "layers.0.qkv_proj").n, 400);
  EXPECT_EQ(find_op(g, "lm_head").n, 4);
  const Op& att = find_op(g, "layers.0.attention");
  EXPECT_DOUBLE_EQ(att.flops, 4.0 * 4 * 32 * 128 * (100.0 * 101 / 2));  // causal
}

TEST(OpGraph, APrefillLongerThanAPassReadsTheWeightsOncePerPass) {
  // The trial of session 27: the engine runs a prefill in passes of at most 1024 rows (dak generate's
  // GpuEngineOptions::max_pass_tokens), each reading every weight (host rows over the link each time),
  // but the plan priced one read.
  StepShape s;
  s.batch = 1, s.prompt_len = 4096, s.gen_len = 32, s.phase = Phase::kPrefill;
  EXPECT_EQ(s.pass_tokens(), 1024);
  EXPECT_EQ(s.prefill_passes(), 4);
  const OpGraph g = build_op_graph(shipped("llama-2-7b"), s);
  const Op& qkv = find_op(g, "layers.0.qkv_proj");
  EXPECT_EQ(qkv.passes, 4);
  EXPECT_EQ(qkv.n, 4096);  // FLOPs and activations per step
  EXPECT_EQ(find_op(g, "layers.0.attention").passes, 1);  // K / V written once ...
  EXPECT_EQ(find_op(g, "layers.0.attention").kernels, 2 * 4);  // ... by kernels in every pass
  EXPECT_EQ(find_op(g, "lm_head").passes, 1);  // one sequence: its last token is in one pass
  EXPECT_EQ(find_op(g, "embed_tokens").passes, 1);
  // The step reads the layer weights 4 times: its bytes grow by 3 x the layer stack's.
  StepShape one = s;
  one.max_pass_tokens = 8192;
  EXPECT_EQ(one.prefill_passes(), 1);
  const OpGraph g1 = build_op_graph(shipped("llama-2-7b"), one);
  double layers = 0;
  for (const Op& op : g1.ops)
    if (op.layer >= 0 && op.kind != OpKind::kAttention) layers += op.step_bytes + double(op.fixed_bytes);
  EXPECT_NEAR(g.step_model_bytes() - g1.step_model_bytes(), 3 * layers, 1.0);
  // A pass holds at least the batch, and at most what the KV cache holds; decode is one pass.
  StepShape wide = s;
  wide.batch = 2048, wide.prompt_len = 1;
  EXPECT_EQ(wide.prefill_passes(), 1);
  StepShape decode = s;
  decode.phase = Phase::kDecode;
  EXPECT_EQ(decode.prefill_passes(), 1);
  EXPECT_EQ(find_op(build_op_graph(shipped("llama-2-7b"), decode), "layers.0.qkv_proj").passes, 1);
}

TEST(OpGraph, BadShapeIsAClearError) {
  StepShape s;
  s.batch = 0;
  try {
    build_op_graph(shipped("llama-2-7b"), s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch"), std::string::npos) << e.what();
  }
  StepShape t;
  t.tile_rows = 1 << 20;  // more rows per unit than any weight has
  try {
    build_op_graph(shipped("llama-2-7b"), t);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--tile-rows between 1 and 16384"), std::string::npos) << e.what();
  }
  t.tile_rows = 16384;
  EXPECT_NO_THROW(build_op_graph(shipped("llama-2-7b"), t));
}

TEST(OpGraph, LocatorResolvesNamesPathsAndFolders) {
  const LocatedConfig by_name = locate_model_config("Llama-2-7B");
  EXPECT_EQ(by_name.name, "llama-2-7b");
  const LocatedConfig by_path = locate_model_config(by_name.path.string());
  EXPECT_EQ(by_path.config.hidden_size, 4096);
  EXPECT_THROW(locate_model_config("no-such-model"), Error);
  // A GGUF file: the hyper-parameters from its metadata (so `dak plan` takes the default model).
  const LocatedConfig gguf = locate_model_config(std::string(DAK_TEST_DATA_DIR) + "/gguf/tiny_llama.gguf");
  EXPECT_EQ(gguf.name, "tiny_llama");
  EXPECT_EQ(gguf.config.arch, Arch::kLlama);
  EXPECT_GT(gguf.config.hidden_size, 0);
  // A checkpoint's model.safetensors stands for its folder (README: --model takes the file; the
  // session-20 trial's `dak plan --model DIR/model.safetensors` read the weights as JSON).
  const std::string folder = std::string(DAK_TEST_DATA_DIR) + "/hf_parity/llama_gqa";
  const LocatedConfig weights = locate_model_config(folder + "/model.safetensors");
  EXPECT_EQ(weights.name, "llama_gqa");
  EXPECT_EQ(weights.config.hidden_size, locate_model_config(folder).config.hidden_size);
  for (const char* n : {"opt-6.7b", "opt-30b", "llama-2-7b", "llama-2-70b", "llama-3-8b", "qwen2-7b"}) {
    bool found = false;
    for (const std::string& s : shipped_config_names()) found |= s == n;
    EXPECT_TRUE(found) << n;
  }
}

TEST(ShellWord, QuotesOnlyWhatAShellWouldSplit) {
  EXPECT_EQ(shell_word("/tmp/models/llama-2-7b"), "/tmp/models/llama-2-7b");
  EXPECT_EQ(shell_word("a_b.c:d=e,f+g@h%i"), "a_b.c:d=e,f+g@h%i");
  EXPECT_EQ(shell_word("/tmp/my model/x.gguf"), "'/tmp/my model/x.gguf'");
  EXPECT_EQ(shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_word(""), "''");
  EXPECT_EQ(shell_word("$HOME"), "'$HOME'");
}

TEST(JoinWords, EnglishListsForMessages) {
  EXPECT_EQ(join_words({}, "and"), "");
  EXPECT_EQ(join_words({"--plan"}, "and"), "--plan");
  EXPECT_EQ(join_words({"--gpu-memory", "--allocator"}, "and"), "--gpu-memory and --allocator");
  EXPECT_EQ(join_words({"the prompts", "--max-new-tokens", "--batch"}, "or"), "the prompts, --max-new-tokens or --batch");
}

}  // namespace
}  // namespace dak
