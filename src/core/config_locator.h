// Finding a model's config.json from what a user types after --model: a config.json path, a
// Hugging Face model folder, a .gguf file (its metadata's hyper-parameters) or a folder whose
// weights are one .gguf file and which has no config.json (as Checkpoint::open takes it), or the
// bare name of a config shipped in configs/ ("llama-2-7b").
// Shipped configs hold hyper-parameters only (no weights) and are found through the source
// tree (compile definition DAK_SOURCE_DIR), or $DAK_CONFIGS_DIR when set, so any working
// directory works.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/model_config.h"

namespace dak {

struct LocatedConfig {
  ModelConfig config;
  std::string name;            // "llama-2-7b", or the folder / file stem
  std::filesystem::path path;  // the config.json read
  std::string given;           // the model as the user gave it (a name or a path), for fixes to repeat
};

/// Folder of the shipped configs: $DAK_CONFIGS_DIR if set, else <DAK_SOURCE_DIR>/configs.
std::filesystem::path shipped_configs_dir();

/// Names of the shipped configs (file stems, sorted).
std::vector<std::string> shipped_config_names();

/// Resolves and parses `model`. Throws dak::Error if nothing matches: a path (with a '/' or ending in
/// .json) that does not exist is "no such file or folder" (a relative one with the working directory),
/// whose fix gives the shipped config's name when the path's stem is one ("configs/opt-30b.json" ->
/// opt-30b), else lists the shipped names; a bare name that is no shipped config lists them. Also
/// when the config is invalid, a folder without config.json holds several .gguf files (naming them), or
/// a folder on the way may not be entered (path_error names it).
LocatedConfig locate_model_config(const std::string& model, const std::string& option = "--model");

/// The refusal of `model`, given to `option`, where nothing is: "no such file or folder: 'foo/bar'
/// (relative to the working directory /x)", where `option`. When the path's stem is a shipped
/// config's name and `shipped_flags` is set, the fix gives that name ("--model opt-30b" followed by
/// *shipped_flags, e.g. " --random-weights" where the command needs weights); else `fix`.
/// locate_model_config refuses a path to nothing this way; so do the commands that open weights.
[[noreturn]] void fail_missing_model_path(const std::string& model, const std::string& option, const std::string& fix,
                                          const std::optional<std::string>& shipped_flags = std::string());

/// Refuses (dak::Error at `option`) a file of a model folder that is not its config or weights but
/// looks like one to --model (the session-50 trial's tokenizer_config.json, read as a config of
/// model_type 'gpt2'): tokenizer.json, tokenizer_config.json, special_tokens_map.json,
/// generation_config.json, adapter_config.json (a PEFT adapter's folder without config.json is named
/// as an adapter: refuse_peft_adapter), preprocessor_config.json, chat_template.json, tokenizer.model,
/// vocab.json, merges.txt, added_tokens.json. The fix names the folder (`given` as the user wrote it,
/// for the message). Other names: no effect.
void refuse_model_folder_side_file(const std::filesystem::path& path, const std::string& given,
                                   const std::string& option);

}  // namespace dak
