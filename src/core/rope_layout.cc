#include "core/rope_layout.h"

#include "core/model_config.h"

namespace dak::rope_layout {

bool engine_pairs_rows(const ModelConfig& c) { return c.arch != Arch::kOpt && pairable(c.head_dim); }

}  // namespace dak::rope_layout
