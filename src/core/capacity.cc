#include "core/capacity.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/byte_size.h"
#include "core/error.h"

namespace dak {

int64_t workspace_bytes(const OpGraph& graph) {
  const ModelConfig& c = graph.config;
  const StepShape& s = graph.shape;
  const int64_t prefill_tokens =
      std::min(s.batch * s.prompt_len, std::max(Capacity::kPrefillChunkTokens, s.prompt_len));
  const int64_t tokens = std::max(s.batch, prefill_tokens);
  // Live bf16 activations per token: residual, normed input, q/k/v, attention output, MLP inner
  // (gate and up, or fc1) and its activation.
  const int64_t inner = c.gated_mlp ? 2 * c.intermediate_size : c.intermediate_size;
  const int64_t per_token = 2 * c.hidden_size + c.q_dim() + 2 * c.kv_dim() + c.q_dim() + inner + c.intermediate_size;
  const int64_t logits = s.batch * c.vocab_size * 4;  // fp32 logits of the last position
  return tokens * per_token * 2 + logits;
}

Capacity compute_capacity(const OpGraph& graph, int64_t hbm_budget_bytes) {
  if (hbm_budget_bytes <= 0)
    fail(fmt::format("the HBM budget must be positive, got {} bytes", hbm_budget_bytes), "--gpu-memory",
         "pass a size with its unit, such as 20GiB or 512MiB (a bare number counts bytes)");
  Capacity cap;
  cap.splittable_weight_bytes = graph.weight_resident_bytes();
  cap.weight_bytes = cap.splittable_weight_bytes + graph.fixed_bytes();
  cap.kv_bytes = graph.kv_resident_bytes();
  cap.workspace_bytes = workspace_bytes(graph);
  cap.total_bytes = cap.weight_bytes + cap.kv_bytes + cap.workspace_bytes;
  cap.hbm_budget_bytes = hbm_budget_bytes;
  cap.required_host_bytes = std::max<int64_t>(0, cap.total_bytes - hbm_budget_bytes);
  const int64_t movable = cap.splittable_weight_bytes + cap.kv_bytes;
  cap.global_ratio = movable > 0 ? double(cap.required_host_bytes) / double(movable) : 0.0;
  return cap;
}

void check_capacity(const Capacity& cap, int64_t host_bytes, bool budget_binding, const HardwareProfile& profile,
                    const ShapeTerms& terms) {
  const std::string lower_all = terms.lower(ShapeTerms::kAll);
  const int64_t movable = cap.splittable_weight_bytes + cap.kv_bytes;
  const int64_t fixed = cap.total_bytes - movable;
  // A size the user is told to give "at least": rounded up in the unit it is printed in, so that
  // passing it back works (format_bytes rounds to nearest: 55.655 GiB read "55.66" and failed), with
  // no space before the unit, so that it is one word on the command line.
  const auto at_least = [](int64_t bytes) {
    const int unit = bytes >= (int64_t(1) << 30) ? 30 : bytes >= (int64_t(1) << 20) ? 20 : 10;
    return format_at_least(double(bytes) / double(int64_t(1) << unit)) + (unit == 30 ? "GiB" : unit == 20 ? "MiB" : "KiB");
  };
  if (budget_binding && fixed > cap.hbm_budget_bytes)
    fail(fmt::format("an HBM budget of {} cannot hold what must stay on the GPU: {} of norms, biases and "
                     "activations (workspace {})",
                     format_bytes(double(cap.hbm_budget_bytes)), format_bytes(double(fixed)),
                     format_bytes(double(cap.workspace_bytes))),
         "--gpu-memory",
         // The least budget that fits: what never moves, plus what the profile cannot pin.
         fmt::format("raise --gpu-memory to at least {}, or {}",
                     at_least(cap.total_bytes - std::min(movable, profile.pinnable_host_bytes)),
                     terms.lower(ShapeTerms::kBatch | ShapeTerms::kPrompt)));
  // A shape larger than the GPU's free HBM and the pinnable host memory together fits no plan: say
  // so first, rather than a budget or a ratio that cannot help (a session-22 trial followed such fixes).
  const int64_t hbm_most = profile.hbm_free_after_context_bytes;
  // The weights alone (and what never moves) beyond the free HBM and the pinnable memory: no shape
  // fits, so lowering it cannot help (the session-25 second trial, a 405B model at batch 1, prompt 1, was told to).
  const int64_t weights_most_moved = std::min(cap.splittable_weight_bytes, profile.pinnable_host_bytes);
  if (cap.weight_bytes + cap.workspace_bytes - weights_most_moved > hbm_most) {
    // What must go to the host at this shape (its KV cache included) under the budget, which the
    // free HBM bounds: the profile's pinnable memory must hold it (the next check's condition).
    const int64_t pin_needed = cap.total_bytes - std::min(cap.hbm_budget_bytes, hbm_most);
    fail(fmt::format("the model's weights alone ({}) need more than the {} free on the GPU plus the {} of host memory "
                     "the profile '{}' can pin, so no batch or context length fits",
                     format_bytes(double(cap.weight_bytes)), format_bytes(double(hbm_most)),
                     format_bytes(double(profile.pinnable_host_bytes)), profile.name),
         "--model",
         pin_needed <= movable
             ? fmt::format("use a profile whose host_memory.pinnable_bytes is at least {} ({}; `dak profile "
                           "--pin-test-gib N` measures up to N GiB, on a host with that much memory), or a smaller "
                           "model",
                           pin_needed, at_least(pin_needed))
             : std::string("use a smaller model: what cannot move to the host alone exceeds the GPU's free memory"));
  }
  if (cap.total_bytes - std::min(movable, profile.pinnable_host_bytes) > hbm_most)
    fail(fmt::format("model + KV + workspace {} fit no plan on '{}': at most {} can move to the host (the weights and KV "
                     "cache, up to the {} the profile can pin) and the GPU has {} free",
                     format_bytes(double(cap.total_bytes)), profile.name,
                     format_bytes(double(std::min(movable, profile.pinnable_host_bytes))),
                     format_bytes(double(profile.pinnable_host_bytes)), format_bytes(double(hbm_most))),
         terms.flags(ShapeTerms::kAll),
         "the KV cache grows with batch x context: " + lower_all +
             ", or use a profile whose host_memory.pinnable_bytes is larger (`dak profile --pin-test-gib N`)");
  if (!budget_binding && cap.total_bytes - host_bytes > cap.hbm_budget_bytes) {
    // A forced offload ratio: what it leaves in HBM must still fit the budget.
    const int64_t movable_min = std::max<int64_t>(0, cap.total_bytes - cap.hbm_budget_bytes);
    fail(fmt::format("this offload ratio leaves {} in HBM (model + KV + workspace {} minus {} on the host), more than "
                     "the HBM budget of {}",
                     format_bytes(double(cap.total_bytes - host_bytes)), format_bytes(double(cap.total_bytes)),
                     format_bytes(double(host_bytes)), format_bytes(double(cap.hbm_budget_bytes))),
         "--offload-ratio",
         movable <= 0 || movable_min > movable
             ? fmt::format("raise --gpu-memory to at least {} at this ratio ({} with --offload-ratio 1: what cannot "
                           "move to the host), or {}",
                           at_least(cap.total_bytes - host_bytes), at_least(fixed), lower_all)
             : fmt::format("force at least {} (or drop --offload-ratio and let the budget decide), raise "
                           "--gpu-memory, or {}",
                           format_at_least(double(movable_min) / double(movable)), lower_all));
  }
  if (host_bytes > profile.pinnable_host_bytes)
    fail(fmt::format("{} of weights and KV cache must live in host memory, but the hardware profile '{}' can pin "
                     "only {} (model + KV + workspace {}, HBM budget {})",
                     format_bytes(double(host_bytes)), profile.name, format_bytes(double(profile.pinnable_host_bytes)),
                     format_bytes(double(cap.total_bytes)), format_bytes(double(cap.hbm_budget_bytes))),
         budget_binding ? "--gpu-memory" : "--offload-ratio",
         // A forced ratio fixes the host bytes whatever the budget: raising it cannot help there.
         fmt::format("{}{}{}, or use a profile whose host_memory.pinnable_bytes "
                     "is larger (`dak profile --pin-test-gib N` measures up to N GiB; the compiled-in h200-default "
                     "allows 120 GiB, h100-default and h100-fast-link 110 GiB)",
                     budget_binding ? "raise --gpu-memory, " : "", lower_all,
                     budget_binding || movable <= 0
                         ? std::string()
                         : " or the offload ratio (at most " +
                               format_at_most(double(profile.pinnable_host_bytes) / double(movable)) + " fits)"));
}

}  // namespace dak
