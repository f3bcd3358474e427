// Reading and parsing of user-supplied JSON files (config.json, hardware profiles, plans) with
// errors that say what is wrong and where the syntax breaks.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dak {

/// Largest JSON file dak reads (64 MiB): a config.json, profile or plan is a few hundred KiB at
/// most; the limit keeps a device file or a wrong path (e.g. /dev/zero) from being read forever.
constexpr int64_t kMaxJsonFileBytes = int64_t(64) << 20;

/// Deepest nesting of arrays and objects parse_json_text accepts (dak's files use fewer than 10).
constexpr int kMaxJsonDepth = 64;

/// Parses `text`, the contents of the JSON file `path` (`what` names it in messages, e.g.
/// "hardware profile"). Throws dak::Error, located at `path` with `fix` as the remedy, for:
/// a syntax error ("<what> is not valid JSON: line L, column C: <the parser's message>"; columns
/// count UTF-8 characters, a leading byte-order mark not included; the message is cut to 200
/// characters), a NUL byte (binary data, not JSON text), a number outside the range of a double
/// (e.g. 1e400), a key given twice in one object, and nesting deeper than kMaxJsonDepth.
nlohmann::json parse_json_text(const std::string& text, const std::string& what, const std::string& path,
                               const std::string& fix);

/// Reads the regular file `path` (at most kMaxJsonFileBytes) and parses it with parse_json_text.
/// Throws dak::Error for a missing or unreadable file, a directory or other non-regular file, a
/// file above the size limit, and everything parse_json_text refuses; a path this user may not
/// reach or read is path_error's (the folder or file at fault, not "no such file").
nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& what, const std::string& fix);

/// A float as the decimal it was written as, for JSON output: the double of the float's shortest
/// round-trip decimal (1e-5f gives 1e-05, not the 9.99999974737875e-06 of its widening to double);
/// reading it back as a float gives `v` again. Non-finite values stay as they are.
double float_as_written(float v);

/// Refuses a dak file of another kind read where `expected_format` is ("dak.plan" for --plan,
/// "dak.hardware_profile" for --profile, "" for a model's config.json): a JSON object whose "format"
/// names a hardware profile or a plan says which it is and the option that takes it ("'<where>' is a
/// hardware profile ...; pass it with --profile"). Returns for any other file, the expected kind
/// included. Throws dak::Error located at `where`.
void check_dak_file_kind(const nlohmann::json& j, const std::string& expected_format, const std::string& where);

/// The dotted paths ("inputs.batchh", "operators[3].hots_rows") of the members of `in` that `known`
/// (the same document as dak writes it back) lacks, recursing into objects and into arrays of
/// objects element by element; a top-level member named `free_key` (e.g. a profile's "sources") is
/// free-form and skipped. For the notices of a hand-edited file's misspelt or extra fields.
std::vector<std::string> unknown_json_fields(const nlohmann::json& in, const nlohmann::json& known,
                                             const std::string& free_key = "");

}  // namespace dak
