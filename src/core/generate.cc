// Sampling, the generation loop and perplexity over any Engine.
#include "core/generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/interrupt.h"

namespace dak {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// engine.step(tokens, all_logits), or nothing where an interrupt ended the step within it (the CPU
/// engine between its layers: StepInterrupted, core/interrupt.h).
std::optional<std::vector<float>> step_unless_interrupted(Engine& engine,
                                                          std::span<const std::vector<int32_t>> tokens,
                                                          bool all_logits) {
  try {
    return engine.step(tokens, all_logits);
  } catch (const StepInterrupted&) {
    return std::nullopt;
  }
}

// Uniform double in [0, 1) from the top 53 bits: the same on every standard library
// (std::uniform_real_distribution is not specified bit-for-bit).
double uniform01(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  float best_v = -INFINITY;
  bool nan = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    nan |= std::isnan(logits[i]);
    if (logits[i] > best_v) {  // strict: the lowest id wins ties
      best_v = logits[i];
      best = int32_t(i);
    }
  }
  if (nan || !std::isfinite(best_v))
    fail(kNonFiniteLogits, "the model's output (greedy sampling)",
         "the model produced inf/NaN: check the checkpoint's weights (a corrupt or wrongly converted file)");
  return best;
}

}  // namespace

std::mt19937_64 sequence_rng(uint64_t seed, int64_t sequence) {
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(uint64_t(sequence)),
                    uint32_t(uint64_t(sequence) >> 32)};
  return std::mt19937_64(seq);
}

int32_t sample_token(std::span<const float> logits, const SamplingParams& p, std::mt19937_64& rng) {
  if (logits.empty()) fail("no logits to sample from", "sample_token", "the vocabulary is empty");
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature))
    fail(fmt::format("temperature must be >= 0, got {}", p.temperature), "--temperature",
         "use 0 for greedy decoding or a positive temperature such as 0.7");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
    fail(fmt::format("top_p must be in (0, 1], got {}", p.top_p), "--top-p",
         "use 1 to disable nucleus sampling or a value such as 0.9");
  if (p.top_k < 0)
    fail(fmt::format("top_k must be >= 0, got {}", p.top_k), "--top-k",
         "use 0 to disable top-k or a positive count such as 40");
  if (p.temperature == 0.0f) return argmax(logits);

  // Candidate ids by descending logit, ties by ascending id; only the top_k when set.
  const int64_t v = int64_t(logits.size());
  const int64_t k = p.top_k > 0 ? std::min<int64_t>(p.top_k, v) : v;
  std::vector<int32_t> ids(static_cast<size_t>(v));
  std::iota(ids.begin(), ids.end(), 0);
  auto before = [&](int32_t a, int32_t b) {
    const float la = std::isnan(logits[a]) ? -INFINITY : logits[a];
    const float lb = std::isnan(logits[b]) ? -INFINITY : logits[b];
    return la > lb || (la == lb && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), before);
  ids.resize(size_t(k));

  // softmax(logits / T) over the candidates, in double.
  const double top = logits[ids[0]];
  if (!std::isfinite(top))
    fail(kNonFiniteLogits, "the model's output (sampling)",
         "the model produced inf/NaN: check the checkpoint's weights (a corrupt or wrongly converted file)");
  std::vector<double> prob(ids.size());
  double sum = 0.0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const float l = logits[ids[i]];
    prob[i] = std::isfinite(l) ? std::exp((double(l) - top) / double(p.temperature)) : 0.0;
    sum += prob[i];
  }
  // Nucleus: the smallest prefix whose probability reaches top_p.
  size_t n = prob.size();
  if (p.top_p < 1.0f) {
    double cum = 0.0;
    for (size_t i = 0; i < prob.size(); ++i) {
      cum += prob[i] / sum;
      if (cum >= double(p.top_p)) {
        n = i + 1;
        break;
      }
    }
    sum = std::accumulate(prob.begin(), prob.begin() + n, 0.0);
  }
  const double u = uniform01(rng) * sum;
  double cum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cum += prob[i];
    if (u < cum) return ids[i];
  }
  return ids[n - 1];
}

int64_t generate_slot_count(int64_t count, int64_t max_batch) {
  return max_batch > 0 ? std::min(max_batch, count) : count;
}

void check_generate_request(const std::vector<std::vector<int32_t>>& prompts, const GenerateOptions& opts,
                            int64_t model_ctx, int64_t model_vocab) {
  if (prompts.empty()) fail("no prompts to generate from", "generate", "pass at least one prompt");
  if (opts.max_new_tokens < 0)
    fail(fmt::format("max_new_tokens must be >= 0, got {}", opts.max_new_tokens), "--max-new-tokens",
         "pass a non-negative count");
  if (opts.max_batch < 0)
    fail(fmt::format("max_batch must be >= 0, got {}", opts.max_batch), "--max-batch",
         "pass the number of sequences to run at once (0: every prompt at once)");
  if (opts.max_context < 0 || opts.max_context > model_ctx)
    fail(fmt::format("max_context {} is outside the model context of {} tokens", opts.max_context,
                     model_ctx),
         "GenerateOptions::max_context", fmt::format("use a value between 1 and {} (0: automatic)", model_ctx));
  const int64_t limit = opts.max_context > 0 ? opts.max_context : model_ctx;
  const char* limit_name = opts.max_context > 0 ? "the --max-context" : "the model context";
  int64_t longest = 0;
  // The longest prompt first (the first of equals): its fix holds for every prompt of the batch (trial
  // of session 49: `-p Hi -p "Hi there you"` named prompt 1, whose -n fix prompt 2 then refused).
  std::vector<size_t> order(prompts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return prompts[x].size() > prompts[y].size(); });
  for (const size_t i : order) {
    const int64_t n = int64_t(prompts[i].size());
    // With --chat the tokens include the template's (its turn markers, a default system message):
    // the trial read "the prompt has 31 tokens" for a one-word prompt.
    const std::string which =
        prompt_label(i, prompts.size()) + (opts.chat ? " (rendered with the chat template)" : "");
    if (n == 0)
      fail(which + " is empty", "generate", "give a non-empty prompt (with BOS, if the model uses one)");
    if (n >= limit && opts.max_new_tokens >= limit && limit > 1) {
      // The prompt alone fills the context and --max-new-tokens is no smaller than it (the default 64
      // against a small --max-context): lowering -n alone cannot help, so the fix is the prompt.
      fail(fmt::format("{} has {} token{}, {} {} of {} tokens: no room for a new token", which, n, n == 1 ? "" : "s",
                       n == limit ? "which fills" : "more than", limit_name, limit),
           opts.max_context > 0 ? "--max-context / prompt" : "prompt",
           fmt::format("shorten the prompt to at most {} token{} (prompt + new tokens <= {}){}", limit - 1,
                       limit - 1 == 1 ? "" : "s", limit,
                       opts.max_context > 0 && opts.max_context < model_ctx
                           ? fmt::format(", or raise --max-context (up to the model's {})", model_ctx)
                           : std::string()));
    }
    if (opts.max_new_tokens > limit - n) {  // n + max_new_tokens > limit, without overflow
      std::string fix;
      const std::string raise =
          opts.max_context > 0 && opts.max_context < model_ctx
              ? fmt::format(", or raise --max-context (up to the model's {})", model_ctx)
              : std::string();
      if (n < limit) {
        // A prompt of one token cannot be shorter (trial of session 49: `-p Hi --max-context 5 -n 10`).
        fix = fmt::format("use --max-new-tokens {} or less{}{}", limit - n, n > 1 ? ", or a shorter prompt" : "",
                          raise);
      } else if (opts.max_new_tokens < limit) {
        fix = fmt::format("shorten the prompt to at most {} token{} (the limit less --max-new-tokens {}){}",
                          limit - opts.max_new_tokens, limit - opts.max_new_tokens == 1 ? "" : "s",
                          opts.max_new_tokens, raise);
      } else if (limit > 1) {
        fix = fmt::format("use --max-new-tokens {} or less and a prompt that leaves room for them (prompt + new "
                          "tokens <= {}){}",
                          limit - 1, limit, raise);
      } else if (opts.max_context > 0) {  // dak generate refuses --max-context 1 itself
        fix = "a max context of 1 token leaves no room for a new token: raise --max-context";
      } else {
        fix = "the model's context (max_position_embeddings in its config) is 1 token, which leaves no room for a new "
              "token: use a model with a longer context";
      }
      const std::string total = opts.max_new_tokens <= std::numeric_limits<int64_t>::max() - n
                                    ? fmt::format("{}", n + opts.max_new_tokens)
                                    : std::string("over 2^63");
      fail(fmt::format("{} has {} token{}; with {} new token{} that is {}, more than {} of {} token{}", which, n,
                       n == 1 ? "" : "s", opts.max_new_tokens, opts.max_new_tokens == 1 ? "" : "s", total, limit_name,
                       limit, limit == 1 ? "" : "s"),
           opts.max_context > 0 ? "--max-context / --max-new-tokens / prompt" : "--max-new-tokens / prompt", fix);
    }
    longest = std::max(longest, n);
  }
  // Ids the model has no embedding row for: named by the prompt here, before the engine sees them
  // (its own check can only name itself).
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (size_t k = 0; k < prompts[i].size(); ++k) {
      const int32_t id = prompts[i][k];
      if (id < 0 || id >= model_vocab) {
        fail(fmt::format("token id {} (token {} of {}) is outside the model's vocabulary of {}", id, k + 1,
                         prompt_label(i, prompts.size()), model_vocab),
             prompt_label(i, prompts.size()),
             fmt::format("give ids from 0 to {}: tokenize the prompt with the model's own tokenizer",
                         model_vocab - 1));
      }
    }
  }
}

GenerateResult generate(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                        const GenerateOptions& opts, const TokenCallback& on_token) {
  const int64_t model_ctx = engine.config().max_position_embeddings;
  check_generate_request(prompts, opts, model_ctx, engine.config().vocab_size);
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, int64_t(p.size()));
  GenerateResult res;
  const int64_t count = int64_t(prompts.size());
  res.sequences.resize(size_t(count));
  for (int64_t b = 0; b < count; ++b) res.sequences[b].prompt_ids = prompts[b];
  if (opts.max_new_tokens == 0) return res;

  // One context for every slot: the longest prompt of the run and its new tokens fit in any of them.
  const int64_t ctx = opts.max_context > 0 ? opts.max_context : std::min(model_ctx, longest + opts.max_new_tokens);
  const int64_t slots = generate_slot_count(count, opts.max_batch);
  const int64_t vocab = engine.config().vocab_size;
  // Continuous batching (vLLM's scheduler, at the granularity of whole prompts): `slots` sequences
  // run at once, and a slot whose sequence finished takes the next prompt in the next step (its
  // prefill runs in the same pass as the others' decode tokens); the first step prefills the first
  // `slots` prompts as one batch. Sequence i samples with sequence_rng(seed, i) whichever slot and
  // step it runs in.
  engine.start(slots, ctx);
  std::vector<int64_t> seq_of(static_cast<size_t>(slots), -1);  // the sequence a slot holds (-1: none yet)
  std::vector<bool> idle(static_cast<size_t>(slots), false);    // finished with no prompt left, reset once
  std::vector<bool> done(static_cast<size_t>(count), false);
  std::vector<std::mt19937_64> rngs(static_cast<size_t>(count));
  // Where the engine runs full decode steps much faster (the GPU's decode graph;
  // Engine::prefers_full_decode_steps), a finished slot with no prompt left stays in the steps with
  // a discarded token: reset once, so that its position, one more per step for at most
  // max_new_tokens - 1 steps (the longest any other sequence still needs), stays inside the context.
  const bool full_steps = engine.prefers_full_decode_steps();
  int64_t next = 0;  // the next prompt to admit
  std::vector<std::vector<int32_t>> tokens(static_cast<size_t>(slots));
  std::vector<bool> emits(static_cast<size_t>(slots));
  bool first_step = true;
  while (true) {
    int64_t emitting = 0;  // slots that get a token this step (the admitted prompts' first ones too)
    bool decodes = false;
    for (int64_t s = 0; s < slots; ++s) {
      tokens[s].clear();
      emits[s] = false;
      const int64_t i = seq_of[s];
      if (i >= 0 && !done[i]) {
        tokens[s].push_back(res.sequences[i].generated_ids.back());
        emits[s] = true;
        decodes = true;
      } else if (next < count) {
        if (i >= 0) {
          engine.reset(s);
          ++res.refills;
        }
        seq_of[s] = next;
        rngs[size_t(next)] = sequence_rng(opts.sampling.seed, next);
        tokens[s] = prompts[size_t(next++)];
        emits[s] = true;
      }
      emitting += emits[s] ? 1 : 0;
    }
    if (emitting == 0) break;
    if (interrupt_requested()) {  // Ctrl-C: keep what the steps so far gave (a finished run is not cut)
      res.interrupted = true;
      break;
    }
    if (full_steps) {
      for (int64_t s = 0; s < slots; ++s) {
        if (emits[s] || seq_of[s] < 0) continue;
        if (!idle[s]) engine.reset(s);
        idle[s] = true;
        tokens[s].push_back(res.sequences[seq_of[s]].generated_ids.back());
      }
    }
    const auto t0 = Clock::now();
    const std::optional<std::vector<float>> step = step_unless_interrupted(engine, tokens, false);
    if (!step) {
      res.interrupted = true;
      break;
    }
    const std::vector<float>& logits = *step;
    const double dt = seconds_since(t0);
    if (first_step) {
      res.prefill_s = dt;
    } else if (decodes) {
      res.decode_s += dt;
      ++res.decode_steps;
      res.decode_tokens += emitting;
    } else {  // only admitted prompts' prefills (every running sequence had finished)
      res.admit_s += dt;
    }
    first_step = false;
    for (int64_t s = 0; s < slots; ++s) {
      if (!emits[s]) continue;
      const int64_t i = seq_of[s];
      std::span<const float> row(logits.data() + s * vocab, size_t(vocab));
      const int32_t id = sample_token(row, opts.sampling, rngs[size_t(i)]);
      SequenceResult& seq = res.sequences[i];
      seq.generated_ids.push_back(id);
      if (std::find(opts.eos_ids.begin(), opts.eos_ids.end(), id) != opts.eos_ids.end()) {
        seq.stopped_at_eos = true;
        done[i] = true;
      }
      if (int64_t(seq.generated_ids.size()) >= opts.max_new_tokens) done[i] = true;
      if (on_token) on_token(i, id);
    }
  }
  return res;
}

std::string load_progress_text(uint64_t done, uint64_t total, double seconds) {
  // Parameters in the unit that keeps 1-4 significant digits readable: a 135M model reads in millions.
  const bool billions = total >= 1'000'000'000;
  const double unit = billions ? 1e9 : 1e6;
  const char* name = billions ? "billion" : "million";
  if (done >= total)
    return fmt::format("dak: loading weights: done, {:.1f} {} parameters in {:.0f} s", double(total) / unit, name,
                       seconds);
  return fmt::format("dak: loading weights: {:.1f} of {:.1f} {} parameters ({:.0f}%), {:.0f} s", double(done) / unit,
                     double(total) / unit, name, total > 0 ? 100.0 * double(done) / double(total) : 0.0, seconds);
}

std::string prompt_label(size_t i, size_t count) {
  return count == 1 ? std::string("the prompt") : fmt::format("prompt {} of {}", i + 1, count);
}

std::string frame_sequence_text(const std::string& number, const std::string& text) {
  const std::string indent(number.size(), ' ');
  const bool starts_blank = (text.empty() || text[0] == '\n') && !number.empty() && number.back() == ' ';
  std::string out = starts_blank ? number.substr(0, number.size() - 1) : number;
  size_t start = 0;
  while (true) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (start > 0 && line.find_first_not_of(" \t\r") != std::string::npos) out += indent;
    out += line;
    if (end == std::string::npos) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

ProgressLine::ProgressLine(std::FILE* out, bool terminal, double after_s, double every_s)
    : out_(out), terminal_(terminal), after_s_(after_s), every_s_(every_s), start_(Clock::now()) {}

ProgressLine::~ProgressLine() {
  if (shown_ && !finished_ && terminal_) std::fputc('\n', out_);
}

void ProgressLine::restart() { start_ = Clock::now(); }

double ProgressLine::seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void ProgressLine::update(const std::string& line) {
  if (finished_) return;
  const auto now = Clock::now();
  if (!shown_ && seconds() < after_s_) return;
  if (shown_ && std::chrono::duration<double>(now - last_).count() < every_s_) return;
  show(line, false);
}

void ProgressLine::finish(const std::string& line) {
  if (finished_) return;
  finished_ = true;
  if (shown_ || seconds() >= after_s_) show(line, true);
}

void ProgressLine::show(std::string line, bool last) {
  if (terminal_) {
    const size_t width = line.size();
    if (width < width_) line.append(width_ - width, ' ');
    width_ = width;
    std::fprintf(out_, "\r%s%s", line.c_str(), last ? "\n" : "");
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
  shown_ = true;
  last_ = Clock::now();
}

PrefillProgress::PrefillProgress(std::FILE* out, bool terminal, double after_s, double every_s)
    : line_(std::make_shared<ProgressLine>(out, terminal, after_s, every_s)) {}

PrefillProgress::PrefillProgress(std::shared_ptr<ProgressLine> line) : line_(std::move(line)) {}

void PrefillProgress::operator()(int64_t tokens, int64_t layers_done, int64_t layers) {
  ProgressLine& l = *line_;
  if (l.finished()) return;
  if (layers_done == 0) {
    l.restart();
    return;
  }
  const double s = l.seconds();
  if (layers_done >= layers) {
    l.finish(fmt::format("dak: prefill of {} prompt tokens: done in {:.1f} s", tokens, s));
  } else {
    l.update(fmt::format("dak: prefill of {} prompt tokens: layer {} of {} ({}%), {:.1f} s", tokens, layers_done,
                         layers, 100 * layers_done / layers, s));
  }
}

namespace {
// head -c's size for `bytes`: "32M" for whole MiB, else "4K".
std::string head_size(int64_t bytes) {
  return bytes % (int64_t(1) << 20) == 0 ? fmt::format("{}M", bytes >> 20) : fmt::format("{}K", bytes >> 10);
}
}  // namespace

std::string perplexity_part_words(int64_t part_bytes) {
  return part_bytes % (int64_t(1) << 20) == 0 ? fmt::format("{} MiB", part_bytes >> 20)
                                              : fmt::format("{} KiB", part_bytes >> 10);
}

std::string perplexity_part_command(int64_t part_bytes, const std::string& file, const std::string& options) {
  const std::string head = file.empty() ? "... | head -c " + head_size(part_bytes)
                                        : "head -c " + head_size(part_bytes) + " " + file;
  return head + " | iconv -c -f UTF-8 -t UTF-8 | dak perplexity --file -" + options;
}

int64_t perplexity_window(int64_t context, int64_t model_ctx) {
  if (context == 0) return model_ctx;
  if (context < 2 || context > model_ctx)
    fail(fmt::format("--context {} is outside the allowed values: 0 (the model context, {} tokens) or a window "
                     "from 2 to {} tokens",
                     context, model_ctx, model_ctx),
         "--context",
         fmt::format("pass --context 0 to score in windows of the whole model context, or a window from 2 to {}",
                     model_ctx));
  return context;
}

PerplexityResult perplexity(Engine& engine, std::span<const int32_t> ids, int64_t context,
                            const PerplexityProgress& progress) {
  const int64_t n = int64_t(ids.size());
  if (n < 2)
    fail(fmt::format("perplexity needs at least 2 tokens, got {}", n), "perplexity",
         "give a longer text");
  context = perplexity_window(context, engine.config().max_position_embeddings);
  const int64_t vocab = engine.config().vocab_size;
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab)
      fail(fmt::format("token id {} (token {} of the text) is outside the model's vocabulary of {}", ids[i], i + 1,
                       vocab),
           "the text's tokens", "tokenize the text with the model's own tokenizer");
  }

  PerplexityResult res;
  const auto t0 = Clock::now();
  double nll = 0.0;
  // Window w covers ids[s, e) and scores ids[s+1 .. e-1]; the next window starts at e - 1 so
  // that every token 1..n-1 is scored exactly once (its first token is context only).
  res.tokens_total = n - 1;
  for (int64_t s = 0; s + 1 < n;) {
    if (interrupt_requested()) {  // Ctrl-C: the score of the windows so far
      res.interrupted = true;
      break;
    }
    const int64_t e = std::min(n, s + context);
    if (progress) progress(res.tokens_scored, e - s - 1, n - 1);
    std::vector<std::vector<int32_t>> window{std::vector<int32_t>(ids.begin() + s, ids.begin() + e)};
    engine.start(1, e - s);
    const std::optional<std::vector<float>> step = step_unless_interrupted(engine, window, true);
    if (!step) {
      res.interrupted = true;
      break;
    }
    const std::vector<float>& logits = *step;
    for (int64_t i = s; i + 1 < e; ++i) {
      const float* row = logits.data() + (i - s) * vocab;
      double mx = -INFINITY;
      for (int64_t j = 0; j < vocab; ++j) mx = std::max(mx, double(row[j]));
      double z = 0.0;
      for (int64_t j = 0; j < vocab; ++j) z += std::exp(double(row[j]) - mx);
      nll += (mx + std::log(z)) - double(row[ids[i + 1]]);
      ++res.tokens_scored;
    }
    s = e - 1;
  }
  if (res.interrupted && res.tokens_scored == 0) {
    res.mean_nll = res.perplexity = std::numeric_limits<double>::quiet_NaN();
    res.seconds = seconds_since(t0);
    return res;
  }
  if (progress && !res.interrupted) progress(res.tokens_scored, 0, n - 1);
  if (!std::isfinite(nll))
    fail(kNonFiniteNll, "perplexity",
         "the model produced inf/NaN logits; check the checkpoint");
  res.mean_nll = nll / double(res.tokens_scored);
  res.perplexity = std::exp(res.mean_nll);
  res.seconds = seconds_since(t0);
  return res;
}

}  // namespace dak
