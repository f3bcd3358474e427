// Engine: what the engines share (core/engine.h).
#include "core/engine.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dak {

void check_sequence_index(int64_t b, int64_t batch, const char* where) {
  if (b < 0 || b >= batch) {
    fail(fmt::format("sequence {} is outside the batch of {}", b, batch), where, "call start() with a larger batch");
  }
}

}  // namespace dak
