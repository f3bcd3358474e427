#include "core/config_locator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <regex>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/gguf.h"
#include "core/gguf_config.h"

namespace dak {

namespace fs = std::filesystem;

fs::path shipped_configs_dir() {
  if (const char* env = std::getenv("DAK_CONFIGS_DIR"); env && *env) return fs::path(env);
  return fs::path(DAK_SOURCE_DIR) / "configs";
}

std::vector<std::string> shipped_config_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(shipped_configs_dir(), ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

/// The .gguf file of a model folder `dir` that has no safetensors weights (model.safetensors or
/// model.safetensors.index.json) and exactly one .gguf; nullopt when it has none or has safetensors
/// weights. Throws dak::Error when it has several (naming them: which one is meant is the user's
/// choice, as for Checkpoint::open), path_error when it cannot be listed.
std::optional<fs::path> sole_gguf_of(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "model.safetensors", ec) || fs::exists(dir / "model.safetensors.index.json", ec)) {
    return std::nullopt;
  }
  return sole_gguf_in(dir, "no config.json");
}

}  // namespace

void fail_missing_model_path(const std::string& model, const std::string& option, const std::string& fix,
                             const std::optional<std::string>& shipped_flags) {
  // Says so, naming the folder a relative path was taken from. A path to a shipped config's file
  // ("configs/opt-30b.json", which exists only from the source tree's root) gets the config's name,
  // which works from any folder.
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  const std::string relative =
      fs::path(model).is_relative() && !ec ? fmt::format(" (relative to the working directory {})", cwd.string()) : "";
  std::string stem = fs::path(model).stem().string();
  std::transform(stem.begin(), stem.end(), stem.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const std::vector<std::string> shipped_names = shipped_config_names();
  const bool names_shipped = shipped_flags && !stem.empty() &&
                             std::find(shipped_names.begin(), shipped_names.end(), stem) != shipped_names.end();
  // A dangling symbolic link says where it points (session 46's trial: only "no such file").
  const std::string link =
      fs::is_symlink(fs::symlink_status(fs::path(model), ec))
          ? fmt::format(" (a symbolic link to '{}', which does not exist)", fs::read_symlink(fs::path(model), ec).string())
          : std::string();
  // "org/name" with nothing there: a Hugging Face repository id, as transformers and vLLM take it
  // (trial of session 50); dak reads local files only.
  // A repository's web address too (https://huggingface.co/org/name/...): its org/name.
  static const std::regex kRepoId(R"([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)");
  static const std::regex kRepoUrl(R"((?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/)"
                                   R"(([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)(?:/.*)?)");
  std::smatch url;
  const std::string repo =
      !link.empty() ? std::string()
      : std::regex_match(model, url, kRepoUrl) ? url[1].str()
      : std::regex_match(model, kRepoId) && fs::path(model).extension() != ".json" &&
              fs::path(model).extension() != ".gguf" && fs::path(model).extension() != ".safetensors"
          ? model
          : std::string();
  fail(fmt::format("no such file or folder: '{}'{}{}", model, link, relative), option,
       names_shipped ? fmt::format("give the shipped config's name instead, which works from any folder: {} {}{} (or "
                                   "check the path)",
                                   option, stem, *shipped_flags)
       : !repo.empty() ? fmt::format("{}; if '{}' is a Hugging Face repository: dak reads models from local files and "
                                     "downloads nothing, so download it first (e.g. hf download {} --local-dir {}, "
                                     "huggingface_hub's command) and give that folder",
                                     fix, repo, repo, shell_word(fs::path(repo).filename().string()))
                       : fix);
}

void refuse_model_folder_side_file(const fs::path& path, const std::string& given, const std::string& option) {
  static const std::pair<const char*, const char*> kSideFiles[] = {
      {"tokenizer.json", "tokenizer"},
      {"tokenizer_config.json", "tokenizer settings"},
      {"special_tokens_map.json", "special tokens"},
      {"generation_config.json", "generation settings"},
      {"adapter_config.json", "adapter (LoRA) settings"},
      {"preprocessor_config.json", "preprocessor settings"},
      {"chat_template.json", "chat template"},
      {"tokenizer.model", "SentencePiece tokenizer"},
      {"vocab.json", "tokenizer vocabulary"},
      {"merges.txt", "tokenizer merges"},
      {"added_tokens.json", "added tokens"},
  };
  // A browser's second download of a file is "tokenizer (1).json" (Chrome) or "tokenizer(1).json"
  // (Firefox): known by the name without that copy number.
  static const std::regex kCopyNumber(R"(^(.*[^ ]) ?\([0-9]+\)(\.[^.]*)?$)");
  std::string name = path.filename().string();
  if (std::smatch copy; std::regex_match(name, copy, kCopyNumber)) name = copy[1].str() + copy[2].str();
  if (name == "adapter_config.json") refuse_peft_adapter(folder_of(path));
  for (const auto& [file, holds] : kSideFiles) {
    if (name != file) continue;
    fail(fmt::format("'{}' holds the model's {}, not its config (config.json) or weights", given, holds), option,
         fmt::format("give the model folder instead, which holds config.json and the weights: {}",
                     shell_word(folder_of(path).string())));
  }
}

LocatedConfig locate_model_config(const std::string& model, const std::string& option) {
  std::error_code ec;
  LocatedConfig out;
  out.given = model;
  if (model.empty()) fail("no model given", option, "pass a config.json, a model folder or a shipped config name");
  const bool present = fs::exists(model, ec);
  // A path that cannot be examined (a folder on the way without search permission): say which
  // folder, rather than "neither a config.json, a model folder, nor a shipped config".
  if (ec == std::errc::permission_denied) throw path_error(model, ec);
  if (present) {
    fs::path p = fs::absolute(model, ec);
    // A checkpoint's weights file (model.safetensors, or a shard) stands for its folder, whose
    // config.json holds the hyper-parameters (README: --model takes the file too).
    // So does the index of a sharded checkpoint (dak generate runs it; trial of session 50).
    if ((p.extension() == ".safetensors" || p.filename().string().ends_with(".safetensors.index.json")) &&
        fs::is_regular_file(p, ec))
      p = p.parent_path();
    if (fs::is_regular_file(p, ec)) refuse_model_folder_side_file(fs::path(model), model, option);
    const bool dir = fs::is_directory(p, ec);
    out.path = dir ? p / "config.json" : p;
    out.name =
        dir ? p.filename().string() : (p.stem() == "config" ? p.parent_path().filename().string() : p.stem().string());
    // A folder without config.json (nor safetensors weights, which need one) whose weights are one
    // .gguf file: that file, as Checkpoint::open takes it (dak generate runs such a folder). A
    // config.json that cannot be examined (a folder this user may not enter) is reported as such.
    if (dir && !fs::exists(out.path, ec) && !ec) {
      if (const std::optional<fs::path> gguf = sole_gguf_of(p)) out.path = *gguf;
      if (out.path.extension() != ".gguf") {
        // The folder as the user wrote it (the weights file given stands for its folder).
        const fs::path given_dir = fs::is_directory(fs::path(model), ec) ? fs::path(model) : folder_of(model);
        refuse_hf_cache_root(given_dir);
        refuse_peft_adapter(given_dir);
      }
    }
    if (out.path.extension() == ".gguf") {  // the hyper-parameters a GGUF file carries in its metadata
      out.config = model_config_from_gguf(*GgufFile::open(out.path));
      return out;
    }
    out.config = ModelConfig::from_hf_file(out.path);
    return out;
  }
  std::string key = model;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const fs::path shipped = shipped_configs_dir() / (key + ".json");
  const bool bare = model.find('/') == std::string::npos && fs::path(model).extension() != ".json";
  if (bare && fs::exists(shipped, ec)) {
    out.path = shipped;
    out.name = key;
    out.config = ModelConfig::from_hf_file(shipped);
    return out;
  }
  const std::vector<std::string> shipped_names = shipped_config_names();
  std::string names;
  for (const std::string& n : shipped_names) names += (names.empty() ? "" : ", ") + n;
  if (names.empty()) {
    // Say why there are none (the session-34 trial read "(none found)" for a DAK_CONFIGS_DIR that did not exist).
    const char* env = std::getenv("DAK_CONFIGS_DIR");
    const bool from_env = env && *env;
    // A file there is no folder (a new-user trial's DAK_CONFIGS_DIR=/tmp/t.txt read "does not exist").
    const fs::path dir = shipped_configs_dir();
    const bool folder = fs::is_directory(dir, ec);
    const bool other = !folder && fs::exists(dir, ec);
    names = folder ? std::string("(none found: the folder holds no .json config)")
                   : fmt::format("(none found: {}{})",
                                 !other                       ? "the folder does not exist"
                                 : fs::is_regular_file(dir, ec) ? "the path is a file, not a folder"
                                                               : "the path is not a folder",
                                 from_env ? "; DAK_CONFIGS_DIR names it: point it at a folder of configs, or unset it "
                                            "for the shipped configs"
                                          : "");
  }
  if (!bare) {
    fail_missing_model_path(model, option,
                            fmt::format("check the path, or give the name of a shipped config (from {}): {}",
                                        shipped_configs_dir().string(), names));
  }
  fail(fmt::format("'{}' is neither a config.json, a model folder, nor a shipped config", model), option,
       fmt::format("pass a path, or one of the configs in {}: {}", shipped_configs_dir().string(), names));
}

}  // namespace dak
