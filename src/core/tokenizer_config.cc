#include "core/tokenizer_config.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/json_file.h"

namespace dak {

namespace {

using nlohmann::json;

// The checks and wording of config.json's reader (parse_json_text: line and column, no parser
// internals; the trial of session 27 met "[json.exception.parse_error.101] ..." here).
json parse_json(std::string_view text, const std::string& what, const std::string& source) {
  return parse_json_text(std::string(text), what, source, "restore the file from the model's repository");
}

// A token given as "text" or as an AddedToken object {"content": "text", ...}; null -> nullopt.
std::optional<std::string> token_text(const json& j, const std::string& where) {
  if (j.is_null()) return std::nullopt;
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
  fail("expected a token string or an object with \"content\"", where, "fix the field or remove it");
}

}  // namespace

void parse_tokenizer_config(std::string_view text, const std::string& source, HfTokenizerConfig& out) {
  json j = parse_json(text, "the tokenizer config", source);
  if (!j.is_object()) fail("expected a JSON object at the top level", source, "restore the file");
  if (auto it = j.find("bos_token"); it != j.end()) out.bos_token = token_text(*it, source + ": bos_token");
  if (auto it = j.find("eos_token"); it != j.end()) out.eos_token = token_text(*it, source + ": eos_token");
  if (auto it = j.find("add_bos_token"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) fail("expected true or false", source + ": add_bos_token", "fix the field");
    out.add_bos_token = it->get<bool>();
  }
  if (auto it = j.find("add_eos_token"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) fail("expected true or false", source + ": add_eos_token", "fix the field");
    out.add_eos_token = it->get<bool>();
  }
  if (auto it = j.find("chat_template"); it != j.end() && !it->is_null()) {
    if (it->is_string()) {
      out.chat_template = it->get<std::string>();
    } else if (it->is_array()) {
      for (const json& t : *it) {
        auto name = t.is_object() ? t.find("name") : t.end();
        auto body = t.is_object() ? t.find("template") : t.end();
        // Every entry is {name, template} (transformers' form); anything else was skipped without a
        // word (the trial of session 27: chat_template [1, 2]).
        if (!t.is_object() || name == t.end() || !name->is_string() || body == t.end() || !body->is_string()) {
          fail("expected a string or a list of {\"name\": ..., \"template\": ...} objects, found an entry " +
                   t.dump().substr(0, 60),
               source + ": chat_template", "fix the field, or remove it (dak then has no chat template)");
        }
        if (*name == "default") out.chat_template = body->get<std::string>();
      }
    } else {
      fail("expected a string or a list of {name, template}", source + ": chat_template", "fix the field");
    }
    if (out.chat_template) out.chat_template_source = source + ": chat_template";
  }
}

void parse_generation_config(std::string_view text, const std::string& source, HfTokenizerConfig& out) {
  json j = parse_json(text, "the generation config", source);
  if (!j.is_object()) fail("expected a JSON object at the top level", source, "restore the file");
  auto it = j.find("eos_token_id");
  if (it == j.end() || it->is_null()) return;
  auto take = [&](const json& v) {
    if (!v.is_number_integer()) fail("expected an integer token id", source + ": eos_token_id", "fix the field");
    out.generation_eos_ids.push_back(v.get<int64_t>());
  };
  if (it->is_array()) {
    for (const json& v : *it) take(v);
  } else {
    take(*it);
  }
}

std::string read_text_file(const std::filesystem::path& path) {
  errno = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_if_no_permission(path.string(), errno);  // say what may not be read, and how to allow it
  if (!f) fail("cannot open file", path.string(), "check that it exists and is readable");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail("error reading file", path.string(), "check the file");
  return ss.str();
}

HfTokenizerConfig read_tokenizer_config(const std::filesystem::path& dir) {
  HfTokenizerConfig cfg;
  std::error_code ec;
  // A file of these names that is not a regular file (a FIFO, a folder) is refused, not skipped (the
  // trial of session 27); a dangling link is named by examine_path.
  for (const char* name : {"tokenizer_config.json", "generation_config.json", "chat_template.jinja"}) {
    const std::filesystem::file_type t = examine_path(dir / name);
    if (t != std::filesystem::file_type::not_found && t != std::filesystem::file_type::regular) {
      fail(fmt::format("{} is not a regular file", name), (dir / name).string(),
           "replace it with the file from the model's repository, or remove it");
    }
  }
  if (auto p = dir / "tokenizer_config.json"; std::filesystem::is_regular_file(p, ec)) {
    parse_tokenizer_config(read_text_file(p), p.string(), cfg);
  }
  if (auto p = dir / "generation_config.json"; std::filesystem::is_regular_file(p, ec)) {
    parse_generation_config(read_text_file(p), p.string(), cfg);
  }
  // transformers >= 4.43 saves the template beside the config instead of inside it.
  if (auto p = dir / "chat_template.jinja"; !cfg.chat_template && std::filesystem::is_regular_file(p, ec)) {
    cfg.chat_template = read_text_file(p);
    cfg.chat_template_source = p.string();
  }
  return cfg;
}

std::vector<int32_t> collect_eos_ids(int64_t eos, const std::vector<int64_t>& extra, int32_t vocab_size,
                                     const std::function<std::optional<int32_t>(std::string_view)>& lookup,
                                     std::vector<int64_t>* ignored) {
  std::vector<int32_t> ids;
  auto add = [&](int64_t id) {
    if (id >= 0 && id < vocab_size) ids.push_back(static_cast<int32_t>(id));
  };
  add(eos);
  for (int64_t id : extra) {
    add(id);
    if ((id < 0 || id >= vocab_size) && ignored) ignored->push_back(id);
  }
  for (std::string_view turn_end : {"<|im_end|>", "<|eot_id|>"}) {
    if (auto id = lookup(turn_end)) add(*id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

void check_add_eos(int64_t eos, const std::optional<std::string>& eos_name, const std::string& tokenizer_file) {
  if (eos >= 0) return;
  const std::string config_path = (std::filesystem::path(tokenizer_file).parent_path() / "tokenizer_config.json").string();
  if (eos_name) {
    fail("add_eos_token is true but its eos_token '" + *eos_name + "' is not in the vocabulary",
         config_path + ": add_eos_token", "name a token of the vocabulary as eos_token, or set add_eos_token to false");
  }
  fail("add_eos_token is true but the tokenizer has no EOS token", config_path + ": add_eos_token",
       "name one with eos_token, or set add_eos_token to false");
}

std::string names_for_notice(const std::vector<std::string>& names) {
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kShown) out += fmt::format(" and {} more", names.size() - kShown);
  return out;
}

std::string suffix_notice(const std::vector<std::string>& names, const std::string& from) {
  return fmt::format("every prompt ends in {} ({}); --chat prompts, --prompt-ids and the text of dak perplexity do "
                     "not",
                     names_for_notice(names), from);
}

std::string ignored_eos_notice(const std::vector<int64_t>& ignored, const std::string& what, int32_t vocab_size) {
  if (ignored.empty()) return "";
  return fmt::format("{} {} {} outside the tokenizer's vocabulary (ids 0 to {}): ignored, so generation does not "
                     "stop at {}",
                     what, fmt::join(ignored, ", "), ignored.size() == 1 ? "is" : "are", vocab_size - 1,
                     ignored.size() == 1 ? "it" : "them");
}

}  // namespace dak
