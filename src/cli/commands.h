// The `dak` subcommands. Each add_*_command registers a CLI11 subcommand whose callback
// does the work and throws dak::Error on bad input; main() prints it and exits with 1.
#pragma once

#include <CLI/CLI.hpp>

namespace dak::cli {

void add_generate_command(CLI::App& app);    // cmd_generate.cc
void add_inspect_command(CLI::App& app);     // cmd_inspect.cc
void add_perplexity_command(CLI::App& app);  // cmd_perplexity.cc
void add_plan_command(CLI::App& app);        // cmd_plan.cc
void add_bench_command(CLI::App& app);       // cmd_bench.cc
void add_profile_command(CLI::App& app);     // cmd_profile.cc

// Subcommands of `dak bench` (registered by add_bench_command).
void add_bench_gemm_command(CLI::App& bench);       // cmd_bench_gemm.cc: `dak bench gemm`
void add_bench_attention_command(CLI::App& bench);  // cmd_bench_attention.cc: `dak bench attention`

}  // namespace dak::cli
