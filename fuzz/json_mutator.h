// A libFuzzer custom mutator for targets that read JSON documents (plans, hardware profiles): byte
// mutations almost always break the JSON and stop at the parser, so where the input parses, one value
// of the document is changed as a hand edit would change it — a number made 0, negative, huge, tiny,
// fractional or shifted by one; a string, bool, null, array or object put in its place; a key removed
// or an array element dropped or doubled — and the document written back. Inputs that do not parse
// get libFuzzer's own byte mutations (and one in DAK_FUZZ_BYTE_MUTATION_ONE_IN of those that do).
// Include it in one fuzz_*.cc: it defines LLVMFuzzerCustomMutator.
#pragma once

// One in this many mutations of a parsing input is libFuzzer's byte mutation all the same (a target whose
// input is also text, as the tokenizer's, defines it lower before the include).
#ifndef DAK_FUZZ_BYTE_MUTATION_ONE_IN
#define DAK_FUZZ_BYTE_MUTATION_ONE_IN 16
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace dak_fuzz {

/// Every value of `j` (the root included), depth first.
inline void collect_values(nlohmann::json& j, std::vector<nlohmann::json*>& out) {
  out.push_back(&j);
  if (j.is_object()) {
    for (auto& [key, v] : j.items()) collect_values(v, out);
  } else if (j.is_array()) {
    for (auto& v : j) collect_values(v, out);
  }
}

/// One hand-edit-like change of one value of `j`, chosen by `rng`.
inline void mutate_json(nlohmann::json& j, std::mt19937_64& rng) {
  std::vector<nlohmann::json*> values;
  collect_values(j, values);
  nlohmann::json& v = *values[rng() % values.size()];
  const auto pick = [&](uint64_t n) { return rng() % n; };
  if (v.is_object() && !v.empty() && pick(3) == 0) {  // remove a key
    auto it = v.begin();
    std::advance(it, pick(v.size()));
    v.erase(it.key());
    return;
  }
  if (v.is_array() && !v.empty() && pick(2) == 0) {  // drop or double an element
    const size_t i = pick(v.size());
    if (pick(2) == 0) {
      v.erase(i);
    } else {
      v.insert(v.begin() + std::ptrdiff_t(i), v[i]);
    }
    return;
  }
  if (v.is_number() && pick(4) != 0) {  // a number edited as a number
    const double d = v.get<double>();
    // Integer edits wrap (unsigned arithmetic): the mutator itself must not overflow.
    const uint64_t i = v.is_number_integer() ? uint64_t(v.get<int64_t>())
                       : (d > -9e18 && d < 9e18)  ? uint64_t(int64_t(d))
                                                  : 0;
    switch (pick(12)) {
      case 0: v = 0; break;
      case 1: v = -1; break;
      case 2: v = int64_t(i + 1); break;
      case 3: v = int64_t(i - 1); break;
      case 4: v = int64_t(0 - i); break;
      case 5: v = int64_t(i * 2); break;
      case 6: v = std::numeric_limits<int64_t>::max(); break;
      case 7: v = std::numeric_limits<int64_t>::min(); break;
      case 8: v = 1e300; break;
      case 9: v = d * 0.5 + 0.25; break;
      case 10: v = 1e-300; break;
      default: v = int64_t(1) << pick(63); break;
    }
    return;
  }
  switch (pick(7)) {  // another type in its place
    case 0: v = nullptr; break;
    case 1: v = pick(2) == 0; break;
    case 2: v = ""; break;
    case 3: v = "x"; break;
    case 4: v = nlohmann::json::array(); break;
    case 5: v = nlohmann::json::object(); break;
    default: v = double(int64_t(pick(2001)) - 1000) / 8.0; break;
  }
}

}  // namespace dak_fuzz

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  std::mt19937_64 rng(seed);
  if (j.is_discarded() || rng() % DAK_FUZZ_BYTE_MUTATION_ONE_IN == 0) return LLVMFuzzerMutate(data, size, max_size);
  const int edits = 1 + int(rng() % 3);
  for (int e = 0; e < edits; ++e) dak_fuzz::mutate_json(j, rng);
  const std::string out = j.dump();
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
