// CpuModel: the fp32 CPU reference forward pass (the correctness oracle for all GPU work).
//
// Follows the HF modeling files exactly (modeling_llama.py, modeling_mistral.py,
// modeling_qwen2.py, modeling_opt.py): fp32 weights (bf16/fp16/quantized tensors decoded on
// load), fp32 activations and KV cache, batched ragged prefill and incremental decode.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/engine.h"

namespace dak {

class Checkpoint;

/// Seconds the CPU reference path is expected to take for the prefill of one prompt of `prompt_len`
/// tokens on `threads` cores (0: this process's OpenMP threads): the flops of its linear layers
/// (op_graph.h) at 60 GFLOP/s per core and of its attention (quadratic in the prompt, within a
/// sliding window) at 6 GFLOP/s per core. The rates were fitted to SmolLM2-135M on the 2-core dev
/// machine (prompts of 1024 / 2048 / 4096 tokens took 4.9 / 16.0 / 55.8 s, estimated 4.8 / 15.7 /
/// 55.6 s; 8191 tokens: 208 s); a slower or busier machine takes longer (the new-user trial's took
/// about 6 x longer).
double estimate_cpu_prefill_s(const ModelConfig& config, int64_t prompt_len, int threads = 0);

/// A prefill estimate above which the CLI warns before a CPU prefill starts, seconds.
inline constexpr double kLongCpuPrefillS = 60;

/// The notice (one line, without "dak: notice: ") before a CPU-path prefill of `prompt_lens` (one
/// per sequence) whose estimate_cpu_prefill_s sum exceeds kLongCpuPrefillS: the estimate, the
/// prompt's tokens x layers, and the hint to run on a GPU (--device cuda) or to shorten the prompt.
/// "" when the prefill is expected to be shorter.
std::string long_cpu_prefill_notice(const ModelConfig& config, std::span<const int64_t> prompt_lens, int threads = 0);

/// Seconds perplexity() is expected to take on the CPU reference path for `tokens` ids scored in
/// windows of `window` tokens (perplexity_window(), at least 2): estimate_cpu_prefill_s of each window
/// (perplexity() scores them one after the other, each window starting at the last token of the one
/// before) plus the head's logits at every position of it (a prefill computes the last one only).
double estimate_cpu_perplexity_s(const ModelConfig& config, int64_t tokens, int64_t window, int threads = 0);

/// The notice (one line, without "dak: notice: ") before perplexity() on the CPU path when
/// estimate_cpu_perplexity_s exceeds kLongCpuPrefillS, as long_cpu_prefill_notice's for a prompt:
/// "scoring N tokens on the CPU reference path will take about T or more (...)" with the hint to run
/// on a GPU (--device cuda) or to score a shorter text. "" when it is expected to be shorter.
std::string long_cpu_perplexity_notice(const ModelConfig& config, int64_t tokens, int64_t window, int threads = 0);

class CpuModel : public Engine {
 public:
  /// Decodes every weight of `ckpt` to fp32 (OpenMP-parallel). Throws dak::Error naming the
  /// tensor when one is missing or has the wrong shape for the config.
  explicit CpuModel(const Checkpoint& ckpt);
  ~CpuModel() override;

  const ModelConfig& config() const override;
  std::string device_name() const override { return "cpu"; }
  void start(int64_t batch, int64_t max_context) override;
  std::vector<float> step(std::span<const std::vector<int32_t>> tokens, bool all_logits) override;
  int64_t position(int64_t b) const override;

  /// Bytes of fp32 weights held.
  uint64_t weight_bytes() const;

  /// Progress of a step (a long prefill takes minutes on the CPU): called with (tokens of the step,
  /// decoder layers done, layers) before the first layer (0 done) and after each one. It only
  /// observes: what step() computes is the same with or without it. Empty (the default): none.
  using LayerProgress = std::function<void(int64_t tokens, int64_t layers_done, int64_t layers)>;
  void set_layer_progress(LayerProgress progress);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dak
