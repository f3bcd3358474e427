// Tokenizer: text <-> token ids, with BOS/EOS handling and chat templates.
//
// Implementations:
//   - byte-level BPE (GPT-2 style, HF tokenizers' ByteLevel + BPE model): vocabulary and
//     merges from GGUF metadata (tokenizer.ggml.model = "gpt2") or a HF tokenizer.json;
//     the pre-tokenizer regex comes from tokenizer.json's Split pattern, or for GGUF from
//     the known tokenizer.ggml.pre names (llama.cpp's llama-vocab.cpp list); run through PCRE2.
//   - SentencePiece (tokenizer.model, through libsentencepiece).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

namespace dak {

class Checkpoint;
class GgufFile;

struct ChatMessage {
  std::string role;     // "system", "user", "assistant"
  std::string content;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// Token ids of `text`. Special tokens written literally in the text (e.g. "<|im_start|>")
  /// map to their ids. With `allow_bos` (special tokens added, as Hugging Face's
  /// add_special_tokens): BOS first when add_bos() is true, then prefix_ids(), and suffix_ids() last.
  virtual std::vector<int32_t> encode(std::string_view text, bool allow_bos = true) const = 0;

  /// Text of a sequence of ids (byte-level pieces joined, then UTF-8). Special tokens are
  /// rendered as their text unless skip_special. The result is the raw bytes of the pieces:
  /// a sequence that ends inside a multi-byte character yields its first bytes (no U+FFFD),
  /// so a streamer can decode the prefix so far and print what is complete. Throws
  /// dak::Error for an id outside [0, vocab_size()).
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = false) const = 0;

  /// Ids 0 to vocab_size() - 1, added and special tokens included: one more than the largest id
  /// encode() can give.
  virtual int32_t vocab_size() const = 0;

  /// The tokens the file defines: vocab_size() unless its ids leave gaps (a tokenizer.json whose
  /// vocabulary has 256 entries, one of them id 999999, has 256 tokens and a vocab_size() of 1000000).
  virtual int64_t token_count() const { return vocab_size(); }

  /// The file it was read from (named in errors): a tokenizer.json, tokenizer.model or GGUF file.
  virtual const std::string& source() const = 0;

  int32_t bos_id() const { return bos_id_; }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  bool is_eos(int32_t id) const;
  bool add_bos() const { return add_bos_; }
  /// Special tokens encode() appends after the text when it adds special tokens (allow_bos): those a
  /// tokenizer.json post-processor puts after the sequence (TemplateProcessing, Roberta / Bert's
  /// sep), or EOS where add_eos_token is set (tokenizer_config.json, which decides where it says;
  /// GGUF tokenizer.ggml.add_eos_token, as llama.cpp's llama_tokenize(add_special)). Usually none.
  const std::vector<int32_t>& suffix_ids() const { return suffix_ids_; }
  /// Sets suffix_ids() (the loaders call it once; ids within the vocabulary).
  void set_suffix_ids(std::vector<int32_t> ids) { suffix_ids_ = std::move(ids); }
  /// Special tokens encode() puts before the text, after BOS, when it adds special tokens
  /// (allow_bos): those a tokenizer.json post-processor puts before the sequence after its first
  /// (TemplateProcessing's "[CLS] [X] $A", or a first special token of several ids). Usually none.
  const std::vector<int32_t>& prefix_ids() const { return prefix_ids_; }
  /// Sets prefix_ids() (the loaders call it once; ids within the vocabulary).
  void set_prefix_ids(std::vector<int32_t> ids) { prefix_ids_ = std::move(ids); }

  /// Notices about the files read (one line each, without "dak: notice: "), e.g. an end-of-generation
  /// id outside the vocabulary that was ignored; the CLI prints them.
  const std::vector<std::string>& notices() const { return notices_; }
  /// Adds a notice for notices() (the loaders call it); an empty one is skipped.
  void add_notice(std::string notice) {
    if (!notice.empty()) notices_.push_back(std::move(notice));
  }

  /// The model's chat template source (Jinja), if any.
  const std::optional<std::string>& chat_template() const { return chat_template_; }

  /// Where the chat template was read (named in errors): "<dir>/tokenizer_config.json: chat_template",
  /// "<dir>/chat_template.jinja" or "<file>.gguf: metadata tokenizer.chat_template"; "" without one.
  const std::string& chat_template_source() const { return chat_template_source_; }

  /// Renders messages with the model's chat template. Supported template families (detected
  /// from the template text): ChatML (<|im_start|>), Llama-2 ([INST]), Llama-3
  /// (<|start_header_id|>). Throws dak::Error for a model without a template or with an
  /// unsupported one (naming the file it came from and why dak cannot render it; says to drop
  /// --chat). The text contains the BOS token's text where the
  /// template writes bos_token (Llama-2/3), so encode it with allow_bos = false, as
  /// transformers' apply_chat_template(tokenize=True) does. Implemented in chat_template.cc.
  std::string apply_chat_template(std::span<const ChatMessage> messages,
                                  bool add_generation_prompt = true) const;

 protected:
  int32_t bos_id_ = -1;
  std::vector<int32_t> eos_ids_;
  bool add_bos_ = false;
  std::vector<int32_t> suffix_ids_;  // suffix_ids()
  std::vector<int32_t> prefix_ids_;  // prefix_ids()
  std::optional<std::string> chat_template_;
  std::string chat_template_source_;  // chat_template_source()
  std::vector<std::string> notices_;  // notices()
};

/// GGUF tokenizer.ggml.add_eos_token (llama.cpp's llama_vocab::get_add_eos): when true, sets
/// suffix_ids() of `tok` to {eos} with a notice. Throws dak::Error (naming `source` and the key)
/// when it is true and the file names no EOS (eos < 0).
void apply_gguf_add_eos(Tokenizer& tok, const GgufFile& gguf, int64_t eos, const std::string& source);

/// Tokenizer of a checkpoint: GGUF metadata, or tokenizer.json / tokenizer.model (and
/// tokenizer_config.json for BOS/EOS and the chat template) next to a HF checkpoint.
/// Throws dak::Error when none is found, when a tokenizer.json or tokenizer.model there is not a
/// regular file (a folder: named as such) or cannot be examined, or the vocabulary type is unsupported.
std::unique_ptr<Tokenizer> load_tokenizer(const Checkpoint& ckpt);

/// Whether `ckpt` comes with a tokenizer, usable or not: a GGUF file with the tokenizer.ggml.model
/// key, or a HF checkpoint with anything named tokenizer.json or tokenizer.model beside it (a folder
/// or a dangling link too). When it is false, load_tokenizer fails saying that there is none; when
/// true, it loads it or says what is wrong.
bool has_tokenizer(const Checkpoint& ckpt);

/// Throws dak::Error (where: the tokenizer's file) when `tok` can give ids the model has no embedding
/// row for: its vocabulary (added and special tokens included) is larger than `model_vocab`, the
/// model's vocab_size (the rows of its embedding). A smaller tokenizer is fine: many models pad the
/// embedding past the tokenizer's ids. `alternative`, when not empty, ends the fix ("pass the prompt
/// as token ids below N with --prompt-ids").
void check_tokenizer_fits_model(const Tokenizer& tok, int64_t model_vocab, const std::string& alternative = "");

/// Byte-level BPE from GGUF metadata (tokenizer.ggml.model == "gpt2").
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& gguf);

/// Byte-level BPE from a HF tokenizer.json (plus tokenizer_config.json beside it, if present).
std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::filesystem::path& tokenizer_json);

/// SentencePiece from a tokenizer.model file.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file);

}  // namespace dak
