// Byte-level BPE (GPT-2 / HF tokenizers ByteLevel + BPE model).
//
// encode(text): (1) added/special tokens written literally are split out and map to their
// ids; (2) each remaining piece goes through the normalizer and the pre-tokenizer
// (pretokenizer.h) into words; (3) each word's bytes start as one symbol per byte (the
// vocabulary entry of that byte's GPT-2 alphabet character) and the adjacent pair of lowest
// merge rank is merged until no pair has a rank (HF tokenizers models/bpe/word.rs
// merge_all: a min-heap on (rank, position)); results are cached per word.
// decode(ids): each id's bytes (byte-level text mapped back to bytes; added tokens
// literally) concatenated. The result is raw bytes: a sequence cut inside a multi-byte
// character decodes to the bytes it has (no replacement character), so decoding the
// prefixes of a generation and printing what was added streams valid text.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/pretokenizer.h"
#include "core/tokenizer_config.h"
#include "core/tokenizer.h"

namespace dak {

/// Text normalizers that dak applies before pre-tokenization (HF normalizers/*.rs):
/// Prepend, Replace (literal string pattern) and NFC. NFC is applied as a check only: dak
/// has no Unicode composition tables, so text that NFC could change (combining marks,
/// conjoining jamo, NFC singletons) is rejected with dak::Error; all other text is
/// already NFC and passes unchanged.
class Normalizer {
 public:
  void add_prepend(std::string prefix);
  void add_replace(std::string pattern, std::string content);
  void add_nfc();
  bool empty() const { return steps_.empty(); }

  /// Normalized text. Throws dak::Error naming `source` for text NFC would change.
  std::string apply(std::string_view text, const std::string& source) const;

 private:
  struct Step {
    enum class Kind { kPrepend, kReplace, kNfc } kind;
    std::string a, b;
  };
  std::vector<Step> steps_;
};

/// How a vocabulary entry is stored and treated.
enum class BpeTokenKind : uint8_t {
  kNormal,   // byte-level text, reached by merges
  kSpecial,  // literal text; control/special: matched in text, dropped by decode(skip_special)
  kAdded,    // literal text; user-defined/added non-special: matched in text, always decoded
};

/// Everything a BpeTokenizer is built from (filled by the GGUF and tokenizer.json loaders).
struct BpeSpec {
  std::string source;                                      // file named in errors
  std::string merges_field;                                // e.g. "model.merges"
  std::vector<std::string> tokens;                         // id -> text (see BpeTokenKind)
  std::vector<BpeTokenKind> kinds;                         // id -> kind, same size as tokens
  std::vector<std::pair<std::string, std::string>> merges; // by rank, byte-level text
  std::vector<AddedTokenMatcher::Token> added;             // matched literally in text
  PreTokenizer pre;
  Normalizer normalizer;
  bool ignore_merges = false;  // a word that is itself in the vocabulary is one token
  bool byte_fallback = false;  // a byte missing from the alphabet tokens maps to "<0xXX>" if present
  int32_t unk_id = -1;         // for a byte missing from the vocabulary (else dropped, as HF)
  int64_t token_count = -1;    // ids the file defines, where they leave gaps in `tokens`; -1: tokens.size()
};

class BpeTokenizer final : public Tokenizer {
 public:
  /// Builds the merge table. Throws dak::Error naming spec.source and merges_field[i] when
  /// merge i names a token that is not in the vocabulary or its result is not either.
  explicit BpeTokenizer(BpeSpec spec);

  std::vector<int32_t> encode(std::string_view text, bool allow_bos = true) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  int64_t token_count() const override { return token_count_ >= 0 ? token_count_ : int64_t(tokens_.size()); }
  const std::string& source() const override { return source_; }

  /// Id of a token given by its vocabulary text (byte-level text for normal tokens,
  /// content for added ones); nullopt when absent.
  std::optional<int32_t> token_id(std::string_view text) const;

  /// Sets BOS, EOS ids, add_bos and the chat template with where it was read (chat_template_source();
  /// the loaders call it once).
  void set_specials(int32_t bos_id, std::vector<int32_t> eos_ids, bool add_bos,
                    std::optional<std::string> chat_template, std::string chat_template_source = "");

 private:
  void encode_word(const std::string& word, std::vector<int32_t>& out) const;

  struct Merge {
    int32_t rank;
    int32_t id;  // the merged token
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  std::string source_;
  std::vector<std::string> tokens_;
  std::vector<std::string> token_bytes_;  // id -> raw bytes for decode
  std::vector<BpeTokenKind> kinds_;
  std::unordered_map<std::string, int32_t> text_to_id_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_ids_{};   // byte -> id of its alphabet character, -1 if absent
  AddedTokenMatcher added_;
  PreTokenizer pre_;
  Normalizer normalizer_;
  bool ignore_merges_ = false;
  int32_t unk_id_ = -1;
  int64_t token_count_ = -1;  // BpeSpec::token_count

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

/// Builds a tokenizer from tokenizer.json text (HF tokenizers serialization; BPE model
/// with a ByteLevel pre-tokenizer) and what tokenizer_config.json / generation_config.json /
/// chat_template.jinja say (`cfg`; BOS also from a TemplateProcessing post-processor when
/// the config names none). Works from memory (the fuzz target uses it); `source` names the
/// file in errors. Throws dak::Error naming the file and field for invalid JSON, a missing
/// model.vocab, two tokens of model.vocab with one id (naming both and the id), merges that
/// reference unknown tokens, an unsupported model type (WordPiece,
/// Unigram, WordLevel), normalizer or pre-tokenizer.
std::unique_ptr<Tokenizer> parse_hf_tokenizer_json(std::string_view json_text, const std::string& source,
                                                   const HfTokenizerConfig& cfg = {});

/// True when tokenizer.json text describes a byte-level BPE (its pre-tokenizer contains a
/// ByteLevel step). False for Metaspace/SentencePiece-style BPE; throws on invalid JSON.
bool hf_tokenizer_json_is_byte_level(std::string_view json_text, const std::string& source);

}  // namespace dak
