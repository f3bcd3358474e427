// How a command names the step shape (batch, prompt length, generation length) in the where and
// fix parts of core's errors: dak plan and dak bench take --batch / --prompt-len / --gen-len, dak
// generate takes prompts and --max-new-tokens. The capacity, planner and op-graph checks say what
// to lower in the words of the command that asked (the new-user trials of sessions 22-24 were told
// to lower flags that dak generate does not have).
#pragma once

#include <cstdint>
#include <string>

namespace dak {

struct ShapeTerms {
  /// The dimensions of the step shape, combined as a bit set.
  enum Dim : unsigned { kBatch = 1, kPrompt = 2, kGen = 4, kAll = 7 };
  /// The command whose options name the shape. kPlan: dak plan (--batch / --prompt-len /
  /// --gen-len, and --tile-rows); kBench: dak bench (the same shape flags, no --tile-rows);
  /// kGenerate: dak generate (the prompts given and --max-new-tokens).
  enum class Command : uint8_t { kPlan, kBench, kGenerate };
  Command command = Command::kPlan;
  /// dak generate with one prompt: "fewer prompts" is no fix there, so lower() leaves it out (unless
  /// the batch is all it would name).
  bool one_prompt = false;
  /// dak generate with --max-context: the context (prompt + generation) is that flag's, not the
  /// prompts' and --max-new-tokens', so flags() and lower() name it for kPrompt | kGen.
  bool max_context = false;

  /// The options that set `dims`, for an error's where part: "--batch / --prompt-len / --gen-len";
  /// for generate "the prompts / --max-new-tokens" (batch and prompt length are both the prompts).
  std::string flags(unsigned dims) const;
  /// A fix that shrinks `dims`: "lower --batch, --prompt-len or --gen-len"; for generate "give fewer
  /// prompts at once (--max-batch), a shorter prompt or fewer new tokens (--max-new-tokens / -n)",
  /// without the prompts when one_prompt.
  std::string lower(unsigned dims) const;
  /// Whether the command takes --tile-rows (dak plan only).
  bool has_tile_rows() const { return command == Command::kPlan; }
};

}  // namespace dak
