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

/// What else runs on the machine while a CPU-path run would: the estimates below are for idle cores,
/// and a busy machine (another build on the same cores) gives the run only its share of them.
struct CpuContention {
  double load = 0;  // runnable threads of other processes (the 1-minute load average): 0 on an idle machine
  int cores = 0;    // the machine's cores; 0: as many as the run's threads
};

/// The contention now: others_cpu_load() of /proc/loadavg's 1-minute figure and its count of threads
/// runnable now (one read), and omp_get_num_procs().
CpuContention current_cpu_contention();

/// The load of other processes a run will share the cores with: the 1-minute load average
/// `load_1min`, but at most the threads runnable now besides the one that looks (`running_now` - 1).
/// The average lags a minute: a process that has just finished (or this one's own model load) still
/// counts in it, and made a 3.1 min prefill read "about 7 min or more (... a load of 1.8 ...)" on an
/// idle 2-core machine (a new-user trial); a build that goes on keeps both figures up. A
/// `running_now` of 0 or less: unknown, the average alone.
double others_cpu_load(double load_1min, int running_now);

/// How many times longer a run of `threads` threads (0: this process's OpenMP threads) takes than on
/// idle cores under `contention`, by the scheduler's fair share: its threads and the `load` others
/// share `cores`, max(1, (load + threads) / cores). 1 on an idle machine.
double cpu_contention_factor(const CpuContention& contention, int threads = 0);

/// Seconds the CPU reference path is expected to take for the prefill of one prompt of `prompt_len`
/// tokens on `threads` idle cores (0: this process's OpenMP threads), times cpu_contention_factor():
/// the flops of its linear layers (op_graph.h) at 60 GFLOP/s per core and of its attention
/// (quadratic in the prompt, within a sliding window) at 6 GFLOP/s per core. The rates were fitted
/// to SmolLM2-135M on the 2-core dev machine when idle (prompts of 1024 / 2048 / 4096 tokens took
/// 4.9 / 16.0 / 55.8 s, estimated 4.8 / 15.7 / 55.6 s; 8191 tokens: 208 s) and still hold for
/// 8192-token windows (a layer of an 8191-token perplexity window took 7.2 s on idle cores, estimated
/// 6.9 s). What the new-user trials saw as 2.4 x (a ~20k-token perplexity) to 6 x longer was the
/// machine's load: cpu_contention_factor(). The measurements: cpu_model.cc, at the rates.
double estimate_cpu_prefill_s(const ModelConfig& config, int64_t prompt_len, int threads = 0,
                              const CpuContention& contention = {});

/// A prefill estimate above which the CLI warns before a CPU prefill starts, seconds.
inline constexpr double kLongCpuPrefillS = 60;

/// The notice (one line, without "dak: notice: ") before a CPU-path prefill of `prompt_lens` (one
/// per sequence) whose estimate_cpu_prefill_s sum exceeds kLongCpuPrefillS: the estimate, the
/// prompt's tokens x layers, the cores (and the load, where it makes the run longer), and the hint to
/// run on a GPU (--device cuda) or to shorten the prompt; with `gpu_usable` false (this machine has no
/// usable GPU, so --device cuda would only be refused), to run it on a machine with a GPU instead.
/// "" when the prefill is expected to be shorter.
std::string long_cpu_prefill_notice(const ModelConfig& config, std::span<const int64_t> prompt_lens, int threads = 0,
                                    const CpuContention& contention = {}, bool gpu_usable = true);

/// Seconds perplexity() is expected to take on the CPU reference path for `tokens` ids scored in
/// windows of `window` tokens (perplexity_window(), at least 2): estimate_cpu_prefill_s of each window
/// (perplexity() scores them one after the other, each window starting at the last token of the one
/// before) plus the head's logits at every position of it (a prefill computes the last one only) plus
/// the log-softmax of every scored token over the vocabulary (perplexity() runs it on one thread:
/// kCpuLogSoftmaxSPerLogit a logit), all times cpu_contention_factor().
double estimate_cpu_perplexity_s(const ModelConfig& config, int64_t tokens, int64_t window, int threads = 0,
                                 const CpuContention& contention = {});

/// Seconds perplexity()'s log-softmax takes per logit on one idle core of the dev machine (two passes
/// over a row in double, one std::exp a logit): 0.43-0.78 ms a 49152-logit row of SmolLM2-135M at a
/// load of 4.4-4.8 on its 2 cores, about 0.3 ms idle by the fair share of cpu_contention_factor().
inline constexpr double kCpuLogSoftmaxSPerLogit = 0.3e-3 / 49152;

/// The notice (one line, without "dak: notice: ") before perplexity() on the CPU path when
/// estimate_cpu_perplexity_s exceeds kLongCpuPrefillS, as long_cpu_prefill_notice's for a prompt:
/// "scoring N-1 tokens (all of the text's N but the first) on the CPU reference path will take about
/// T (...)" with the hint to run on a GPU (--device cuda) or to score a shorter text: its first
/// kCpuPerplexityPartBytes (generate.h)
/// with `part_command` (perplexity_part_command() of the run's file and options; empty: of the
/// placeholder FILE). `gpu_usable` as long_cpu_prefill_notice's. "" when it is expected to be shorter.
std::string long_cpu_perplexity_notice(const ModelConfig& config, int64_t tokens, int64_t window, int threads = 0,
                                       const CpuContention& contention = {}, const std::string& part_command = "",
                                       bool gpu_usable = true);

class CpuModel : public Engine {
 public:
  /// Decodes every weight of `ckpt` to fp32 (OpenMP-parallel). Throws dak::Error naming the
  /// tensor when one is missing or has the wrong shape for the config, and before allocating
  /// when the fp32 weights (weight_bytes_for) exceed the memory available (MemAvailable of
  /// /proc/meminfo) or an allocation fails, saying how much is needed. `progress` (optional) is
  /// called after each tensor is decoded (LoadProgress).
  explicit CpuModel(const Checkpoint& ckpt, const LoadProgress& progress = {});

  /// Bytes of fp32 weights a CpuModel of `c` holds: what weight_bytes() returns once loaded
  /// (embeddings, OPT positions, projections, norms, LM head unless tied, every layer's
  /// linears with their biases).
  static uint64_t weight_bytes_for(const ModelConfig& c);
  ~CpuModel() override;

  const ModelConfig& config() const override;
  std::string device_name() const override { return "cpu"; }
  void start(int64_t batch, int64_t max_context) override;
  std::vector<float> step(std::span<const std::vector<int32_t>> tokens, bool all_logits) override;
  int64_t position(int64_t b) const override;
  void reset(int64_t b) override;

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
