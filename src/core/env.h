// A/B switches read from the environment (diagnostics; the list is in README.md). Every A/B switch
// is read through these functions (env_choice / env_flag for one value, env_named_items and
// env_decimal for a per-operator list), so a value is accepted or refused the same way everywhere:
// an unknown value is ignored with a notice on stderr, never taken as "set". (DAK_MODEL,
// DAK_CONFIGS_DIR, DAK_DIAG_SKIP and DAK_TIMELINE_OUT name paths or lists and are read where used.)
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
/// (expected `expected`)" on stderr (ITEM as env_choice shows a value; the first 8 such items,
/// then one line counting the rest). Unset or empty: no call. Prints on every call: parse once per
/// process (both callers keep the result in a static).
void env_named_items(const char* var, const std::vector<std::string>& names, const char* expected,
                     const std::function<bool(std::size_t index, const std::string& value)>& take);

/// Prints "dak: notice: `message`" on stderr the first time this process calls it with `key`, and
/// nothing after (thread-safe): a switch's notice once per process, though plans read it many times.
void env_notice_once(const std::string& key, const std::string& message);

/// `value` as a notice shows it: one line of at most 64 printable ASCII bytes, any other byte as
/// '?', "..." after a cut (a stray escape sequence or a 100 KB value went to the terminal as it
/// was; session 38's trial).
std::string env_printable(const std::string& value);

/// `text` as a whole decimal number of 1 to min(max_digits, 9) digits, leading zeros included, or
/// -1 when it is empty, longer or holds any other character (a sign, a space, a point).
int32_t env_decimal(const std::string& text, std::size_t max_digits);

}  // namespace dak
