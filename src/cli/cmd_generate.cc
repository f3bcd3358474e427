// `dak generate`: tokenize prompts, batched prefill + decode on the chosen engine, print or
// emit JSON with generated ids, text and timings (TTFT, TPOT, tokens/s).
// With --random-weights the model is only a config (path, folder or shipped name) and the GPU
// engine generates deterministic random weights: no tokenizer, prompts as ids.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/offload_options.h"
#include "core/config_locator.h"
#include "core/cpu_model.h"
#include "core/error.h"
#include "core/generate.h"
#include "core/interrupt.h"
#include "core/pretokenizer.h"
#include "core/tokenizer.h"
#include "core/utf8_text.h"

namespace dak::cli {
namespace {

/// One prompt of the batch: the value of a --prompt (text), the text of a --prompt-file, or a
/// --prompt-ids (a comma list of ids).
struct PromptInput {
  bool ids = false;
  std::string value;
  std::string source = "--prompt";  // where messages place it: "--prompt", or "--prompt-file FILE"
};

struct GenerateArgs {
  std::string model;
  std::vector<std::string> prompts;     // the --prompt values, in their order
  std::vector<std::string> prompt_ids;  // the --prompt-ids values, in their order
  std::vector<std::string> prompt_files;  // the --prompt-file paths, in their order
  std::vector<PromptInput> inputs;      // all of them, in command-line order: the batch's order
  bool has_text() const { return !prompts.empty() || !prompt_files.empty(); }  // text to encode
  std::string system;
  bool chat = false;
  int64_t max_new_tokens = 64;
  bool max_new_tokens_given = false;    // -n on the command line (else the default, 64)
  bool system_given = false;            // --system on the command line (an empty message is one)
  int64_t max_context = 0;              // --max-context; 0: longest prompt + max_new_tokens
  int64_t max_batch = 0;                // --max-batch; 0: every prompt at once
  double temperature = 0.0;  // read as a double: a positive value too small for the sampler's float is refused
  int32_t top_k = 0;
  float top_p = 1.0f;
  uint64_t seed = 0;
  bool seed_given = false;  // --seed on the command line (its default 0 too)
  bool ignore_eos = false;
  std::string device = "auto";
  std::string output = "text";
  std::string gemm = "auto";
  bool random_weights = false;
  uint64_t weights_seed = 0;
  OffloadArgs offload;
};

/// After a run that Ctrl-C / SIGTERM stopped (GenerateResult::interrupted), or that one reached once
/// the run was complete, has printed its output: says so on stderr and ends the command by that
/// signal (cli::Interrupted).
void end_if_interrupted(const GenerateResult& r) {
  if (interrupt_signal() == 0) return;
  const char* name = interrupt_signal_name();
  if (r.interrupted) {
    int64_t tokens = 0;
    for (const SequenceResult& s : r.sequences) tokens += int64_t(s.generated_ids.size());
    std::fprintf(stderr, "dak: interrupted (%s): %lld new token%s before it, printed above\n", name,
                 static_cast<long long>(tokens), tokens == 1 ? "" : "s");
  } else {  // the signal came once the run was complete (its last step, or while printing)
    std::fprintf(stderr, "dak: interrupted (%s) after the run was complete: the output above is whole\n", name);
  }
  throw Interrupted{interrupt_signal()};
}

void run_generate(const GenerateArgs& a) {
  if (!a.chat && a.system_given) {
    fail("--system is a chat message, but --chat is not given", "--system", "add --chat, or drop --system");
  }
  // --chat and --system: their words for a fix that drops them (random weights have no chat template).
  const std::string drop_chat = a.system_given ? "--chat and --system" : "--chat";
  if (a.chat && a.random_weights) {  // trial 26: the two refusals below sent the user back and forth
    fail("--chat renders text prompts with the model's chat template; --random-weights has no tokenizer and no "
         "chat template",
         "--chat", fmt::format("drop {} and pass the prompt as token ids with --prompt-ids 1,2,3", drop_chat));
  }
  if (a.chat && !a.prompt_ids.empty()) {
    fail("--chat renders text prompts with the chat template; --prompt-ids are used as given", "--chat",
         "give the prompt as text with --prompt or --prompt-file, or drop " + drop_chat);
  }
  // The tokenizer checks its text too, but names its own file and counts bytes in the rendered chat:
  // here the message names the flag and the byte of what the user typed, before the model loads.
  if (!a.system.empty()) {
    check_utf8(a.system, "the --system message", "--system", "pass the system message as UTF-8 text");
  }
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    if (a.inputs[i].ids) continue;
    check_utf8(a.inputs[i].value, prompt_label(i, a.inputs.size()), a.inputs[i].source,
               "pass the prompt as UTF-8 text (iconv -t UTF-8 converts other encodings), or as token ids with "
               "--prompt-ids");
  }
  // A positive temperature that the sampler's float would hold as 0 (or a denormal) is not the greedy
  // decoding the user did not ask for (session-24 trial: -t 1e-300 ran greedy with a notice that said 0).
  if (a.temperature > 0 && a.temperature < double(std::numeric_limits<float>::min())) {
    fail(fmt::format("--temperature {:g} is too small to sample with (below {:g}, the smallest normal float)",
                     a.temperature, double(std::numeric_limits<float>::min())),
         "--temperature", "give 0 for greedy decoding, or a temperature of at least 1e-37");
  }
  // Greedy decoding (temperature 0) takes the most likely token: a nucleus or top-k cut changes nothing,
  // and it draws no random number for a seed to choose.
  if (a.temperature == 0) {
    std::vector<std::string> ignored;
    if (a.top_k > 0) ignored.push_back("--top-k");
    if (a.top_p < 1.0f) ignored.push_back("--top-p");
    if (a.seed_given) ignored.push_back("--seed");
    if (!ignored.empty()) {
      std::fprintf(stderr,
                   "dak: notice: %s %s ignored at --temperature 0 (greedy decoding takes the most likely token); give "
                   "--temperature above 0 to sample\n",
                   fmt::format("{}", fmt::join(ignored, " / ")).c_str(), ignored.size() == 1 ? "is" : "are");
    }
  }
  const auto t_load = std::chrono::steady_clock::now();
  std::unique_ptr<Checkpoint> ckpt;
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<Engine> engine;
  std::optional<LocatedConfig> located;
  std::string model_path;
  // Why the output is shown as token ids (--prompt-ids alone, with a tokenizer that cannot be used).
  std::string ids_only_notice;
  if (a.random_weights) {
    if (a.has_text()) {
      fail("--random-weights has no tokenizer, so text prompts cannot be encoded",
           a.prompts.empty() ? "--prompt-file" : "--prompt",
           "pass the prompt as token ids with --prompt-ids 1,2,3");
    }
    // Without --model, the model --model defaults to (README): $DAK_MODEL, else the default model.
    located = locate_model_config(a.model.empty() ? default_model_path().string() : a.model);
    notice_defaulted_sizes(located->config, located->path.string());
    model_path = located->path.string();
  } else {
    // A config given for weights: --random-weights runs it, with the prompts as ids (no tokenizer).
    ckpt = open_model(a.model, "--model", "",
                      !a.has_text() ? " --random-weights"
                                        : " --random-weights --prompt-ids 1,2,3 in place of --prompt" +
                                              (a.chat ? " (without " + drop_chat + ")" : std::string()));
    model_path = ckpt->path().string();
    // The tokenizer is judged alike for every prompt: one that cannot be read, or that has more ids than
    // the model has embedding rows (refused here, naming its file, rather than when a prompt happens to
    // hit such an id), is refused with text prompts, which need it. --prompt-ids alone need none: the
    // output is then shown as ids, with a notice that says why when the model has a tokenizer (the
    // new-user trial: a corrupt or mismatched tokenizer was dropped, or used to decode, without a word).
    try {
      tok = load_tokenizer(*ckpt);
      check_tokenizer_fits_model(
          *tok, ckpt->config().vocab_size,
          fmt::format("pass the prompt as token ids below {} with --prompt-ids", ckpt->config().vocab_size));
    } catch (const Error& e) {
      if (a.has_text()) throw;  // text prompts need a tokenizer; ids alone do not
      tok.reset();
      if (has_tokenizer(*ckpt)) {
        ids_only_notice = fmt::format(
            "the output is shown as token ids, since the model's tokenizer cannot be used: {} (in {})", e.what_part(),
            e.where_part());
      } else if (a.output == "text") {  // README, "Output" (the trial: ids printed without a word)
        ids_only_notice =
            "the model has no tokenizer (neither tokenizer.json nor tokenizer.model, nor one in GGUF metadata): the "
            "output is the generated token ids (with the stop token when the model generated one)";
      }
    }
  }
  const ModelConfig& config = located ? located->config : ckpt->config();
  // Text of ids. An id the tokenizer has no token for (a model whose embedding rows are padded past
  // its tokenizer, as Qwen2's are, generated it, or --prompt-ids gave it) prints as nothing, as
  // Hugging Face tokenizers skip it; the run ends with a notice that counts them (the trial of session
  // 27: the decode error stopped the run mid-text, and in JSON lost it).
  const auto text_of = [&tok](const std::vector<int32_t>& ids, bool skip_special) {
    std::vector<int32_t> known;
    known.reserve(ids.size());
    for (int32_t id : ids) {
      if (id >= 0 && id < tok->vocab_size()) known.push_back(id);
    }
    return tok->decode(known, skip_special);
  };

  // Prompts first: an offload plan is made for the run's batch and lengths. The batch is in
  // command-line order (`--prompt-ids 1 -p hi`: the ids are sequence 0).
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> prompt_texts;
  // An id prompt may end inside a character (--prompt-ids 8070,105,15107 stops in the first bytes of
  // an emoji whose last byte the model generates): those bytes move from the prompt's text to the
  // front of its continuation's, so the character prints whole, not as U+FFFD twice (trial 47).
  std::vector<std::string> carried;
  const int32_t vocab = int32_t(config.vocab_size);
  const size_t count = a.inputs.size();
  for (const PromptInput& input : a.inputs) {
    if (!input.ids) {
      std::string rendered = input.value;
      if (a.chat) {
        std::vector<ChatMessage> msgs;
        if (a.system_given) msgs.push_back({"system", a.system});  // "" too: it replaces a template's default
        msgs.push_back({"user", input.value});
        rendered = tok->apply_chat_template(msgs, true);
      }
      prompts.push_back(tok->encode(rendered, /*allow_bos=*/!a.chat));
      prompt_texts.push_back(input.value);
      carried.emplace_back();
      continue;
    }
    prompts.push_back(parse_id_list(input.value, "--prompt-ids"));
    for (int32_t id : prompts.back()) {  // before the tokenizer decodes them (it names its own file)
      if (id < 0 || id >= vocab) {
        // where: the flag, and in a batch which prompt.
        fail(fmt::format("token id {} is outside the vocabulary (size {})", id, vocab),
             count == 1 ? std::string("--prompt-ids")
                        : fmt::format("--prompt-ids ({})", prompt_label(prompts.size() - 1, count)),
             fmt::format("use ids from 0 to {} (the model's tokenizer gives them for a text)", vocab - 1));
      }
    }
    std::string text = tok ? text_of(prompts.back(), false) : std::string();
    const size_t cut = unfinished_utf8_tail(text);
    carried.push_back(text.substr(cut));
    text.resize(cut);
    prompt_texts.push_back(std::move(text));
  }
  // The text of sequence i's generated ids, after the bytes its prompt left unfinished. Special tokens
  // are left out (as vLLM's skip_special_tokens), except under --ignore-eos: the run then goes past the
  // turn ends the user asked to see, and shows them as the echo of a --prompt-ids prompt does (trial of
  // session 49: "Hello." then a bare "system", the <|im_end|> and <|im_start|> between them dropped).
  const auto continuation_of = [&](size_t i, const std::vector<int32_t>& ids) {
    return carried[i] + text_of(ids, /*skip_special=*/!a.ignore_eos);
  };
  int64_t longest = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty())
      fail(fmt::format("{} encodes to zero tokens", prompt_label(i, prompts.size())), a.inputs[i].source,
           "give a non-empty prompt");
    longest = std::max(longest, int64_t(prompts[i].size()));
  }
  if (a.max_context > config.max_position_embeddings)
    fail(fmt::format("--max-context {} is beyond the model's context of {} tokens", a.max_context,
                     config.max_position_embeddings),
         "--max-context", fmt::format("use --max-context {} or less", config.max_position_embeddings));
  // The context the KV cache holds per sequence: --max-context, else the model's (a request beyond it
  // is refused by generate() right away, with the fix).
  const int64_t limit = a.max_context > 0 ? a.max_context : config.max_position_embeddings;
  // vLLM fills the limit when max_tokens is unset; dak's default of 64 new tokens shrinks to what
  // --max-context leaves after the longest prompt (trial 28b: `-p Hi --max-context 32` was refused).
  const int64_t max_new_tokens = a.max_context > 0 && !a.max_new_tokens_given && limit - longest >= 1
                                     ? std::min(a.max_new_tokens, limit - longest)
                                     : a.max_new_tokens;
  const bool fits = max_new_tokens <= limit - longest;
  {
    // generate()'s request checks before the weights load (the new-user trial waited for a load to
    // hear that its prompt could not fit): the same messages, seconds earlier on a large model.
    GenerateOptions early;
    early.max_new_tokens = max_new_tokens;
    early.max_context = a.max_context;
    early.max_batch = a.max_batch;
    early.chat = a.chat;
    check_generate_request(prompts, early, config.max_position_embeddings, config.vocab_size);
  }
  // The KV cache generate() sizes: --max-context tokens, else longest prompt + new tokens within the
  // model's context. The plan is made for the same cache.
  const int64_t gen_len = a.max_context > 0 ? std::max<int64_t>(1, a.max_context - longest)
                                            : std::max<int64_t>(1, std::min(max_new_tokens, limit - longest));
  // One prompt: the budget fixes leave "fewer prompts" out (ShapeTerms::one_prompt).
  const ShapeTerms terms{ShapeTerms::Command::kGenerate, prompts.size() == 1, a.max_context > 0};
  // The batch the engine runs at once: the plan and the KV cache are sized for it (--max-batch).
  const int64_t batch = generate_slot_count(int64_t(prompts.size()), a.max_batch);
  const EngineOffload offload{&a.offload, {batch, longest, gen_len, terms}, a.gemm};
  engine = located ? make_random_engine(*located, a.weights_seed, a.device, &offload)
                   : make_engine(*ckpt, a.device, &offload);
  const double load_s = seconds_since(t_load);
  // After every refusal that can come before the output (the engine's, the context's): the notice is
  // about output this run will print (trial 26: it preceded a refusal of the same run).
  if (!ids_only_notice.empty() && fits) std::fprintf(stderr, "dak: notice: %s\n", ids_only_notice.c_str());
  if (tok && fits) {  // the tokenizer's own (an end-of-generation id it ignored)
    for (const std::string& n : tok->notices()) std::fprintf(stderr, "dak: notice: %s\n", n.c_str());
  }
  // The default count shrunk to what --max-context leaves (session 46's trial: `-p hi -p "The sky is
  // blue and" --max-context 6` gave "hi" one new token without a word).
  if (fits && max_new_tokens < a.max_new_tokens) {
    std::fprintf(stderr,
                 "dak: notice: at most %lld new token%s per sequence: what --max-context %lld leaves after the "
                 "longest prompt (%lld token%s); raise --max-context for more\n",
                 static_cast<long long>(max_new_tokens), max_new_tokens == 1 ? "" : "s",
                 static_cast<long long>(a.max_context), static_cast<long long>(longest), longest == 1 ? "" : "s");
  }
  // A long prompt's prefill on the CPU takes minutes: a notice with the estimate up front (the new-user
  // trial's 8191-token prompt ran ~47 s a layer without a word), and a progress line (stderr_progress_line).
  if (auto* cpu = dynamic_cast<CpuModel*>(engine.get())) {
    std::vector<int64_t> lens;
    for (const auto& p : prompts) lens.push_back(int64_t(p.size()));
    // Only for a request that fits the context.
    const std::string notice =
        fits ? long_cpu_prefill_notice(config, lens, /*threads=*/0, current_cpu_contention(),
                                       /*gpu_usable=*/gpu_unavailable_reason().empty())
             : std::string();
    if (!notice.empty()) {
      std::fprintf(stderr, "dak: notice: %s\n", notice.c_str());
    }
    cpu->set_layer_progress(PrefillProgress(stderr_progress_line()));
  }

  GenerateOptions opts;
  opts.max_new_tokens = max_new_tokens;
  opts.max_context = a.max_context;
  opts.max_batch = a.max_batch;
  opts.chat = a.chat;
  opts.sampling = SamplingParams{float(a.temperature), a.top_k, a.top_p, a.seed};
  if (!a.ignore_eos) {
    if (tok) {
      opts.eos_ids = tok->eos_ids();
    } else {
      for (int64_t e : engine->config().eos_token_ids) opts.eos_ids.push_back(int32_t(e));
    }
  }

  const bool stream = a.output == "text" && prompts.size() == 1 && tok;
  std::vector<int32_t> streamed;
  // stdout carries valid UTF-8 only: a character the generation has not finished is held back until
  // it completes, and printed as U+FFFD if the generation ends first (a pipe into iconv failed on the
  // trial's "héllo 🙂 世界" -n 5, which stopped inside 界's bytes).
  Utf8Stream out;
  // Plain completion echoes the prompt and continues it; --chat prints only the reply. The echo
  // waits for the first token, so an input error prints nothing on stdout.
  bool echoed = a.chat;
  TokenCallback on_token;
  if (stream) {
    on_token = [&](int64_t, int32_t id) {
      if (!echoed) {
        std::cout << valid_utf8(prompt_texts[0]);
        echoed = true;
      }
      streamed.push_back(id);
      if (const std::string fresh = out.next(continuation_of(0, streamed)); !fresh.empty()) {
        std::cout << fresh;
        flush_stdout_or_fail();  // a full disk stops the run at once
      }
    };
  }
  // A run that prints its text only at the end (a batch, --output json, ids) on the CPU path, where a
  // long -n takes minutes: a progress line of its decode steps (the trial's two prompts at -n 3000
  // ran minutes without a word). Silent for the first 10 s of decoding.
  std::shared_ptr<ProgressLine> decode_line;
  std::vector<int64_t> produced(prompts.size(), 0);
  // The tokens so far against the most the run can make (each sequence stops at EOS or -n): with
  // --max-batch the prompts take the slots of finished sequences, so there is no step count to give
  // in advance (trial 29: a count of the first batch's steps stopped there).
  const int64_t most = int64_t(prompts.size()) * max_new_tokens;
  int64_t made = 0, finished = 0;
  if (!stream && dynamic_cast<CpuModel*>(engine.get())) {
    decode_line = stderr_progress_line(/*after_s=*/10.0);
    on_token = [&](int64_t seq, int32_t id) {
      if (made++ == 0) decode_line->restart();  // from the first token on: the prefill has its own line
      if (++produced[size_t(seq)] >= max_new_tokens ||
          std::find(opts.eos_ids.begin(), opts.eos_ids.end(), id) != opts.eos_ids.end()) {
        ++finished;
      }
      const std::string what = prompts.size() == 1
                                   ? std::string("one sequence")
                                   : fmt::format("{} sequences ({} done)", prompts.size(), finished);
      decode_line->update(fmt::format("dak: decoding {}: {} of at most {} tokens, {:.0f} s", what, made, most,
                                      decode_line->seconds()));
    };
  }
  // Ctrl-C stops after the current step (the CPU path: layer), keeping the tokens so far; the scope
  // lasts until the output is printed, so a signal while it prints does not cut it.
  const InterruptScope interrupts;
  const GenerateResult r = [&] {
    try {
      return generate(*engine, prompts, opts, on_token);
    } catch (const Error& e) {
      explain_non_finite_output(e, ckpt.get());  // names a weight that holds NaN / inf, if one does
      throw;
    }
  }();
  if (decode_line && r.decode_steps > 0) {
    decode_line->finish(fmt::format("dak: decoding done: {} decode step{} in {:.1f} s", r.decode_steps,
                                    r.decode_steps == 1 ? "" : "s", decode_line->seconds()));
  }
  // TPOT and the decode rate exist only when a decode step ran: -n 1 (or EOS right after the prefill)
  // has none, and printed 0.0 ms and 0.0 tokens/s. Then "n/a" in the text, null in the JSON.
  const bool decoded = r.decode_steps > 0 && r.decode_s > 0;
  const double tpot = decoded ? r.decode_s / double(r.decode_steps) : 0.0;
  const double tok_per_s = decoded ? double(r.decode_tokens) / r.decode_s : 0.0;
  const auto json_or_null = [decoded](double v) { return decoded ? nlohmann::json(v) : nlohmann::json(); };
  // After the text: how many ids of the run printed as nothing (text_of).
  const auto notice_ids_without_token = [&] {
    if (!tok) return;
    int64_t count = 0;
    int32_t first = -1;
    const auto add = [&](const auto& ids) {
      for (const auto id : ids) {
        if (id >= tok->vocab_size() && count++ == 0) first = int32_t(id);
      }
    };
    for (size_t i = 0; i < r.sequences.size(); ++i) {
      add(prompts[i]);
      add(r.sequences[i].generated_ids);
    }
    if (count == 0) return;
    std::fprintf(stderr,
                 "dak: notice: %lld token id%s of this run (the first: %d) %s no token in the tokenizer (%s: ids 0 to "
                 "%d; the model has %lld): printed as nothing, as Hugging Face tokenizers do\n",
                 static_cast<long long>(count), count == 1 ? "" : "s", first, count == 1 ? "has" : "have",
                 tok->source().c_str(), tok->vocab_size() - 1, static_cast<long long>(config.vocab_size));
  };

  if (a.output == "json") {
    nlohmann::json j;
    j["model"] = model_path;
    if (a.random_weights) j["weights"] = {{"random", true}, {"seed", a.weights_seed}};
    j["device"] = engine->device_name();
    for (size_t i = 0; i < r.sequences.size(); ++i) {
      const auto& s = r.sequences[i];
      nlohmann::json js;
      // Without a tokenizer (--prompt-ids on a model that has none) there is no text: null, not "".
      js["prompt"] = tok ? nlohmann::json(prompt_texts[i]) : nlohmann::json();
      js["prompt_ids"] = s.prompt_ids;
      js["generated_ids"] = s.generated_ids;
      js["text"] = tok ? nlohmann::json(continuation_of(i, s.generated_ids)) : nlohmann::json();
      js["stopped_at_eos"] = s.stopped_at_eos;
      j["sequences"].push_back(js);
    }
    j["interrupted"] = r.interrupted;
    j["timings"] = {{"load_s", load_s}, {"ttft_s", r.prefill_s}, {"decode_s", r.decode_s},
                    {"decode_steps", r.decode_steps}, {"tpot_s", json_or_null(tpot)},
                    {"decode_tokens_per_s", json_or_null(tok_per_s)}, {"max_batch", batch},
                    {"refills", r.refills}, {"admit_s", r.admit_s}};
    std::cout << json_text(j) << '\n';
    flush_stdout_or_fail();  // here, where the write's errno says why it failed
    notice_ids_without_token();
    end_if_interrupted(r);
    return;
  }
  if (stream) {
    std::cout << out.finish(continuation_of(0, streamed)) << '\n';
  } else {
    // A batch numbers its sequences ("[i] "), and indents a text's further lines by the number's width
    // so that every line reads as part of one sequence (README, "Output"; an empty line stays empty,
    // without trailing blanks); one sequence is printed
    // alone, as a streamed one is. --chat prints only the replies, as for one prompt.
    for (size_t i = 0; i < r.sequences.size(); ++i) {
      const auto& s = r.sequences[i];
      const std::string number = r.sequences.size() > 1 ? fmt::format("[{}] ", i) : std::string();
      if (tok) {
        std::string text =
            valid_utf8(a.chat ? std::string() : prompt_texts[i]) + valid_utf8(continuation_of(i, s.generated_ids));
        std::cout << (number.empty() ? text : frame_sequence_text(number, text)) << '\n';
      } else {
        std::cout << number << fmt::format("{}", fmt::join(s.generated_ids, ",")) << '\n';
      }
    }
  }
  flush_stdout_or_fail();  // the text first, then the timings (none after a failed write)
  notice_ids_without_token();
  const std::string decode = decoded ? fmt::format("TPOT {:.1f} ms, {:.1f} tokens/s", tpot * 1e3, tok_per_s)
                                     : std::string("TPOT n/a, n/a tokens/s (no decode step ran)");
  // --max-batch below the prompt count: TTFT is the first batch's prefill; the decode steps and TPOT
  // count every later step, those whose pass also prefills a prompt in a finished sequence's slot.
  const std::string waves_text =
      int64_t(prompts.size()) > batch
          ? fmt::format(" ({} at a time, {} prompt{} in {})", batch, r.refills, r.refills == 1 ? "" : "s",
                        r.refills == 1 ? "a finished sequence's slot" : "finished sequences' slots")
          : std::string();
  std::fprintf(stderr, "dak: %s: load %.2f s, TTFT %.3f s, %lld decode step%s%s, %s\n", engine->device_name().c_str(),
               load_s, r.prefill_s, static_cast<long long>(r.decode_steps), r.decode_steps == 1 ? "" : "s",
               waves_text.c_str(), decode.c_str());
  end_if_interrupted(r);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* c = app.add_subcommand("generate", "Generate text from one or more prompts");
  c->add_option("--model,-m", a->model,
                "HF model folder, .safetensors or .gguf (default: SmolLM2-135M-Instruct); with --random-weights a "
                "config.json, a model folder or a shipped config name (llama-2-7b, ...)");
  c->add_flag("--random-weights", a->random_weights,
              "Run the config with deterministic random bf16 weights generated on the GPU (no checkpoint, no "
              "tokenizer: use --prompt-ids; --device cuda or auto)");
  CLI::Option* weights_seed = add_weights_seed_option(c, &a->weights_seed);
  // One value per occurrence: `-p The capital of France` is an error (quote the prompt), not five prompts.
  CLI::Option* prompt =
      c->add_option("--prompt,-p", a->prompts, "Prompt text, quoted (repeat -p for a batch)")->allow_extra_args(false);
  CLI::Option* prompt_ids =
      c->add_option("--prompt-ids", a->prompt_ids, "Prompt as token ids, e.g. 1,2,3 (repeat for a batch)")
          ->allow_extra_args(false)
          ->check(value_syntax([](const std::string& s) { parse_id_list(s, "--prompt-ids"); }));
  CLI::Option* prompt_file =
      c->add_option("--prompt-file,-f", a->prompt_files,
                    "Prompt text read from a file, the whole file (one trailing newline dropped, as llama.cpp's -f); "
                    "- reads standard input; at most 64 MiB; repeat for a batch")
          ->type_name("FILE")
          ->allow_extra_args(false);
  // A prompt has no default: an empty one is not fixed by leaving the option out (the new-user trial).
  set_empty_value_fix(prompt, "give the prompt text, e.g. --prompt \"Hello\"");
  set_empty_value_fix(prompt_ids, "give token ids, e.g. --prompt-ids 1,2,3");
  set_empty_value_fix(prompt_file, "give a text file, e.g. --prompt-file prompt.txt, or - for standard input");
  // A required input missing from the command line, as `dak perplexity` without --file: exit 2.
  add_required_input_check(c, [prompt, prompt_ids, prompt_file] {
    if (prompt->count() == 0 && prompt_ids->count() == 0 && prompt_file->count() == 0) {
      fail_usage("no prompt given: dak generate needs --prompt, --prompt-file or --prompt-ids", "dak generate",
                 "pass --prompt TEXT, --prompt-file FILE or --prompt-ids 1,2,3 (repeat any of them for a batch)");
    }
  });
  c->add_flag("--chat", a->chat, "Apply the model's chat template to each prompt (default: plain completion)");
  CLI::Option* system = c->add_option("--system", a->system, "System message for --chat (may be empty: \"\" replaces "
                                                              "the template's default one)");
  CLI::Option* max_new =
      c->add_option("--max-new-tokens,-n", a->max_new_tokens,
                    "Tokens to generate per sequence (with --max-context and no -n: at most what it leaves)")
          ->capture_default_str()
      ->transform(whole_number("a count of at least 1 (the prompt and the new tokens must fit in the model's context)",
                               1));
  c->add_option("--max-context", a->max_context,
                "Tokens per sequence the KV cache holds, prompt and new tokens together (vLLM's --max-model-len); a "
                "longer request is refused (default: the longest prompt + --max-new-tokens, within the model's "
                "context)")
      ->transform(whole_number("a count of tokens of at least 2 (a prompt token and a new one)", 2));
  c->add_option("--max-batch", a->max_batch,
                "Sequences run at once (vLLM's --max-num-seqs): a finished sequence's slot takes the next prompt, "
                "in order (continuous batching); the KV cache and offload plan are sized for it (default: every "
                "prompt at once)")
      ->transform(whole_number("a count of sequences of at least 1", 1));
  c->add_option("--temperature", a->temperature, "Sampling temperature, from 0 (greedy) to 100")->capture_default_str()
      ->transform(decimal_number("a temperature from 0 (greedy) to 100", 0.0, 100.0));
  c->add_option("--top-k", a->top_k, "Sample among the k most likely tokens (0 = all)")->capture_default_str()
      ->transform(whole_number("0 (all tokens) or a count from 1 to 1073741824", 0, 1 << 30));
  c->add_option("--top-p", a->top_p, "Nucleus sampling threshold in (0, 1] (0 is rejected)")->capture_default_str()
      // From the smallest normal float: a smaller value would round to 0 in the float it is kept in
      // (the session-17 trial: --top-p 1e-300 passed here and failed later as "got 0").
      ->transform(decimal_number("a threshold above 0 (from 1.2e-38) and at most 1 (1 = no nucleus cut)",
                                 double(std::numeric_limits<float>::min()), 1.0));
  CLI::Option* seed =
      c->add_option("--seed", a->seed, "Random seed for sampling")->capture_default_str()->transform(unsigned_64());
  c->add_flag("--ignore-eos", a->ignore_eos,
              "Do not stop at end-of-sequence tokens; the text then shows the special tokens generated (e.g. "
              "<|im_end|>), which it leaves out otherwise");
  c->add_option("--device", a->device, "cpu, cuda or auto (GPU when usable, else CPU)")->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  c->add_option("--output", a->output, "text or json")->capture_default_str()->check(CLI::IsMember({"text", "json"}));
  add_gemm_option(c, &a->gemm);
  add_offload_options(c, &a->offload);
  c->callback([a, c, prompt, prompt_ids, prompt_file, weights_seed, seed, max_new, system] {
    a->system_given = system->count() > 0;
    a->seed_given = seed->count() > 0;
    a->max_new_tokens_given = max_new->count() > 0;
    // The batch in command-line order: CLI11 records each value of an option as it parses it.
    a->inputs.clear();
    size_t next_text = 0, next_ids = 0, next_file = 0;
    // Before anything is read (a terminal would wait for a prompt first).
    // Standard input by any name: `-`, or a path to the same file as descriptor 0 (/dev/stdin,
    // /dev/fd/0, a link to them) when that is a pipe, a socket or a terminal, which read once (after
    // `-f -` they read nothing: trial 29b); a regular file or a device behind `<` is opened again by
    // its path.
    const auto is_stdin = [](const std::string& p) {
      if (p == "-") return true;
      struct stat in {}, st {};
      if (::fstat(STDIN_FILENO, &in) != 0) return false;
      // Read-once kinds only: a regular file or a device such as /dev/null or /dev/zero is opened again.
      const bool read_once = S_ISFIFO(in.st_mode) || S_ISSOCK(in.st_mode) || isatty(STDIN_FILENO) == 1;
      return read_once && ::stat(p.c_str(), &st) == 0 && st.st_dev == in.st_dev && st.st_ino == in.st_ino;
    };
    std::vector<bool> from_stdin;  // [prompt file]: is_stdin, asked once
    std::vector<std::string> stdin_names;
    for (const std::string& p : a->prompt_files) {
      from_stdin.push_back(is_stdin(p));
      if (from_stdin.back()) stdin_names.push_back(p);
    }
    if (stdin_names.size() > 1) {
      std::string names;
      for (size_t i = 0; i < stdin_names.size(); ++i) names += (i ? ", " : "") + stdin_names[i];
      fail(fmt::format("standard input is given {} times as --prompt-file ({}): it holds one prompt",
                       stdin_names.size(), names),
           "--prompt-file", "give the other prompts as files or with --prompt");
    }
    // A named pipe (mkfifo) given twice: its second open would wait forever for another writer
    // (session 30's trial). Same file: same device and inode.
    for (size_t i = 0; i < a->prompt_files.size(); ++i) {
      struct stat si {};
      const std::string& first = a->prompt_files[i];
      if (from_stdin[i] || ::stat(first.c_str(), &si) != 0 || !S_ISFIFO(si.st_mode)) continue;
      for (size_t j = i + 1; j < a->prompt_files.size(); ++j) {
        struct stat sj {};
        if (::stat(a->prompt_files[j].c_str(), &sj) == 0 && sj.st_dev == si.st_dev && sj.st_ino == si.st_ino) {
          fail(fmt::format("the named pipe {} is given twice as --prompt-file ({} and {}): it holds one prompt",
                           first, first, a->prompt_files[j]),
               "--prompt-file " + a->prompt_files[j], "give the other prompts as files or with --prompt");
        }
      }
    }
    const auto file_input = [&](size_t index) {
      const std::string& path = a->prompt_files[index];
      const bool stdin_file = from_stdin[index];  // /dev/stdin reads as - does (a device is no text file)
      std::string text = read_text_input(
          stdin_file ? "-" : path, TextInputTerms{"--prompt-file", "dak generate", "the prompt", [](const std::string&) {
                                 return std::string("no model's context holds a prompt that long: give a part of it");
                               }});
      if (!text.empty() && text.back() == '\n') text.pop_back();  // as llama.cpp's -f
      if (text.empty()) {  // as -p '' is refused
        // Where: as the read errors of the file say it (the path; standard input (--prompt-file -)).
        fail(stdin_file ? "standard input holds no prompt (nothing, one newline, or a byte order mark alone)"
                        : "the prompt file is empty (or holds one newline, or a byte order mark alone)",
             stdin_file ? "standard input (--prompt-file " + path + ")" : path,
             stdin_file ? "pipe the prompt text into dak (e.g. dak generate -f - < prompt.txt)"
                        : "give a file with the prompt text");
      }
      return PromptInput{false, std::move(text),
                         stdin_file ? "--prompt-file " + path + " (standard input)" : "--prompt-file " + path};
    };
    for (const CLI::Option* o : c->parse_order()) {
      if (o == prompt && next_text < a->prompts.size()) a->inputs.push_back({false, a->prompts[next_text++]});
      if (o == prompt_ids && next_ids < a->prompt_ids.size()) {
        a->inputs.push_back({true, a->prompt_ids[next_ids++], "--prompt-ids"});
      }
      if (o == prompt_file && next_file < a->prompt_files.size()) {
        a->inputs.push_back(file_input(next_file++));
      }
    }
    while (next_text < a->prompts.size()) a->inputs.push_back({false, a->prompts[next_text++]});  // none: a guard
    while (next_ids < a->prompt_ids.size()) a->inputs.push_back({true, a->prompt_ids[next_ids++], "--prompt-ids"});
    while (next_file < a->prompt_files.size()) a->inputs.push_back(file_input(next_file++));
    check_weights_seed(*weights_seed, a->random_weights);
    // No notice where the run takes the CPU path: --device cpu refuses the plan, auto ignores it there
    // (--random-weights has no CPU path).
    adopt_plan_mode(a->offload, /*notice=*/a->device != "cpu" &&
                                    (a->random_weights || gpu_unavailable_reason().empty()));
    run_generate(*a);
  });
}

}  // namespace dak::cli
