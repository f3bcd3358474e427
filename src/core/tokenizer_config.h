// What a Hugging Face model folder says about its tokenizer outside tokenizer.json /
// tokenizer.model: tokenizer_config.json (bos_token, eos_token, add_bos_token,
// chat_template; transformers' PreTrainedTokenizerBase) and generation_config.json
// (eos_token_id, int or list; transformers' GenerationConfig), chat_template.jinja.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dak {

struct HfTokenizerConfig {
  std::optional<std::string> bos_token;      // token text, e.g. "<|im_start|>"
  std::optional<std::string> eos_token;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;          // LlamaTokenizer(Fast)'s: EOS after the text
  std::optional<std::string> chat_template;  // the "default" one when the file holds a list
  std::string chat_template_source;          // where it was read: "<dir>/tokenizer_config.json: chat_template"
                                             // or "<dir>/chat_template.jinja"; "" without one
  std::vector<int64_t> generation_eos_ids;   // generation_config.json eos_token_id
};

/// Parses tokenizer_config.json text. Tokens may be strings or AddedToken objects
/// ({"content": ...}); chat_template a string or a list of {name, template} (its source then is
/// "<source>: chat_template"). Throws
/// dak::Error naming `source` and the field on invalid JSON or a field of the wrong type.
void parse_tokenizer_config(std::string_view text, const std::string& source, HfTokenizerConfig& out);

/// Parses generation_config.json text (only eos_token_id). Throws like parse_tokenizer_config.
void parse_generation_config(std::string_view text, const std::string& source, HfTokenizerConfig& out);

/// Reads tokenizer_config.json, generation_config.json and chat_template.jinja (used when
/// tokenizer_config.json has no chat_template) in `dir` when they exist.
HfTokenizerConfig read_tokenizer_config(const std::filesystem::path& dir);

/// Reads a whole file. Throws dak::Error naming the file when it cannot be read (path_error when
/// this user may not read it: the folder or file at fault, and how to grant access).
std::string read_text_file(const std::filesystem::path& path);

/// End-of-generation ids: `eos` (when >= 0), the extra ids (when in range), and the
/// end-of-turn tokens of chat formats found by `lookup` (token text -> id): "<|im_end|>"
/// (ChatML) and "<|eot_id|>" (Llama-3), so that generation stops at the end of a chat turn.
/// Sorted, without duplicates or out-of-range ids; the extra ids out of range are appended to
/// `ignored` when given (for a notice: transformers keeps them, and they never match a token).
std::vector<int32_t> collect_eos_ids(int64_t eos, const std::vector<int64_t>& extra, int32_t vocab_size,
                                     const std::function<std::optional<int32_t>(std::string_view)>& lookup,
                                     std::vector<int64_t>* ignored = nullptr);

/// The notice for end-of-generation ids `ignored` (collect_eos_ids) that `what` names
/// ("generation_config.json's eos_token_id"): "" when there are none.
std::string ignored_eos_notice(const std::vector<int64_t>& ignored, const std::string& what, int32_t vocab_size);

/// For add_eos_token = true in the tokenizer_config.json beside `tokenizer_file` (the tokenizer.json
/// or tokenizer.model read): throws dak::Error when the tokenizer has no EOS id (`eos` < 0), saying
/// whether the config's eos_token (`eos_name`) is missing or names no token of the vocabulary.
void check_add_eos(int64_t eos, const std::optional<std::string>& eos_name, const std::string& tokenizer_file);

/// Token names for a notice, comma-separated: the first 8, then how many more ("a, b and 3 more";
/// a post-processor may list 100,000 ids).
std::string names_for_notice(const std::vector<std::string>& names);

/// The notice of a tokenizer whose encode() appends suffix_ids(): `names` the tokens
/// (names_for_notice), `from` where the rule comes from ("tokenizer.json's post_processor").
std::string suffix_notice(const std::vector<std::string>& names, const std::string& from);

}  // namespace dak
