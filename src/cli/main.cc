// dak: command-line entry point. Errors from any command are printed as
// "dak: error: <what> / where / fix" and give exit code 1; CLI usage errors give CLI11's code.
#include <cstdio>
#include <exception>
#include <filesystem>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"dak: LLM inference on one Hopper GPU with weights and KV cache read directly "
               "from host memory"};
  app.require_subcommand(1);
  dak::cli::add_generate_command(app);
  dak::cli::add_inspect_command(app);
  dak::cli::add_perplexity_command(app);
  dak::cli::add_plan_command(app);
  dak::cli::add_bench_command(app);
  dak::cli::add_profile_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const dak::Error& e) {
    std::fprintf(stderr, "dak: error: %s\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the code examined without an error code (a symbolic link loop, a folder without
    // permission): the user's input, not an internal error.
    const dak::Error err("cannot examine the path: " + e.code().message(), e.path1().string(),
                         "check that it exists, is not a symbolic link loop and that you may read its folders");
    std::fprintf(stderr, "dak: error: %s\n", err.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dak: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
