#include "core/allocator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace dak {

namespace {

const char* kWhere = "offload allocator";

int64_t units_of(const AllocCurve& c) { return int64_t(c.time_s.size()) - 1; }

void validate(const std::vector<AllocCurve>& curves, int64_t required) {
  int64_t max_bytes = 0;
  for (size_t i = 0; i < curves.size(); ++i) {
    const AllocCurve& c = curves[i];
    if (c.time_s.empty() || c.time_s.size() != c.host_bytes.size() || c.host_bytes[0] != 0)
      fail(fmt::format("curve {} is malformed (needs units + 1 points starting at 0 host bytes)", i), kWhere,
           "this is a bug in the planner; please report it");
    for (size_t h = 0; h < c.time_s.size(); ++h) {
      if (!std::isfinite(c.time_s[h]) || c.time_s[h] < 0)
        fail(fmt::format("curve {} has an invalid time at {} host units", i, h), kWhere, "check the hardware profile");
      if (h > 0 && c.host_bytes[h] < c.host_bytes[h - 1])
        fail(fmt::format("curve {} has decreasing host bytes at {} units", i, h), kWhere, "report this planner bug");
    }
    max_bytes += c.host_bytes.back();
  }
  if (required > max_bytes)
    fail(fmt::format("the host must hold {} bytes but all offloadable tensors together have only {}", required,
                     max_bytes),
         kWhere, "raise the HBM budget (--gpu-memory) or lower the batch or context");
}

struct Segment {
  size_t op = 0;
  int64_t from = 0, to = 0;
  int64_t bytes = 0;
  double time = 0;
  double slope() const { return time / double(bytes); }
};

// Index of the minimum time, the smallest such index.
int64_t argmin_time(const AllocCurve& c) {
  return int64_t(std::min_element(c.time_s.begin(), c.time_s.end()) - c.time_s.begin());
}

// Lower convex hull of the points h >= start in (host bytes, time), as consecutive segments.
std::vector<Segment> hull_segments(const AllocCurve& c, size_t op, int64_t start) {
  std::vector<int64_t> hull;
  auto cross = [&](int64_t o, int64_t a, int64_t b) {
    double ax = double(c.host_bytes[a] - c.host_bytes[o]), ay = c.time_s[a] - c.time_s[o];
    double bx = double(c.host_bytes[b] - c.host_bytes[o]), by = c.time_s[b] - c.time_s[o];
    return ax * by - ay * bx;
  };
  for (int64_t h = start; h <= units_of(c); ++h) {
    if (!hull.empty() && c.host_bytes[h] == c.host_bytes[hull.back()]) {
      if (c.time_s[h] < c.time_s[hull.back()]) hull.back() = h;  // same bytes: keep the faster
      continue;
    }
    while (hull.size() >= 2 && cross(hull[hull.size() - 2], hull.back(), h) <= 0) hull.pop_back();
    hull.push_back(h);
  }
  std::vector<Segment> segs;
  for (size_t k = 1; k < hull.size(); ++k) {
    Segment s;
    s.op = op;
    s.from = hull[k - 1];
    s.to = hull[k];
    s.bytes = c.host_bytes[s.to] - c.host_bytes[s.from];
    s.time = c.time_s[s.to] - c.time_s[s.from];
    segs.push_back(s);
  }
  return segs;
}

// Suffix minima of one curve's time: for any h, the fastest point at or after h.
struct SuffixMin {
  std::vector<double> time;
  std::vector<int64_t> at;
  explicit SuffixMin(const AllocCurve& c) : time(c.time_s.size()), at(c.time_s.size()) {
    for (size_t h = c.time_s.size(); h-- > 0;) {
      const bool take = h + 1 == c.time_s.size() || c.time_s[h] <= time[h + 1];
      time[h] = take ? c.time_s[h] : time[h + 1];
      at[h] = take ? int64_t(h) : at[h + 1];
    }
  }
};

// The last increment, which would overshoot: from the state after the committed segments, or
// after rolling back up to kRollbackWindow of the most recent ones, add host bytes to a single
// operator (only upwards, so time never drops below a hull vertex) and keep the fastest result.
// Rolling back within a window that ends at the last committed segment keeps the total
// non-decreasing in the requirement: every state considered for a larger requirement is either
// considered for a smaller one, or costs at least the smaller one's plain completion.
void finish_with_one_increment(const std::vector<AllocCurve>& curves, const std::vector<Segment>& committed,
                               int64_t required, std::vector<int64_t>& cur) {
  constexpr size_t kRollbackWindow = 1024;
  std::vector<SuffixMin> suffix;
  for (const AllocCurve& c : curves) suffix.emplace_back(c);
  std::vector<int64_t> state = cur;
  int64_t have = 0;
  double total = 0;
  for (size_t i = 0; i < curves.size(); ++i) {
    have += curves[i].host_bytes[size_t(state[i])];
    total += curves[i].time_s[size_t(state[i])];
  }
  double best_total = INFINITY;
  size_t best_k = committed.size(), best_op = 0;
  int64_t best_h = 0;
  const size_t k_min = committed.size() > kRollbackWindow ? committed.size() - kRollbackWindow : 0;
  for (size_t k = committed.size() + 1; k-- > k_min;) {
    if (k < committed.size()) {  // roll back committed[k]
      const Segment& s = committed[k];
      state[s.op] = s.from;
      have -= s.bytes;
      total -= s.time;
    }
    const int64_t deficit = required - have;
    for (size_t j = 0; j < curves.size(); ++j) {
      const AllocCurve& c = curves[j];
      const int64_t need = c.host_bytes[size_t(state[j])] + deficit;
      const int64_t h_req =
          int64_t(std::lower_bound(c.host_bytes.begin(), c.host_bytes.end(), need) - c.host_bytes.begin());
      if (h_req > units_of(c)) continue;
      const double t = total - c.time_s[size_t(state[j])] + suffix[j].time[size_t(h_req)];
      const bool better = t < best_total || (t == best_total && !c.prefer_late && curves[best_op].prefer_late);
      if (better) best_total = t, best_k = k, best_op = j, best_h = suffix[j].at[size_t(h_req)];
    }
  }
  // Rolling back a later segment of an operator restores its earlier `from`: undo in order.
  for (size_t k = committed.size(); k-- > best_k;) cur[committed[k].op] = committed[k].from;
  cur[best_op] = best_h;
}

}  // namespace

Allocation evaluate_allocation(const std::vector<AllocCurve>& curves, std::vector<int64_t> host_units) {
  if (host_units.size() != curves.size())
    fail("allocation and curves differ in length", kWhere, "report this planner bug");
  Allocation a;
  for (size_t i = 0; i < curves.size(); ++i) {
    if (host_units[i] < 0 || host_units[i] > units_of(curves[i]))
      fail(fmt::format("curve {} has no point at {} host units", i, host_units[i]), kWhere, "report this bug");
    a.total_time_s += curves[i].time_s[size_t(host_units[i])];
    a.host_bytes += curves[i].host_bytes[size_t(host_units[i])];
  }
  a.host_units = std::move(host_units);
  return a;
}

Allocation allocate_greedy(const std::vector<AllocCurve>& curves, int64_t required_host_bytes) {
  validate(curves, required_host_bytes);
  std::vector<int64_t> cur(curves.size());
  int64_t have = 0;
  std::vector<std::vector<Segment>> hulls(curves.size());
  for (size_t i = 0; i < curves.size(); ++i) {
    cur[i] = argmin_time(curves[i]);
    have += curves[i].host_bytes[size_t(cur[i])];
    hulls[i] = hull_segments(curves[i], i, cur[i]);
  }
  // Commit whole hull segments, cheapest per byte first, while they leave a deficit. A heap over
  // each operator's next segment keeps every operator's segments in hull order (rounding could
  // otherwise swap two nearly collinear ones).
  auto later = [&](const Segment& a, const Segment& b) {  // heap order: true if a comes after b
    if (a.slope() != b.slope()) return a.slope() > b.slope();
    if (curves[a.op].prefer_late != curves[b.op].prefer_late) return curves[a.op].prefer_late;
    return a.op > b.op;
  };
  std::vector<Segment> heap;
  std::vector<size_t> next(curves.size(), 0);
  for (size_t i = 0; i < curves.size(); ++i)
    if (!hulls[i].empty()) heap.push_back(hulls[i][next[i]++]);
  std::make_heap(heap.begin(), heap.end(), later);
  int64_t deficit = required_host_bytes - have;
  std::vector<Segment> committed;
  while (deficit > 0 && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Segment s = heap.back();
    heap.pop_back();
    if (s.bytes >= deficit) break;
    cur[s.op] = s.to;
    deficit -= s.bytes;
    committed.push_back(s);
    if (next[s.op] < hulls[s.op].size()) {
      heap.push_back(hulls[s.op][next[s.op]++]);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  if (deficit > 0) finish_with_one_increment(curves, committed, required_host_bytes, cur);
  return evaluate_allocation(curves, std::move(cur));
}

Allocation allocate_uniform(const std::vector<AllocCurve>& curves, int64_t required_host_bytes) {
  validate(curves, required_host_bytes);
  int64_t all = 0;
  for (const AllocCurve& c : curves) all += c.host_bytes.back();
  std::vector<int64_t> h(curves.size(), 0);
  if (required_host_bytes <= 0 || all == 0) return evaluate_allocation(curves, h);
  const long double ratio = (long double)required_host_bytes / (long double)all;
  int64_t have = 0;
  for (size_t i = 0; i < curves.size(); ++i) {
    const AllocCurve& c = curves[i];
    const int64_t target = int64_t(std::ceil(ratio * (long double)c.host_bytes.back()));
    h[i] = int64_t(std::lower_bound(c.host_bytes.begin(), c.host_bytes.end(), target) - c.host_bytes.begin());
    h[i] = std::min(h[i], units_of(c));
    have += c.host_bytes[size_t(h[i])];
  }
  while (have < required_host_bytes) {  // rounding shortfall: add the cheapest single unit
    size_t best = curves.size();
    double best_dt = INFINITY;
    for (size_t i = 0; i < curves.size(); ++i) {
      if (h[i] >= units_of(curves[i])) continue;
      double dt = curves[i].time_s[size_t(h[i] + 1)] - curves[i].time_s[size_t(h[i])];
      if (dt < best_dt) best = i, best_dt = dt;
    }
    have += curves[best].host_bytes[size_t(h[best] + 1)] - curves[best].host_bytes[size_t(h[best])];
    ++h[best];
  }
  return evaluate_allocation(curves, std::move(h));
}

Allocation allocate_brute_force(const std::vector<AllocCurve>& curves, int64_t required_host_bytes,
                                int64_t max_combinations) {
  validate(curves, required_host_bytes);
  long double combos = 1;
  for (const AllocCurve& c : curves) combos *= (long double)(units_of(c) + 1);
  if (combos > (long double)max_combinations)
    fail(fmt::format("brute force over {:.0Lf} combinations exceeds the limit {}", combos, max_combinations), kWhere,
         "use the greedy allocator for instances this large");
  // Suffix sums of the most host bytes the remaining curves can add (pruning).
  std::vector<int64_t> rest(curves.size() + 1, 0);
  for (size_t i = curves.size(); i-- > 0;) rest[i] = rest[i + 1] + curves[i].host_bytes.back();

  std::vector<int64_t> h(curves.size(), 0), best_h;
  double best_t = INFINITY;
  int64_t best_b = 0;
  auto rec = [&](auto&& self, size_t i, double t, int64_t b) -> void {
    if (b + rest[i] < required_host_bytes) return;
    if (i == curves.size()) {
      if (t < best_t || (t == best_t && b < best_b)) best_t = t, best_b = b, best_h = h;
      return;
    }
    for (int64_t u = 0; u <= units_of(curves[i]); ++u) {
      h[i] = u;
      self(self, i + 1, t + curves[i].time_s[size_t(u)], b + curves[i].host_bytes[size_t(u)]);
    }
    h[i] = 0;
  };
  rec(rec, 0, 0.0, 0);
  return evaluate_allocation(curves, best_h);
}

}  // namespace dak
