// `dak perplexity --model M --file TEXT`: teacher-forced perplexity of a text file (`--file -`:
// standard input; at most kMaxPerplexityTextBytes of either), with a notice up front when the CPU path
// is expected to take over a minute and a progress line on stderr once it takes more than 2 s.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/byte_size.h"
#include "core/cpu_model.h"
#include "core/error.h"
#include "core/generate.h"
#include "core/interrupt.h"
#include "core/pretokenizer.h"
#include "core/tokenizer.h"

namespace dak::cli {

void add_perplexity_command(CLI::App& app) {
  struct Args {
    std::string model;
    std::string file;
    int64_t context = 0;
    std::string device = "auto";
    std::string output = "text";
    std::string gemm = "auto";
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("perplexity", "Perplexity of a text file under a model");
  c->add_option("--model,-m", a->model, "HF model folder, .safetensors or .gguf (default: SmolLM2-135M-Instruct)");
  c->add_option("--file,-f", a->file, "UTF-8 text file to score (at most 64 MiB); - reads standard input")
      ->required()
      ->type_name("FILE");
  c->add_option("--context", a->context, "Window length in tokens: 0 = the model context, else 2 to the model context. Every token "
                "after the first is scored once: each window starts at the last token of the one before "
                "(as context only), so short windows see little history")
      ->capture_default_str()
      ->transform(whole_number("0 (the model's context length) or a window from 2 tokens up to the model's context "
                               "length (`dak inspect` shows it)",
                               0));
  c->add_option("--device", a->device, "cpu, cuda or auto")->capture_default_str()->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  c->add_option("--output", a->output, "text or json")->capture_default_str()->check(CLI::IsMember({"text", "json"}));
  add_gemm_option(c, &a->gemm);
  c->callback([a] {
    const bool from_stdin = a->file == "-";
    const std::string source = from_stdin ? "standard input (--file -)" : a->file;
    // The options of this run, for a command that scores a part of the text the same way.
    std::string options;
    if (!a->model.empty()) options += " --model " + shell_word(a->model);
    if (a->device != "auto") options += " --device " + a->device;
    if (a->context != 0) options += fmt::format(" --context {}", a->context);
    if (a->gemm != "auto") options += " --gemm " + a->gemm;
    // A text over the cap: the part to score instead. The CPU reference path (--device cpu, or auto
    // without a usable GPU) scores far less in reasonable time than a GPU: the part its long-run notice
    // suggests (kCpuPerplexityPartBytes), not 32 MiB, which would take days there.
    const auto part_fix = [&](const std::string& file) {
      const bool cpu = a->device == "cpu" || (a->device == "auto" && !gpu_unavailable_reason().empty());
      const int64_t part = cpu ? kCpuPerplexityPartBytes : kGpuPerplexityPartBytes;
      const std::string command = perplexity_part_command(part, file, options);
      if (cpu) {
        return fmt::format("{} a part small enough for the CPU reference path ({}), e.g. its first {} (iconv -c drops a "
                           "character cut at the end): {}; dak estimates the time of a longer part before scoring it",
                           file.empty() ? "pipe" : "score", a->device == "cpu" ? "--device cpu" : "no usable GPU here",
                           perplexity_part_words(part), command);
      }
      return fmt::format("{} a part of it, e.g. its first {} (iconv -c drops a character cut at the end): {}{}",
                         file.empty() ? "pipe" : "score", perplexity_part_words(part), command,
                         file.empty() ? "" : " (or split it with split -C 32M and score each part)");
    };
    const std::string text =
        read_text_input(a->file, TextInputTerms{"--file", "dak perplexity", "the text to score", part_fix});
    check_utf8(text, from_stdin ? "standard input" : "the text file", source,
               from_stdin ? "convert the text to UTF-8 (e.g. pipe it through iconv -f LATIN1 -t UTF-8)"
                          : "convert the file to UTF-8 (e.g. iconv -f LATIN1 -t UTF-8 in.txt > out.txt) and pass that "
                            "to --file");
    const auto t0 = std::chrono::steady_clock::now();
    // A shipped config has no weights to score with (dak perplexity has no --random-weights).
    auto ckpt = open_model(a->model, "--model",
                           "dak perplexity scores with a checkpoint's weights: pass a model folder, .safetensors or "
                           ".gguf file");
    perplexity_window(a->context, ckpt->config().max_position_embeddings);  // before the engine loads
    std::unique_ptr<Tokenizer> tok;
    try {
      tok = load_tokenizer(*ckpt);
    } catch (const Error& e) {  // its fix speaks of --prompt-ids, which perplexity does not have
      fail(e.what_part(), e.where_part(),
           "perplexity tokenizes the text with the model's tokenizer: use a checkpoint that has one (tokenizer.json "
           "or tokenizer.model next to config.json, or a GGUF with its tokenizer metadata)");
    }
    check_tokenizer_fits_model(*tok, ckpt->config().vocab_size);  // before a text hits an id past the embedding
    // How the text is split sets the score: a GGUF without its pre-tokenizer is said here as in dak generate
    // (the session-50 re-trial); the tokenizer's other notices are about prompts and stop tokens.
    for (const std::string& n : tok->notices())
      if (n.find("tokenizer.ggml.pre") != std::string::npos) std::fprintf(stderr, "dak: notice: %s\n", n.c_str());
    // Tokenized before the weights load, so a text too short to score is refused at once (session-35
    // trial: an empty file loaded the model for 6 s first).
    const auto t_encode = std::chrono::steady_clock::now();
    // The text is scored as it is: BOS first where the tokenizer adds one, and none of the other special
    // tokens encode() adds with them (prefix_ids() and suffix_ids(): EOS with add_eos_token would be
    // scored as one more token; llama.cpp's perplexity refuses such a vocabulary instead).
    std::vector<int32_t> ids = tok->encode(text, /*allow_bos=*/false);
    if (tok->add_bos() && tok->bos_id() >= 0) ids.insert(ids.begin(), tok->bos_id());
    const double encode_s = seconds_since(t_encode);
    if (ids.size() < 2) {
      fail(text.empty() ? std::string("the text is empty") : "the text has fewer than two tokens", source,
           "give a text of two or more tokens (perplexity scores each token after the first)");
    }
    EngineOffload gemm_only;  // no offload flags on this command: only the GEMM backend
    gemm_only.gemm = a->gemm;
    auto engine = make_engine(*ckpt, a->device, &gemm_only);
    const double load_s = seconds_since(t0) - encode_s;
    // A long text on the CPU takes hours: the estimate up front, as dak generate's before a long prefill.
    if (dynamic_cast<CpuModel*>(engine.get())) {
      const int64_t window = perplexity_window(a->context, engine->config().max_position_embeddings);
      // At the machine's load now: another build on the same cores made a ~20k-token text take 2.4 x the
      // estimate for idle cores (cpu_model.h).
      if (const std::string notice = long_cpu_perplexity_notice(
              engine->config(), int64_t(ids.size()), window, /*threads=*/0, current_cpu_contention(),
              perplexity_part_command(kCpuPerplexityPartBytes, from_stdin ? "" : shell_word(a->file), options),
              /*gpu_usable=*/gpu_unavailable_reason().empty());
          !notice.empty()) {
        std::fprintf(stderr, "dak: notice: %s\n", notice.c_str());
      }
    }
    // A long text on the CPU takes minutes: a progress line (stderr_progress_line).
    const std::shared_ptr<ProgressLine> line = stderr_progress_line();
    struct Window {
      int64_t scored = 0, tokens = 0, total = 0;
    };
    auto window = std::make_shared<Window>();
    auto show = [line, window](double window_fraction) {
      const Window& w = *window;
      const double done = double(w.scored) + window_fraction * double(w.tokens);
      line->update(fmt::format("dak: perplexity: {} of {} tokens scored ({:.0f}%), {:.1f} s", int64_t(done), w.total,
                               100.0 * done / double(w.total), line->seconds()));
    };
    if (auto* cpu = dynamic_cast<CpuModel*>(engine.get())) {  // within a window: its layers
      cpu->set_layer_progress([show](int64_t, int64_t done, int64_t layers) {
        if (layers > 0 && done > 0) show(double(done) / double(layers));
      });
    }
    // Ctrl-C stops the current window (the CPU path: after its layer), keeping the score of the windows
    // before; the scope lasts until the result is printed.
    const InterruptScope interrupts;
    const PerplexityResult r = [&] {
      try {
        return perplexity(*engine, ids, a->context, [window, show](int64_t scored, int64_t tokens, int64_t total) {
          *window = Window{scored, tokens, total};
          show(0.0);
        });
      } catch (const Error& e) {
        explain_non_finite_output(e, ckpt.get());  // names a weight that holds NaN / inf, if one does
        throw;
      }
    }();
    line->finish(fmt::format("dak: perplexity: {} tokens scored in {:.1f} s", r.tokens_scored, line->seconds()));
    const char* signal_name = interrupt_signal_name();
    if (r.interrupted && r.tokens_scored == 0) {
      std::fprintf(stderr, "dak: interrupted (%s) before the first window was scored: no score\n", signal_name);
      throw Interrupted{interrupt_signal()};
    }
    if (a->output == "json") {
      nlohmann::json j = {{"model", ckpt->path().string()}, {"file", from_stdin ? "-" : a->file}, {"device", engine->device_name()},
                          {"perplexity", r.perplexity}, {"mean_nll", r.mean_nll}, {"tokens_scored", r.tokens_scored},
                          {"load_s", load_s}, {"seconds", r.seconds}, {"interrupted", r.interrupted},
                          {"tokens_total", r.tokens_total}};
      std::cout << json_text(j) << std::endl;
    } else {
      // Fixed point while it reads as a number; a model far off the text (trial 28: ~100 digits, or inf
      // past e^709) in exponent form, with the mean NLL it comes from.
      const std::string ppl = r.perplexity < 1e6 ? fmt::format("{:.4f}", r.perplexity)
                                                 : fmt::format("{:.4g} (mean NLL {:.4f} nats per token)", r.perplexity,
                                                               r.mean_nll);
      // Interrupted: the first tokens' score, said as such ("over the first 512 of 2047 tokens").
      const std::string over = r.interrupted ? fmt::format("the first {} of {}", r.tokens_scored, r.tokens_total)
                                             : std::to_string(r.tokens_scored);
      std::cout << fmt::format("perplexity {} over {} token{} ({}; {:.2f} s, load {:.2f} s)\n", ppl, over,
                               r.tokens_total == 1 ? "" : "s", engine->device_name(), r.seconds, load_s);
    }
    if (interrupt_signal() != 0) {
      flush_stdout_or_fail();
      if (r.interrupted) {
        std::fprintf(stderr, "dak: interrupted (%s): the score above is of the first %lld of %lld tokens\n",
                     signal_name, static_cast<long long>(r.tokens_scored), static_cast<long long>(r.tokens_total));
      } else {
        std::fprintf(stderr, "dak: interrupted (%s) after the last window: the score above is of every token\n",
                     signal_name);
      }
      throw Interrupted{interrupt_signal()};
    }
  });
}

}  // namespace dak::cli
