// `dak inspect MODEL`: architecture, every tensor (name, dtype, shape, bytes), totals.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/inspect.h"

namespace dak::cli {

void add_inspect_command(CLI::App& app) {
  struct Args {
    std::string model;
    std::string output = "text";
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("inspect", "Show a checkpoint's architecture, tensors and sizes");
  c->add_option("model", a->model, "HF model folder, .safetensors or .gguf (default: SmolLM2-135M-Instruct)");
  c->add_option("--output", a->output, "text or json")->capture_default_str()->check(CLI::IsMember({"text", "json"}));
  c->callback([a] {
    auto ckpt = open_model(a->model);
    if (a->output == "json") {
      std::cout << json_text(inspect_json(*ckpt)) << std::endl;
    } else {
      std::cout << inspect_text(*ckpt);
    }
  });
}

}  // namespace dak::cli
