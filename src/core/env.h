// A/B switches read from the environment (diagnostics; the list is in README.md). Every switch is
// read through these two functions, so a value is accepted or refused the same way everywhere: an
// unknown value is ignored with a notice on stderr, never taken as "set".
#pragma once

#include <initializer_list>

namespace dak {

/// The index of environment variable `name`'s value in `choices` (exact match), or -1 when it is
/// unset or empty, or none of them (then with the notice "dak: notice: NAME='value' ignored (expected ...)"
/// on stderr, once per process for each variable and value). Thread-safe.
int env_choice(const char* name, std::initializer_list<const char*> choices);

/// A 0 / 1 switch: true for "1", false for "0", `default_value` when unset, empty or anything else
/// (with env_choice's notice).
bool env_flag(const char* name, bool default_value);

}  // namespace dak
