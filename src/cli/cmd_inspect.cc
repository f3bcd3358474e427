// `dak inspect MODEL`: architecture, every tensor (name, dtype, shape, bytes), totals.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/inspect.h"

namespace dak::cli {

void add_inspect_command(CLI::App& app) {
  struct Args {
    std::string model, model_flag;
    std::string output = "text";
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("inspect", "Show a checkpoint's architecture, tensors and sizes");
  CLI::Option* positional =
      // Named MODEL: a positional named "model" clashes with --model (newer CLI11 throws
      // OptionAlreadyAdded when the command is built).
      c->add_option("MODEL", a->model, "HF model folder, .safetensors or .gguf (default: SmolLM2-135M-Instruct)");
  CLI::Option* flag = c->add_option("--model,-m", a->model_flag, "The same as MODEL (as in the other commands)");
  c->add_option("--output", a->output, "text or json")->capture_default_str()->check(CLI::IsMember({"text", "json"}));
  c->callback([a, positional, flag] {
    if (positional->count() > 0 && flag->count() > 0) {
      fail("the model is given twice (MODEL and --model)", "dak inspect", "give it once: dak inspect PATH");
    }
    const std::string model = flag->count() > 0 ? a->model_flag : a->model;
    if ((positional->count() > 0 || flag->count() > 0) && model.empty()) {
      fail("the model path is empty", "dak inspect",
           "pass a model folder, .safetensors or .gguf file, or nothing for the default model");
    }
    // A shipped config has no tensors to list: inspect has no --random-weights (the session-23 trial
    // read that fix, and `where: --model` for a positional MODEL); dak plan takes the config, named
    // as given (without MODEL: $DAK_MODEL, not '').
    const std::string config = model.empty() ? dak_model_env() : model;
    auto ckpt = open_model(model, flag->count() > 0 ? "--model (dak inspect)" : "MODEL (dak inspect)",
                           fmt::format("dak inspect lists the tensors of a checkpoint: pass a model folder, "
                                       ".safetensors or .gguf file (`dak plan --model {}` plans its config)",
                                       shell_word(config)));
    if (a->output == "json") {
      std::cout << json_text(inspect_json(*ckpt)) << std::endl;
    } else {
      std::cout << inspect_text(*ckpt);
    }
  });
}

}  // namespace dak::cli
