// Shared pieces of the `dak` subcommands: default model resolution, engine selection,
// timing, and small parsers for flag values.
#pragma once

#include <CLI/CLI.hpp>

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/checkpoint.h"
#include "core/config_locator.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/generate.h"
#include "core/hardware_profile.h"
#include "core/plan.h"
#ifdef DAK_HAVE_CUDA
#include "gpu/gpu_engine.h"
#endif

namespace dak::cli {

/// The model used when --model is not given: $DAK_MODEL if set (a path, or a shipped config's name,
/// which dak plan and --random-weights take), else the SmolLM2-135M-Instruct GGUF that
/// tools/setup.sh installs under models/. Throws dak::Error (saying to run tools/setup.sh or pass
/// --model) if it is missing, and one naming DAK_MODEL when that names nothing.
std::filesystem::path default_model_path();

/// $DAK_MODEL ("" when unset or empty): the model the commands take without --model.
std::string dak_model_env();

/// How a refusal names a model that came from $DAK_MODEL (its `where`).
inline constexpr const char* kDakModelWhere = "DAK_MODEL (environment)";

/// Opens `model` (or the default when empty: default_model_path()). Prints a notice on stderr when a
/// folder holds both safetensors and GGUF weights (mixed_weights_notice) or its config lacked size
/// keys. A shipped config name (no weights) is refused naming `where` (how the command took the model:
/// --model, or MODEL for dak inspect's positional; kDakModelWhere, with the path, for a model from
/// $DAK_MODEL), with `shipped_config_fix` as the fix when not empty (a config.json whose folder holds
/// weights gets "pass its folder" instead; else:
/// add `random_weights_flags`, which dak generate and dak bench take: " --random-weights", and
/// " --random-weights --prompt-ids 1,2,3" where the command has text prompts, which a config without
/// a tokenizer cannot encode).
std::unique_ptr<Checkpoint> open_model(const std::string& model, const std::string& where = "--model",
                                       const std::string& shipped_config_fix = "",
                                       const std::string& random_weights_flags = " --random-weights");

struct OffloadArgs;

/// The offload request of a run: the flags (cli/offload_options.h) and the run's shape, which the
/// plan is made for (prompt_len: the longest prompt).
struct EngineOffload {
  const OffloadArgs* args = nullptr;
  RequestedShape shape;  // batch = prompts, prompt_len = the longest, gen_len; in the command's terms
  std::string gemm = "auto";  // --gemm: auto, cublas or tiered (GPU path; ignored on the CPU)
};

#ifdef DAK_HAVE_CUDA
/// HBM free on CUDA device 0 now, bytes; 0 when the device cannot be probed.
int64_t free_hbm_bytes_now();
/// The engine's offload mode for --offload (auto, direct and none read host bytes as the plan says:
/// kDirect).
gpu::OffloadMode offload_mode_of(const OffloadArgs& args);
/// The engine's GEMM backend for --gemm (auto, cublas, tiered; add_gemm_option checks the value).
gpu::GemmBackend gemm_backend_of(const std::string& gemm);
#endif

/// Registers --gemm auto|cublas|tiered (the GPU engine's GEMM for the linear layers) on `c`.
void add_gemm_option(CLI::App* c, std::string* gemm);

/// Registers --weights-seed (uint64, unsigned_64()) on `c`, the seed of --random-weights.
CLI::Option* add_weights_seed_option(CLI::App* c, uint64_t* seed);

/// Throws dak::Error (exit 1: a conflict between options, README) when --weights-seed (`seed`, from
/// add_weights_seed_option) was given without --random-weights: the seed would be ignored (the
/// session-17 trial).
void check_weights_seed(const CLI::Option& seed, bool random_weights);

/// Engine for --device cpu|cuda|auto. cuda: the GPU engine (requires a Hopper GPU; throws
/// dak::Error explaining what is missing otherwise). auto: cuda when usable, else the CPU
/// reference with a notice on stderr. `offload` (optional): plan and apply an offload on the GPU
/// (the plan's summary goes to stderr); offload flags with --device cpu are an error. With cuda or
/// auto, a budget or ratio `dak plan` refuses for the run's shape is refused before the GPU is looked
/// for; valid ones are ignored with a notice when auto falls back to the CPU (whose weights live in
/// host memory anyway).
std::unique_ptr<Engine> make_engine(const Checkpoint& ckpt, const std::string& device,
                                    const EngineOffload* offload = nullptr);

/// Why the GPU path cannot run here (no CUDA device or driver, not a Hopper GPU, or a dak built
/// without CUDA), as a sentence; "" when it can.
std::string gpu_unavailable_reason();

/// GPU engine with deterministic random weights for `config` (--random-weights; seed
/// `weights_seed`). `device` is cuda or auto; both need a usable GPU (random weights exist only
/// on the GPU), cpu is refused. Throws dak::Error saying what is missing.
std::unique_ptr<Engine> make_random_engine(const LocatedConfig& config, uint64_t weights_seed,
                                           const std::string& device, const EngineOffload* offload = nullptr);

/// "1,2,3" -> {1, 2, 3} (blanks around an id allowed). Throws dak::UsageError naming `flag` for text
/// that is not a comma list of unsigned decimal integers ("-5", "1,,2", "a"), dak::Error for an id
/// above 2^31 - 1 (no vocabulary is that large).
std::vector<int32_t> parse_id_list(const std::string& s, const std::string& flag);

/// "8, 64,512" -> {"8", "64", "512"}: the items between commas, spaces and tabs around each
/// removed. An empty item stays as "" ("8,,64", "8,") for the caller to refuse; "" -> {""}.
std::vector<std::string> split_list(const std::string& s);

/// The model names (shipped config names or paths) of a comma list such as --models, blanks around
/// each removed. Throws dak::UsageError naming `flag` when an item is empty ("llama-2-7b,").
std::vector<std::string> parse_name_list(const std::string& s, const std::string& flag);

/// How a list error names the item it refused: "'abc' is not one", or "an item is empty".
std::string bad_item(const std::string& tok);

/// The whole of `tok` as a decimal integer (strtoll: leading white space and a sign allowed);
/// nullopt when it is empty, has anything after the number, or overflows int64.
std::optional<int64_t> parse_integer(const std::string& tok);

/// The whole of `tok` as a decimal number (strtod); nullopt when it is empty, has anything after
/// the number, is nan, or is hexadecimal ("0x.8"). A number beyond double's range is +-HUGE_VAL
/// ("1e400", "-1e400"), and so is an infinity written out ("inf", "+INF", "-infinity", any case);
/// one below the range rounds towards 0 ("1e-400"; number_underflows tells it): so the caller's range check refuses them as out
/// of range (exit 1), not as text that is not a number (exit 2).
std::optional<double> parse_number(const std::string& tok);

/// Whether `tok` is a nonzero decimal number below double's normal range ("1e-400", "-1e-310"),
/// which parse_number rounds towards 0: what a range check names as too small to hold instead of
/// taking it as 0 (a new-user trial: `--temperature 1e-400` ran greedy with a notice about
/// temperature 0, and `--offload-ratio 1e-400` planned 0 %).
bool number_underflows(const std::string& tok);

/// Whether `tok` is written as a decimal integer: an optional sign, then digits only, whatever its
/// size ("-5", "010", a 300-digit number; not "", "1.5", "0x10"). What a list parser refuses as not
/// a number (dak::UsageError) rather than as out of range (dak::Error).
bool is_integer_text(const std::string& tok);

/// "8,64,512" -> {8, 64, 512}: the items of split_list(s) as integers in [1, max], sorted, duplicates
/// removed. Throws dak::UsageError naming `flag` for an item that is not an integer ("'<s>' is not a
/// comma-separated list of <what>", fix: write positive integers ..., e.g. <example>) and dak::Error
/// for one outside [1, max] ("<flag> value <v> is outside [1, <max>]", fix: use <what> from 1 to
/// <max><range_note>).
std::vector<int64_t> parse_count_list(const std::string& s, const std::string& flag, int64_t max,
                                      const std::string& what, const std::string& example,
                                      const std::string& range_note = "");

/// Writes `text` to `path` and says "dak: wrote <path>" on stderr. A new file is created
/// exclusively: where one appeared at `path` since check_report_files, the text goes to a free name
/// beside it ("x-2.json"), with a notice. A character device or FIFO (/dev/null, a pipe) is written
/// as it is (core/text_file.h). Throws dak::Error naming `flag` (--json, --csv) when the file cannot be written, after
/// removing the part written to a file it created.
void write_text_file(const std::string& path, const std::string& text, const std::string& flag);

/// Refuses, before any work, report files the run could not write or would overwrite: an
/// existing path (a file or a folder: dak never overwrites what the user has, so no input of the
/// run either: a config.json, a --plan file; the fix offers a free name beside it), a missing or
/// unwritable parent folder, or one file for --json and --csv however spelt (same_file: "X" and
/// "./X"). A character device or FIFO (/dev/null, a terminal, a pipe) is taken. Empty names are
/// skipped. Throws dak::Error naming the option.
void check_report_files(const std::string& json_file, const std::string& csv_file);

/// Edit distance of two short strings (insertions, deletions, substitutions): the did-you-mean
/// suggestions of the CLI.
size_t edit_distance(const std::string& a, const std::string& b);

/// The did-you-mean of the CLI: the first of `names` nearest to `word`, if within 2 edits; else "".
std::string nearest_name(const std::string& word, const std::vector<std::string>& names);

/// The profile --profile names: a compiled-in profile (HardwareProfile::builtin_names():
/// h200-default, h100-default, h100-fast-link), always, with a notice where a file of that name exists in the
/// working directory (./NAME reads it); else a file (HardwareProfile::load). Prints a notice on
/// stderr (once per path and process) for each field the reader does not know: a misspelt optional
/// field would otherwise silently keep its default. Throws dak::Error as HardwareProfile::load does,
/// naming the compiled-in profile when a missing file's name is close to one; a file whose "name"
/// is a compiled-in profile's while its values differ gets a notice (plans record only the name).
HardwareProfile load_profile(const std::string& path);

/// The file a --profile value names, as an absolute path for a plan to record; "" for none or a
/// compiled-in name (load_profile's rule).
std::string profile_file_of(const std::string& profile);

/// The planner's profile for a GPU run without --profile: the compiled-in profile of GPU 0
/// (HardwareProfile::all_for_device), else h200-default, with a notice on stderr (once per process)
/// that says how to measure this GPU. Where two were measured on this GPU (the H100 80GB HBM3:
/// h100-default and h100-fast-link), this host's SM read rate of pinned memory is measured once
/// (64 MiB pinned, some tens of ms) and the nearest profile taken (HardwareProfile::nearest_host_link),
/// the choice left in gpu_default_profile_note() for the callers that plan host bytes to say; where
/// that memory cannot be pinned, the first, with a notice. Without a GPU: h200-default, silently.
/// `measured_host_sm_read_gbps` (GB/s, > 0): that rate, measured by the caller (dak bench's B_h), is
/// used instead of measuring; only the first call of a process chooses.
HardwareProfile gpu_default_profile(double measured_host_sm_read_gbps = 0);

/// Why gpu_default_profile() took its profile, where it chose between several of this GPU by the
/// measured host link ("this host's SMs read pinned memory at 51.2 GB/s: planned with ..."); empty
/// where it did not choose (one profile of this GPU, none, no GPU) or before it ran.
const std::string& gpu_default_profile_note();

/// Refuses a count of timed repetitions (`flag`: --repeats, --runs) outside [5, 1000]: medians need
/// at least 5, and more than 1000 would run for hours. Throws dak::Error naming the flag.
void check_timed_runs(int64_t runs, const char* flag);

/// What --batch of dak plan and dak bench takes: "a count from 1 to 65536 (the sequences the planner
/// supports)" (kMaxPlanBatch, core/op_graph.h).
std::string batch_range_text();

/// Refuses a --batch value (`flag`) of dak plan or dak bench outside [1, kMaxPlanBatch] (65536
/// sequences: the most the planner, and so an offload plan, supports). `text`, when not empty, is the
/// value as written, shown instead of `batch` (a value beyond int64 comes as INT64_MIN or INT64_MAX).
/// Throws dak::Error (exit 1: a value out of range, README) naming `flag`: "--batch 0 is not a
/// positive count", "--batch 65537 is larger than the planner supports (65536 sequences)".
void check_batch_size(int64_t batch, const std::string& flag, const std::string& text = "");

/// Refuses a B_g measurement (dak bench's --hbm-buffer-gib / --hbm-runs) whose buffer is not a
/// finite size in (0, 64] GiB (NaN, inf or 1e300 reached an undefined float-to-integer conversion)
/// or whose launches per configuration are outside [1, 1000]. Throws dak::Error naming the flags.
void check_hbm_measurement(double buffer_gib, int64_t runs);
/// The allowed values of --hbm-buffer-gib (decimal_number(kHbmBufferGibText, 0, 64, true)).
inline constexpr const char* kHbmBufferGibText = "a size in GiB above 0 and at most 64 (e.g. 2)";

/// The end of a bench report: writes `json` (indented by 2) to `json_file` and `csv` to `csv_file`
/// when they are not empty, then prints the report on stdout as `output` says: json, csv, or
/// anything else the text form `text`.
void emit_report(const std::string& text, const nlohmann::json& json, const std::string& csv,
                 const std::string& output, const std::string& json_file, const std::string& csv_file);

/// CLI11 validator (use with ->transform) for a uint64 option (a seed): a whole decimal number from 0
/// to 2^64 - 1 (CLI11 alone wraps -1 to 2^64 - 1 and clamps larger values, so different seeds gave
/// the same run); an accepted value is rewritten without its sign and leading zeros (CLI11 alone
/// reads "010" as octal 8). Text that is not a whole number ("abc", "1.5", "0x10") is refused at
/// parsing (exit 2); a whole number below 0 ("-1") or above 2^64 - 1 is out of range (exit 1, as
/// whole_number's), both "must be a whole number from 0 to 18446744073709551615, got '<v>'".
CLI::Validator unsigned_64();

/// CLI11 validator (use with ->transform) for a whole-number option. A value that is not a whole
/// decimal number ("abc", "1.5", "0x10") is "'abc' is not a whole number", refused at parsing (exit
/// 2); one outside [min, max] (or beyond int64: a 300-digit number) is "'<v>' is too large" (or too
/// small), out of range (exit 1: see take_out_of_range_value); each followed by "; use <allowed>"
/// (e.g. "a count from 1 to 1000"), with the option's name in front. A long value is shown by its
/// first characters and its length. An accepted value is rewritten in canonical decimal, since
/// CLI11 alone reads "010" as octal 8 and "0x10" as 16.
CLI::Validator whole_number(const std::string& allowed, int64_t min = INT64_MIN, int64_t max = INT64_MAX);

/// CLI11 validator (use with ->transform) for a decimal option: a value that is not a decimal
/// number ("abc", "nan", "0x10") is "'abc' is not a number", refused at parsing (exit 2); one below
/// `min` (at or below it when `min_exclusive`) or above `max`, or beyond double's range ("1e400",
/// "inf", "-inf": whatever the bounds), is "'<v>' is too small" / "too large", out of range (exit 1: see
/// take_out_of_range_value), whose fix is "use <allowed>" (e.g. "a temperature from 0 (greedy) to
/// 100"); the option's name goes in front. A long value is shown by its first characters and its
/// length.
CLI::Validator decimal_number(const std::string& allowed, double min, double max, bool min_exclusive = false);

/// A well-formed value outside its option's range, found by whole_number, decimal_number or
/// unsigned_64 while CLI11 parses. Such a value is not a usage error (README, "Exit status": exit 1,
/// not 2), and a usage error anywhere on the command line must still be reported as one: so the
/// validator lets the parse go on, with the value clamped into range for the conversion, and records
/// it here; main() refuses it once the whole command line has parsed, before any command runs.
struct OutOfRangeValue {
  std::string validator;  // the name of the validator that found it (one per option: names the option)
  std::string message;    // "'0' is too small"
  std::string fix;        // "use a count of at least 1 ..." (the option's allowed values); "": none
};

/// The first value out of range recorded since the last call, if any (and forgets the others).
std::optional<OutOfRangeValue> take_out_of_range_value();

/// Sets the fix of the error "<option> was given an empty value" (main() refuses every empty value,
/// "--prompt ''", before parsing) for `option`, one that has no default to fall back on, so that
/// leaving it out is no fix (dak generate's --prompt: 'give the prompt text, e.g. --prompt "Hello"').
/// Returns `option`.
CLI::Option* set_empty_value_fix(CLI::Option* option, std::string fix);

/// The fix of the error "<option> was given an empty value" for `option` of `command` ("dak
/// generate"): the one set_empty_value_fix set; else, for a required option (->required()), "give
/// <option> a value: <command> needs it (`<command> --help` says what it takes)"; else "give a
/// value, or leave the option out for its default".
std::string empty_value_fix(const CLI::Option& option, const std::string& command);

/// Registers `check` for subcommand `c`: a test of an input the command line must give that CLI11's
/// ->required() cannot express (one of two options, as dak generate's --prompt / --prompt-ids).
/// `check` throws dak::UsageError (exit 2, as a missing required option) when the input is missing.
void add_required_input_check(CLI::App* c, std::function<void()> check);

/// Runs the checks of add_required_input_check for the subcommands given on the command line. main()
/// calls it once the whole command line has parsed (CLI11's own usage errors first) and before it
/// refuses a value out of range, so a missing input exits 2 whatever else is on the line.
void run_required_input_checks();

/// CLI11 validator (use with ->check) for an option whose command parses its text with `parse` (the
/// same function, called again later: a comma list, a byte size): while CLI11 parses, the
/// dak::UsageError that `parse` throws for text that is not such a value ends the parse with exit 2,
/// like whole_number's refusals; a dak::Error for a well-formed value out of range is left to the
/// command (exit 1), which runs only once every option has parsed.
CLI::Validator value_syntax(std::function<void(const std::string&)> parse);

/// The JSON text of `j` (indent 2) with invalid UTF-8 inside its strings replaced by U+FFFD:
/// generated text cut inside a multi-byte character, file names that are not UTF-8 (nlohmann's
/// plain dump() throws on them). Every `--output json` of the CLI goes through it.
std::string json_text(const nlohmann::json& j);

/// For a run stopped by non-finite output (`e`: "logits are not finite", or perplexity's "the negative
/// log-likelihood is not finite"): when a weight of `ckpt` (null: none to read) holds a non-finite
/// value, throws dak::Error naming that tensor, the element and its file (trial of session 50: a NaN in
/// an f32 weight was reported only by the logits). Returns otherwise: the caller rethrows `e`.
void explain_non_finite_output(const Error& e, const Checkpoint* ckpt);

/// A notice on stderr when `config` (read from `where`) lacked size keys and took the transformers
/// defaults (ModelConfig::defaulted_sizes): "config.json has no 'hidden_size': ...". Nothing otherwise.
void notice_defaulted_sizes(const ModelConfig& config, const std::string& where);

/// Makes std::cout write through C's stdout and note the errno of the first write that fails, so
/// that flush_stdout_or_fail can say why, however long ago the write failed. main() calls it before
/// anything is written; the commands write their results with std::cout.
void capture_stdout_errors();

/// Flushes stdout (C++ and C streams); throws dak::Error "cannot write the output to standard
/// output: <reason>" (a full disk, a closed pipe) when that or an earlier write failed, so a run
/// never ends with a truncated output and exit code 0. The reason is that of the first failed write
/// (capture_stdout_errors), left out only when the system gave none.
void flush_stdout_or_fail();

/// Thrown by a command whose run a SIGINT / SIGTERM stopped (core/interrupt.h) once it has printed
/// what it kept: main ends the process by that signal (its default action, so a calling shell script
/// stops too; the status 130 for Ctrl-C, 143 for SIGTERM: README, "Exit status").
struct Interrupted {
  int signal = 0;
};

/// How read_text_input names its input in messages.
struct TextInputTerms {
  std::string flag;     // the option that takes the path: "--file"
  std::string command;  // "dak perplexity"
  std::string noun;     // what the text is for: "the text to score", "the prompt"
  /// The fix for an input over kMaxPerplexityTextBytes: given the file as a shell word, "" for
  /// standard input.
  std::function<std::string(const std::string& file)> too_long_fix;
};

/// The bytes of `path` (`-`: standard input, with a notice when it is a terminal): a regular file or
/// a pipe, at most kMaxPerplexityTextBytes (64 MiB). Throws dak::Error naming the path and
/// terms.flag for a missing file, a folder or device, a file this user may not read (path_error),
/// a failed read, and an input over the cap (refused before reading when the size is known). A
/// leading UTF-8 byte order mark is left out, with a notice on stderr. The caller checks the UTF-8.
std::string read_text_input(const std::string& path, const TextInputTerms& terms);

/// The CLI's progress line for work that may take minutes (a long CPU prefill, perplexity, the decode
/// steps of a CPU batch): on stderr (stdout carries only results), silent for the first `after_s`
/// seconds, then live (at most every 0.25 s) on a terminal and every 10 s in a log.
std::shared_ptr<ProgressLine> stderr_progress_line(double after_s = 2.0);

/// The progress line of a checkpoint load (an engine's LoadProgress), shown after 2 s:
/// load_progress_text's lines (issue 7: progress on loads).
LoadProgress load_progress_line();

/// Seconds since `t0`.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace dak::cli
