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
#include <vector>

#include "core/engine.h"

namespace dak {

class Checkpoint;

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
