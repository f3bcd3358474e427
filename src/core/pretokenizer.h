// Pre-tokenization for byte-level BPE: PCRE2 regex splitting, the GPT-2 byte <-> unicode
// alphabet, literal matching of added/special tokens, and the table of GGUF pre-tokenizer
// names (tokenizer.ggml.pre) with their split regexes.
//
// Semantics follow Hugging Face tokenizers (pre_tokenizers/{split,byte_level,digits,
// punctuation,whitespace,sequence}.rs): a pre-tokenizer is a sequence of steps, each step
// splits every current piece on its own (a regex never sees past a piece boundary), and the
// ByteLevel step maps bytes to GPT-2's printable alphabet so that the steps after it see the
// mapped text. The GGUF table follows llama.cpp (src/llama-vocab.cpp, llm_tokenizer_bpe),
// where each name stands for a list of regexes applied in turn with "isolated" behaviour;
// where llama.cpp rewrote a tokenizer.json regex for its own regex engine we use the
// tokenizer.json original, which PCRE2 runs as is.
//
// Regexes run through PCRE2 (8-bit, PCRE2_UTF | PCRE2_UCP, JIT when available), compiled
// once. Known difference to HF (Oniguruma): PCRE2's \s does not match U+0085 (NEL).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/utf8_text.h"  // find_invalid_utf8

namespace dak {

/// Throws dak::Error "<what> is not valid UTF-8 (byte N)" (N: offset of the first invalid byte,
/// from 0) naming `where`, with `fix`, when `text` is not valid UTF-8. Every Tokenizer::encode checks
/// its text so (where: the tokenizer file); a caller that knows where the text comes from (--prompt,
/// --system, a --file) checks it first to name that instead.
void check_utf8(std::string_view text, const std::string& what, const std::string& where, const std::string& fix);

/// A compiled PCRE2 pattern (8-bit code units, PCRE2_UTF | PCRE2_UCP, JIT-compiled when the
/// library supports it). Immutable after construction; matching is thread-safe (each
/// thread keeps its own match data and JIT stack).
class Regex {
 public:
  /// Compiles `pattern` (a literal string when `literal`). Throws dak::Error naming `where`
  /// (e.g. "tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex") and PCRE2's
  /// message and offset when it does not compile.
  Regex(std::string_view pattern, std::string where, bool literal = false);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  /// Byte ranges [begin, end) of the successive non-empty, non-overlapping matches in
  /// `text` (empty matches are skipped, as HF's splitting ignores them). `text` must be
  /// valid UTF-8 (callers check with find_invalid_utf8). Throws dak::Error when PCRE2
  /// gives up (match or depth limit hit by a pathological pattern).
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::string where_;
  void* code_ = nullptr;  // pcre2_code_8*
};

/// How a split step treats the matched ranges (HF SplitDelimiterBehavior).
enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

/// A pre-tokenizer: an ordered list of steps applied to every piece in turn.
class PreTokenizer {
 public:
  /// Adds a regex split step. With `invert`, the matches are the pieces to keep and the
  /// text between them the delimiters (HF Split.invert).
  void add_split(std::shared_ptr<const Regex> regex, SplitBehavior behavior, bool invert = false);
  /// Adds a ByteLevel step: optional prefix space (prepended to each piece that does not
  /// start with ' '), optional GPT-2 regex split (isolated), then every later step sees the
  /// byte-level mapped text (HF applies them to the mapped string).
  void add_byte_level(bool add_prefix_space, bool use_regex);

  bool has_byte_level() const { return byte_level_index_ >= 0; }
  bool empty() const { return steps_.empty(); }

  /// Words of `text` (raw UTF-8 bytes, byte-level mapping undone), in order. `text` must be
  /// valid UTF-8. Pieces are never empty; their concatenation is `text` unless a step
  /// removes delimiters or adds a prefix space.
  std::vector<std::string> split(std::string_view text) const;

 private:
  struct Step {
    std::shared_ptr<const Regex> regex;  // null: ByteLevel without regex
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    bool byte_level = false;             // this is the ByteLevel step
    bool add_prefix_space = false;       // ByteLevel only
  };
  std::vector<Step> steps_;
  int byte_level_index_ = -1;
};

/// The GPT-2 regex that HF's ByteLevel pre-tokenizer applies when use_regex is true.
std::shared_ptr<const Regex> gpt2_regex();

/// A GGUF pre-tokenizer (tokenizer.ggml.pre) resolved to its split steps.
struct GgufPreTokenizer {
  PreTokenizer pre;            // split regexes followed by a plain ByteLevel step
  bool ignore_merges = false;  // llama.cpp sets this for llama3 and tekken (whole word in vocab wins)
  bool add_bos = false;        // llama.cpp's default add_bos for this name (tokenizer.ggml.add_bos_token overrides)
};

/// Resolves `name` ("smollm", "llama-bpe", "qwen2", ...; "default" when the key is absent).
/// Throws dak::Error naming `where` and listing known_gguf_pre_names() for an unknown name.
GgufPreTokenizer gguf_pre_tokenizer(std::string_view name, const std::string& where);

/// The names gguf_pre_tokenizer accepts, sorted.
std::vector<std::string> known_gguf_pre_names();

/// GPT-2's byte-level alphabet (openai/gpt-2 encoder.py bytes_to_unicode): the UTF-8 text
/// of the printable character standing for each byte.
const std::array<std::string, 256>& byte_level_alphabet();

/// Raw bytes of a byte-level string, or nullopt when a character is outside the alphabet.
std::optional<std::string> byte_level_decode(std::string_view byte_level_text);

/// Byte-level string of raw bytes (each byte becomes one alphabet character).
std::string byte_level_encode(std::string_view raw);

/// Literal matching of added / special tokens, done on the raw text before any
/// normalization or pre-tokenization (HF AddedVocabulary, llama.cpp tokenizer_st_partition).
/// At each position the longest token wins; scanning is left to right. HF's single_word and
/// normalized flags are not applied (no model dak reads depends on them).
class AddedTokenMatcher {
 public:
  struct Token {
    std::string content;
    int32_t id = -1;
    bool lstrip = false;  // also swallow the whitespace on the left
    bool rstrip = false;  // also swallow the whitespace on the right
  };
  /// A piece of the text: either plain text (id < 0) or one matched token.
  struct Segment {
    std::string_view text;
    int32_t id = -1;
  };

  /// Adds a token (empty or invalid UTF-8 content is ignored; a duplicate content keeps the
  /// first id).
  void add(Token token);
  bool empty() const { return tokens_.empty(); }

  std::vector<Segment> split(std::string_view text) const;

 private:
  std::vector<Token> tokens_;
  std::unordered_set<std::string> contents_;
  // first byte -> indices into tokens_, longest content first
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

}  // namespace dak
