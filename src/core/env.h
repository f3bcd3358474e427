// A/B switches read from the environment (diagnostics; the list is in README.md). Every switch is
// read through these two functions, so a value is accepted or refused the same way everywhere: an
// unknown value is ignored with a notice on stderr, never taken as "set".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace dak {

/// The index of environment variable `name`'s value in `choices` (exact match), or -1 when it is
/// unset or empty, or none of them (then with the notice "dak: notice: NAME='value' ignored (expected ...)"
/// on stderr, once per process for each variable and value). Thread-safe.
int env_choice(const char* name, std::initializer_list<const char*> choices);

/// A 0 / 1 switch: true for "1", false for "0", `default_value` when unset, empty or anything else
/// (with env_choice's notice).
bool env_flag(const char* name, bool default_value);

/// The items of a comma-separated NAME=VALUE list in environment variable `var` (the per-operator
/// switches DAK_EARLY_W and DAK_GEMM_GRID), in order: take(index, value) for each item whose NAME
/// is names[index] (exact match; the VALUE is everything after the first '='); take returns
/// whether it accepts that name and value. Any other non-empty item (no '=', an unknown name, or
/// a value take refuses) is ignored with the notice "dak: notice: VAR item 'ITEM' ignored
/// (expected `expected`)" on stderr. Unset or empty: no call.
void env_named_items(const char* var, const std::vector<std::string>& names, const char* expected,
                     const std::function<bool(size_t index, const std::string& value)>& take);

/// `text` as a whole decimal number of 1 to `max_digits` digits (max_digits <= 9), or -1 when it is
/// empty, longer or holds any other character (a sign, a space, a point).
int32_t env_decimal(const std::string& text, size_t max_digits);

}  // namespace dak
