// Byte sizes as users write them on the command line ("20GiB", "1.5 GB", "512MiB", "4096"),
// and as dak prints them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace dak {

/// Parses a non-negative size: a decimal number with an optional unit, case-insensitive, with or
/// without a space: B; KB, MB, GB, TB (powers of 1000); KiB, MiB, GiB, TiB and the single
/// letters K, M, G, T (powers of 1024). Fractions are rounded down to whole bytes.
/// Throws dak::UsageError naming `where` (e.g. "--gpu-memory") for anything else (negative values
/// included: a sign is not part of a size), and dak::Error for sizes of 2^63 bytes or more.
int64_t parse_byte_size(const std::string& text, const std::string& where);

/// "512 B", "1.50 KiB", "20.00 GiB" (binary units, two decimals).
std::string format_bytes(double bytes);

/// "13.48 GiB": `bytes` in GiB with two decimals, whatever the size (memory messages that compare
/// amounts: needed against free).
std::string format_gib(double bytes);

/// `a` and `b` bytes as format_bytes writes them, or, where that reads the same for different sizes,
/// in their unit with as many decimals (up to nine) as they need to read differently: "12.585 GiB"
/// against "12.583 GiB", not "12.58 GiB" twice (the session-25 second trial).
std::pair<std::string, std::string> format_bytes_apart(int64_t a, int64_t b);

/// A bound a fix line tells the user to give, rounded toward the side that still works so that
/// passing the printed number back is accepted: down for "at most", up for "at least", to four
/// significant digits and at least two decimals ("14.02", "0.0001562", "139.28"). "0" for values <= 0.
std::string format_at_most(double value);
/// See format_at_most; rounded up.
std::string format_at_least(double value);

}  // namespace dak
