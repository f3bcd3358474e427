// The physical floor of one decode step with part of its bytes in host memory, as `dak bench`
// reports it next to every offloaded TPOT (docs/results.md, DESIGN.md §2).
#pragma once

namespace dak {

/// Bytes one decode step moves, by where they come from and how.
struct StepBytes {
  double hbm = 0;     // read from HBM in place (weights, KV cache, activations): bytes
  double direct = 0;  // read from pinned host memory by the SMs (TMA, the direct path): bytes
  double staged = 0;  // copied from host memory into an HBM ring by the copy engine, then read by
                      //   the SMs (the staged / prefetch path): bytes
};

/// Lower bound of the step time, seconds:
///   max((hbm + 2 * staged) / B_g, direct / B_h + staged / B_ce)
/// Staged bytes cross HBM twice (the copy engine writes them, the SMs read them back); the host
/// link carries the direct and the staged bytes (each at its own best rate: together they share
/// the link at about the same total). Bandwidths in bytes/s: b_g the best HBM read, b_h the SMs'
/// host read rate, b_ce the copy engine's host-to-HBM rate, all measured in the same run.
/// Throws dak::Error for a negative byte count or a bandwidth that is not positive.
double step_floor_s(const StepBytes& bytes, double b_g, double b_h, double b_ce);

}  // namespace dak
