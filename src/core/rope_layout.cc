#include "core/rope_layout.h"

#include "core/model_config.h"

namespace dak::rope_layout {

bool engine_pairs_rows(const ModelConfig& c) { return c.arch != Arch::kOpt && pairable(c.head_dim); }

bool engine_pairs_gate_up(const ModelConfig& c) { return c.gated_mlp && pairable(2 * c.intermediate_size); }

}  // namespace dak::rope_layout
