#include "core/offload_floor.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace dak {

double step_floor_s(const StepBytes& bytes, double b_g, double b_h, double b_ce) {
  if (!(bytes.hbm >= 0) || !(bytes.direct >= 0) || !(bytes.staged >= 0)) {
    fail(fmt::format("step bytes hbm {} direct {} staged {} include a negative count", bytes.hbm, bytes.direct,
                     bytes.staged),
         "offload step floor", "pass the byte counts of the step's plan");
  }
  if (!(b_g > 0) || !(b_h > 0) || !(b_ce > 0)) {
    fail(fmt::format("bandwidths B_g {} B_h {} B_ce {} must be positive", b_g, b_h, b_ce), "offload step floor",
         "measure them before computing the floor");
  }
  return std::max((bytes.hbm + 2.0 * bytes.staged) / b_g, bytes.direct / b_h + bytes.staged / b_ce);
}

}  // namespace dak
