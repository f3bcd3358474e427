// Shared pieces of the `dak` subcommands: default model resolution, engine selection,
// timing, and small parsers for flag values.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/checkpoint.h"
#include "core/config_locator.h"
#include "core/engine.h"

namespace dak::cli {

/// The model used when --model is not given: $DAK_MODEL if set, else the SmolLM2-135M-Instruct
/// GGUF that tools/setup.sh installs under models/. Throws dak::Error (saying to run
/// tools/setup.sh or pass --model) if it is missing.
std::filesystem::path default_model_path();

/// Opens `model` (or the default when empty), printing "loading ..." to stderr.
std::unique_ptr<Checkpoint> open_model(const std::string& model);

/// Engine for --device cpu|cuda|auto. cuda: the GPU engine (requires a Hopper GPU; throws
/// dak::Error explaining what is missing otherwise). auto: cuda when usable, else the CPU
/// reference with a notice on stderr.
std::unique_ptr<Engine> make_engine(const Checkpoint& ckpt, const std::string& device);

/// Why the GPU path cannot run here (no CUDA device or driver, not a Hopper GPU, or a dak built
/// without CUDA), as a sentence; "" when it can.
std::string gpu_unavailable_reason();

/// GPU engine with deterministic random weights for `config` (--random-weights; seed
/// `weights_seed`). `device` is cuda or auto; both need a usable GPU (random weights exist only
/// on the GPU), cpu is refused. Throws dak::Error saying what is missing.
std::unique_ptr<Engine> make_random_engine(const LocatedConfig& config, uint64_t weights_seed,
                                           const std::string& device);

/// "1,2,3" -> {1, 2, 3}. Throws dak::Error naming `flag` on anything else.
std::vector<int32_t> parse_id_list(const std::string& s, const std::string& flag);

/// Seconds since `t0`.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace dak::cli
