// `dak perplexity --model M --file TEXT`: teacher-forced perplexity of a text file (`--file -`:
// standard input), with a progress line on stderr once it takes more than 2 s.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/cpu_model.h"
#include "core/error.h"
#include "core/generate.h"
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
  c->add_option("--file,-f", a->file, "UTF-8 text file to score; - reads standard input")->required();
  c->add_option("--context", a->context, "Window length in tokens: 0 = the model context, else 2 to the model context")
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
    std::stringstream ss;
    if (from_stdin) {
      ss << std::cin.rdbuf();
      if (std::cin.bad()) fail("cannot read standard input", source, "pipe a UTF-8 text into dak, or pass a file");
    } else {
      namespace fs = std::filesystem;
      std::error_code ec;
      const fs::file_status st = fs::status(a->file, ec);
      if (!fs::exists(st)) fail("no such file", a->file, "check the path passed to --file");
      // Regular files and pipes (e.g. <(command)); a folder or a device is refused.
      if (!fs::is_regular_file(st) && !fs::is_fifo(st)) {
        fail(fs::is_directory(st) ? "is a folder, not a text file" : "not a regular file", a->file,
             "pass a UTF-8 text file to --file, or - to read standard input");
      }
      errno = 0;
      std::ifstream in(a->file, std::ios::binary);
      if (!in) {
        const int err = errno;  // set by the open(2) under the stream (e.g. EACCES)
        fail(err ? fmt::format("cannot read the text file: {}", std::strerror(err)) : std::string("cannot read the text file"),
             a->file,
             err == EACCES ? "give yourself read permission on the file (chmod u+r), or pass another file"
                           : "check the path passed to --file");
      }
      ss << in.rdbuf();
    }
    const std::string text = ss.str();
    check_utf8(text, from_stdin ? "standard input" : "the text file", source,
               from_stdin ? "convert the text to UTF-8 (e.g. pipe it through iconv -f LATIN1 -t UTF-8)"
                          : "convert the file to UTF-8 (e.g. iconv -f LATIN1 -t UTF-8 in.txt > out.txt) and pass that "
                            "to --file");
    const auto t0 = std::chrono::steady_clock::now();
    auto ckpt = open_model(a->model);
    perplexity_window(a->context, ckpt->config().max_position_embeddings);  // before the engine loads
    std::unique_ptr<Tokenizer> tok;
    try {
      tok = load_tokenizer(*ckpt);
    } catch (const Error& e) {  // its fix speaks of --prompt-ids, which perplexity does not have
      fail(e.what_part(), e.where_part(),
           "perplexity tokenizes the text with the model's tokenizer: use a checkpoint that has one (tokenizer.json "
           "or tokenizer.model next to config.json, or a GGUF with its tokenizer metadata)");
    }
    EngineOffload gemm_only;  // no offload flags on this command: only the GEMM backend
    gemm_only.gemm = a->gemm;
    auto engine = make_engine(*ckpt, a->device, &gemm_only);
    const double load_s = seconds_since(t0);
    const std::vector<int32_t> ids = tok->encode(text, /*allow_bos=*/true);
    if (ids.size() < 2) fail("the text has fewer than two tokens", source, "give a longer text");
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
    const PerplexityResult r =
        perplexity(*engine, ids, a->context, [window, show](int64_t scored, int64_t tokens, int64_t total) {
          *window = Window{scored, tokens, total};
          show(0.0);
        });
    line->finish(fmt::format("dak: perplexity: {} tokens scored in {:.1f} s", r.tokens_scored, line->seconds()));
    if (a->output == "json") {
      nlohmann::json j = {{"model", ckpt->path().string()}, {"file", from_stdin ? "-" : a->file}, {"device", engine->device_name()},
                          {"perplexity", r.perplexity}, {"mean_nll", r.mean_nll}, {"tokens_scored", r.tokens_scored},
                          {"load_s", load_s}, {"seconds", r.seconds}};
      std::cout << json_text(j) << std::endl;
    } else {
      std::cout << fmt::format("perplexity {:.4f} over {} tokens ({}; {:.2f} s, load {:.2f} s)\n", r.perplexity,
                               r.tokens_scored, engine->device_name(), r.seconds, load_s);
    }
  });
}

}  // namespace dak::cli
