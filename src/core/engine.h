// Engine: the interface every forward-pass implementation offers to the generation loop
// (CPU reference in src/core/cpu_model.h; the GPU engine in src/gpu implements it too), so
// `dak generate`, `dak perplexity` and the tests drive all of them the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/model_config.h"

namespace dak {

/// Progress of a checkpoint load: called with the parameters (tensor elements) read so far and in
/// all, after each tensor (done == total last), from any thread but never concurrently (CpuModel
/// calls it from its OpenMP workers, one at a time). An exception it throws fails the load. Engines
/// take one to drive a progress line (dak generate / perplexity / bench on a large model); empty:
/// none.
using LoadProgress = std::function<void(uint64_t done, uint64_t total)>;

/// Throws dak::Error ("sequence b is outside the batch of batch", at `where`, fix: a larger batch
/// at start()) unless 0 <= b < batch: the sequence-index check of every engine's position() and
/// reset().
void check_sequence_index(int64_t b, int64_t batch, const char* where);

class Engine {
 public:
  virtual ~Engine() = default;

  virtual const ModelConfig& config() const = 0;
  /// "cpu", "cuda:0 (NVIDIA H200)", ...
  virtual std::string device_name() const = 0;

  /// Allocates (or clears) a KV cache for `batch` sequences of up to `max_context`
  /// positions each; every sequence starts at position 0. Throws dak::Error if max_context
  /// exceeds the model's context or the cache cannot be allocated.
  virtual void start(int64_t batch, int64_t max_context) = 0;

  /// Appends tokens[b] (length L_b >= 0, ragged across b) to sequence b at its current
  /// position and runs the forward pass (a batched prefill when L_b > 1, a decode step when
  /// every L_b == 1). Returns fp32 logits, row-major:
  ///   all_logits == false: [B, vocab], row b = logits after the last token of sequence b
  ///                        (rows of sequences with L_b == 0 are unspecified);
  ///   all_logits == true:  [sum_b L_b, vocab], every appended position in sequence order.
  /// Throws dak::Error if a sequence would exceed max_context or an id is outside the vocab.
  virtual std::vector<float> step(std::span<const std::vector<int32_t>> tokens, bool all_logits) = 0;

  /// Current length (tokens in the KV cache) of sequence b.
  virtual int64_t position(int64_t b) const = 0;
  /// Empties sequence b for a new one (continuous batching: generate() gives a finished sequence's
  /// slot to the next prompt): its position goes back to 0, its cached keys and values are
  /// overwritten as the new sequence appends; the other sequences keep theirs. Throws dak::Error
  /// for b outside [0, batch) (or before start()).
  virtual void reset(int64_t b) = 0;
  /// Whether a decode step in which every sequence appends exactly one token is much cheaper than
  /// one in which some append none: the GPU engine replays its captured decode graph only for the
  /// former and runs the latter kernel by kernel. generate() then keeps a finished sequence in the
  /// step with a token it discards (its position still stays within the context it was sized
  /// for). The CPU reference computes every row it is given, so it says no.
  virtual bool prefers_full_decode_steps() const { return false; }
};

}  // namespace dak
