#include "core/tokenizer.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/bpe_tokenizer.h"
#include "core/checkpoint.h"
#include "core/error.h"
#include "core/gguf.h"
#include "core/sentencepiece_tokenizer.h"
#include "core/tokenizer_config.h"

namespace dak {

bool Tokenizer::is_eos(int32_t id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

void check_tokenizer_fits_model(const Tokenizer& tok, int64_t model_vocab, const std::string& alternative) {
  const int64_t n = tok.vocab_size(), count = tok.token_count();
  if (n <= model_vocab) return;
  // Ids with gaps (a new-user trial: 256 tokens, one of them id 999999, read "has 1000000 tokens"): the
  // count and the largest id.
  const std::string has =
      count == n ? fmt::format("has {} tokens (ids 0 to {}, added and special tokens included), more than", n, n - 1)
                 : fmt::format("has {} token{} (added and special tokens included), but its largest id is {}, past",
                               count, count == 1 ? "" : "s", n - 1);
  fail(fmt::format("the tokenizer {} the model's vocabulary of {} (its vocab_size, the rows of its embedding): ids "
                   "from {} up have no embedding",
                   has, model_vocab, model_vocab),
       tok.source(),
       "use the tokenizer that belongs to these weights (tokenizer.json or tokenizer.model from the same model "
       "repository)" +
           (alternative.empty() ? std::string() : ", or " + alternative));
}

namespace {

/// Whether the model folder has the tokenizer file `file` (tokenizer.json, tokenizer.model): false when
/// it has nothing by that name. Something else by that name (a folder, a device), a link to nothing
/// or a path this user may not examine is an error naming it (as config.json's), not "no tokenizer".
bool has_tokenizer_file(const std::filesystem::path& file) {
  namespace fs = std::filesystem;
  const fs::file_type type = examine_path(file);
  if (type == fs::file_type::not_found) return false;
  if (type != fs::file_type::regular) {
    const std::string name = file.filename().string();
    fail(fmt::format("{} is not a regular file ({})", name,
                     type == fs::file_type::directory ? "a folder" : "a device, FIFO or socket"),
         file.string(),
         fmt::format("replace it with the model's {} from its repository, or pass the prompt as token ids with "
                     "--prompt-ids, which works without a tokenizer",
                     name));
  }
  return true;
}

}  // namespace

bool has_tokenizer(const Checkpoint& ckpt) {
  if (const GgufFile* gguf = ckpt.gguf()) return gguf->find("tokenizer.ggml.model") != nullptr;
  std::error_code ec;
  const auto& path = ckpt.path();
  const auto dir = std::filesystem::is_directory(path, ec) ? path : path.parent_path();
  // Anything by a tokenizer file's name counts (a folder, a dangling link): load_tokenizer then says
  // what is wrong with it, so --prompt-ids gives -p's reason instead of staying silent.
  for (const char* name : {"tokenizer.json", "tokenizer.model"}) {
    std::error_code lec;
    if (std::filesystem::symlink_status(dir / name, lec).type() != std::filesystem::file_type::not_found) return true;
  }
  return false;
}

std::unique_ptr<Tokenizer> load_tokenizer(const Checkpoint& ckpt) {
  if (const GgufFile* gguf = ckpt.gguf()) return load_gguf_tokenizer(*gguf);
  std::error_code ec;
  const auto& path = ckpt.path();
  const auto dir = std::filesystem::is_directory(path, ec) ? path : path.parent_path();
  const auto json_file = dir / "tokenizer.json";
  const auto sp_file = dir / "tokenizer.model";
  const bool has_json = has_tokenizer_file(json_file);
  const bool has_sp = has_tokenizer_file(sp_file);
  if (has_json) {
    // A SentencePiece-style tokenizer.json (Metaspace, byte fallback: Llama-2, Mistral)
    // is read from tokenizer.model when the folder has one.
    if (has_sp && !hf_tokenizer_json_is_byte_level(read_text_file(json_file), json_file.string())) {
      return load_sentencepiece(sp_file);
    }
    return load_hf_tokenizer_json(json_file);
  }
  if (has_sp) return load_sentencepiece(sp_file);
  fail("the model folder has no tokenizer (neither tokenizer.json nor tokenizer.model)", dir.string(),
       "copy the tokenizer files from the model's repository into the folder, or pass the prompt as "
       "token ids with --prompt-ids, which works without a tokenizer");
}

}  // namespace dak
