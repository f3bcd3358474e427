// The generation loop and perplexity over any Engine, plus token sampling.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/engine.h"

namespace dak {

/// The what-text of the errors generate() and perplexity() throw for output that is not finite; the
/// CLI recognizes them by it to name the checkpoint's weight at fault (explain_non_finite_output).
inline constexpr const char* kNonFiniteLogits = "logits are not finite";
inline constexpr const char* kNonFiniteNll = "the negative log-likelihood is not finite";

/// temperature == 0: greedy (argmax, lowest id on ties). Otherwise softmax(logits / T)
/// restricted to the top_k most likely ids (0 = all) and then to the smallest set whose
/// probability reaches top_p (1 = all), sampled with a per-sequence std::mt19937_64 seeded
/// from (seed, sequence index): the same seed gives the same ids.
struct SamplingParams {
  float temperature = 0.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  uint64_t seed = 0;
};

/// The per-sequence generator of generate(): std::mt19937_64 seeded with
/// std::seed_seq{seed low 32 bits, seed high 32 bits, sequence low 32 bits, sequence high 32 bits}
/// (both fully specified by the C++ standard, so the ids do not depend on the platform).
/// sample_token draws u = (rng() >> 11) * 2^-53 once per sampled token (none when greedy).
std::mt19937_64 sequence_rng(uint64_t seed, int64_t sequence);

/// Samples one id from logits [vocab] (fp32). Throws dak::Error for invalid parameters
/// (negative temperature, top_p outside (0, 1], negative top_k).
int32_t sample_token(std::span<const float> logits, const SamplingParams& p, std::mt19937_64& rng);

struct GenerateOptions {
  int64_t max_new_tokens = 64;
  SamplingParams sampling;
  std::vector<int32_t> eos_ids;  // a sequence stops after emitting one of these
  int64_t max_context = 0;       // KV context per sequence (dak generate --max-context); 0: longest prompt +
                                 // max_new_tokens, capped at the model's context
  bool chat = false;             // prompts rendered with the chat template: a length refusal says so
  int64_t max_batch = 0;         // sequences run at once (dak generate --max-batch; vLLM's max_num_seqs): the
                                 // engine's batch (KV cache slots); a finished sequence's slot takes the next
                                 // prompt, in order (continuous batching); 0: every prompt in one batch
};

struct SequenceResult {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> generated_ids;
  bool stopped_at_eos = false;
};

struct GenerateResult {
  std::vector<SequenceResult> sequences;
  double prefill_s = 0;        // wall time of the first step (the batched prefill of the first prompts) = TTFT (s)
  double decode_s = 0;         // wall time of every later step in which a running sequence decoded a token
                               // (seconds); a step that also prefills a prompt admitted into a finished
                               // sequence's slot included
  int64_t decode_steps = 0;    // those steps: TPOT = decode_s / decode_steps
  int64_t decode_tokens = 0;   // tokens those steps gave (an admitted prompt's first one included):
                               // decode_tokens / decode_s is the decode rate
  double admit_s = 0;          // wall time of the steps that only prefilled admitted prompts (seconds)
  int64_t refills = 0;         // prompts that took a finished sequence's slot (GenerateOptions::max_batch)
  bool interrupted = false;    // stopped early by SIGINT / SIGTERM (core/interrupt.h): the sequences hold what
                               // was generated until then; prompts not yet admitted have no tokens
};

/// A batch's sequence `text` after its number `number` ("[i] "), as dak generate prints it: every
/// further line that is not blank is indented by the number's width, so it reads as part of this
/// sequence (README, "Output"); a blank line (spaces, tabs, a carriage return) stays as it is, and a
/// text that starts on a new line gets the number without its trailing blank, so no line gains
/// blanks at its end.
std::string frame_sequence_text(const std::string& number, const std::string& text);

/// Called after every step with (sequence index, new token id).
using TokenCallback = std::function<void(int64_t, int32_t)>;

/// Sequences generate() runs at once for `count` prompts under max_batch (GenerateOptions::max_batch;
/// 0: all of them): min(max_batch, count), or count. The engine's plan and KV cache are sized for it.
int64_t generate_slot_count(int64_t count, int64_t max_batch);

/// The checks generate() makes on a request before the engine starts, for a model of `model_ctx`
/// positions and `model_vocab` ids (so a caller can run them before loading the weights): prompts
/// present and non-empty, max_new_tokens and max_batch non-negative, max_context within the model's,
/// every prompt plus max_new_tokens within the context (a prompt that alone fills it is named as
/// such: no count of new tokens helps), every id inside the vocabulary. Throws dak::Error with the
/// numbers and the way out.
void check_generate_request(const std::vector<std::vector<int32_t>>& prompts, const GenerateOptions& opts,
                            int64_t model_ctx, int64_t model_vocab);

/// Runs the prompts in generate_slot_count(count, max_batch) slots of one engine batch (continuous
/// batching): the first step prefills the first prompts as one batch; every later step decodes one
/// token per running sequence and gives each slot whose sequence finished (EOS or max_new_tokens) the
/// next prompt, in order (Engine::reset, its prefill in the same step); it ends when every sequence
/// has finished. A finished sequence with no prompt left to take its slot stays in the steps with a
/// discarded token where Engine::prefers_full_decode_steps(). Sequence i samples with
/// sequence_rng(seed, i) whatever its slot and step. on_token gets the run's sequence index. Throws
/// dak::Error if a prompt is empty, max_batch is negative, or prompt + max_new_tokens exceeds the
/// model context (message gives both numbers and the limit); every prompt is checked before the
/// engine starts. Inside an InterruptScope (core/interrupt.h) a SIGINT / SIGTERM ends the run before
/// the next step, with GenerateResult::interrupted.
GenerateResult generate(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                        const GenerateOptions& opts, const TokenCallback& on_token = {});

/// How messages name prompt `i` (from 0) of `count`: "the prompt" when it is the only one, else
/// "prompt i+1 of count".
std::string prompt_label(size_t i, size_t count);

/// A progress line on `out` (stderr: stdout carries results) for work that may take minutes:
/// silent for the first `after_s` seconds after construction (or restart()), then each update()
/// is shown at most every `every_s` seconds: on a terminal rewritten in place ("\r", blanked to the
/// length of the line it replaces), elsewhere as new lines. finish() shows its line and a newline
/// if anything was shown or `after_s` has passed (else nothing), and ignores later calls.
class ProgressLine {
 public:
  ProgressLine(std::FILE* out, bool terminal, double after_s, double every_s);
  /// A line shown on a terminal and never finished (the work failed) is ended with a newline, so
  /// that the error printed next starts on its own line.
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  void restart();  // the silent period counts from now
  void update(const std::string& line);
  void finish(const std::string& line);
  double seconds() const;  // since construction or restart()
  bool finished() const { return finished_; }

 private:
  void show(std::string line, bool last);
  std::FILE* out_;
  bool terminal_;
  double after_s_, every_s_;
  bool shown_ = false, finished_ = false;
  size_t width_ = 0;  // of the line on the terminal, to blank a longer one it replaces
  std::chrono::steady_clock::time_point start_, last_;
};

/// A checkpoint load's progress line: "dak: loading weights: 3.2 of 6.7 billion parameters (48%),
/// 21 s", and at done >= total "dak: loading weights: done, 6.7 billion parameters in 43 s"
/// (millions below 10^9 parameters). `seconds` since the load began.
std::string load_progress_text(uint64_t done, uint64_t total, double seconds);

/// The progress line of a long prefill, fed with CpuModel's layer progress (dak generate on the CPU
/// path, where a prompt of a few thousand tokens takes minutes). Silent for the first `after_s`
/// seconds of the first step, then "dak: prefill of N prompt tokens: layer L of M (P%), S s" on
/// `out` (stderr: stdout carries only the generated text), at most every `every_s` seconds: on a
/// terminal rewritten in place ("\r"), elsewhere as new lines; once shown, it ends with
/// "dak: prefill of N prompt tokens: done in S s" and a newline. Later steps (decode) are not reported.
class PrefillProgress {
 public:
  PrefillProgress(std::FILE* out, bool terminal, double after_s, double every_s);
  explicit PrefillProgress(std::shared_ptr<ProgressLine> line);  // its timing and destination
  void operator()(int64_t tokens, int64_t layers_done, int64_t layers);

 private:
  std::shared_ptr<ProgressLine> line_;  // shared: CpuModel keeps a copy of this callable
};

struct PerplexityResult {
  double perplexity = 0;
  double mean_nll = 0;       // nats per predicted token
  int64_t tokens_scored = 0;
  double seconds = 0;
  bool interrupted = false;  // stopped early by SIGINT / SIGTERM (core/interrupt.h): the score of the first
                             // tokens_scored tokens (NaN perplexity and mean_nll where none was scored)
  int64_t tokens_total = 0;  // the tokens a whole run scores (ids - 1)
};

/// The most text `dak perplexity` reads, from a file or standard input alike, bytes: 64 MiB is some 16
/// million tokens, weeks of scoring on the CPU reference path and hours on a GPU. A larger input (`yes |`,
/// a disk image passed by mistake) is refused naming this cap, with how to score a part of it, rather
/// than read into memory without end; standard input is read in chunks and no further than the cap.
inline constexpr int64_t kMaxPerplexityTextBytes = int64_t(64) << 20;

/// The part of a long text that dak perplexity's hints suggest scoring on the CPU reference path: 4
/// KiB, about 1000 tokens, seconds for SmolLM2-135M on 2 cores (cpu_model.h's estimates), where 32 MiB
/// would take days. The oversized-input error on the CPU path and long_cpu_perplexity_notice both give it.
inline constexpr int64_t kCpuPerplexityPartBytes = int64_t(4) << 10;

/// The part suggested for an input over kMaxPerplexityTextBytes where the run is on a GPU: 32 MiB.
inline constexpr int64_t kGpuPerplexityPartBytes = int64_t(32) << 20;

/// A shell command that scores the first `part_bytes` (a whole number of KiB) of a text with dak
/// perplexity, cut with head -c and passed through iconv -c (which drops a character cut at the end):
/// "head -c 4K FILE | iconv -c -f UTF-8 -t UTF-8 | dak perplexity --file -" for `file` (a shell word:
/// shell_word() of a path, or a placeholder), or for standard input when `file` is empty, "... | head
/// -c 4K | iconv ...". `options` (" --model m", each with its leading space) end the dak command.
std::string perplexity_part_command(int64_t part_bytes, const std::string& file, const std::string& options = "");

/// `part_bytes` in words for a hint: "4 KiB", "32 MiB" (a whole number of KiB).
std::string perplexity_part_words(int64_t part_bytes);

/// The window perplexity() scores in for --context `context` on a model of `model_ctx` positions:
/// `model_ctx` for 0, `context` when it is in [2, model_ctx]. Throws dak::Error naming --context,
/// with the allowed values, for anything else.
int64_t perplexity_window(int64_t context, int64_t model_ctx);

/// Called before each window of perplexity() with the tokens scored so far, the tokens the window
/// scores and the total to score (n - 1), and once at the end with (total, 0, total).
using PerplexityProgress = std::function<void(int64_t scored, int64_t window, int64_t total)>;

/// Perplexity of `ids` (teacher-forced, one sequence), scoring tokens 1..n-1, in windows of
/// at most `context` tokens (0: the model context) without overlap of scored tokens: a window
/// starts at the last token of the previous one (as unscored context), so every token 1..n-1
/// is scored exactly once. Throws dak::Error for fewer than 2 ids or a window that
/// perplexity_window() refuses. Inside an InterruptScope (core/interrupt.h) a SIGINT / SIGTERM ends
/// the run before the next window, with PerplexityResult::interrupted and the windows scored so far.
PerplexityResult perplexity(Engine& engine, std::span<const int32_t> ids, int64_t context = 0,
                            const PerplexityProgress& progress = {});

}  // namespace dak
