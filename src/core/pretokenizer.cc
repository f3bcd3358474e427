#include "core/pretokenizer.h"

#include <pcre2.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "core/error.h"

namespace dak {

namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t utf8_char_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  return 4;
}

// Per-thread PCRE2 match state: match data for the overall match only (capture groups are
// not needed), a match context with limits, and a JIT stack larger than the 32 KB default
// so that long runs of whitespace do not exhaust it.
struct MatchScratch {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  MatchScratch() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    if (context && jit_stack) pcre2_jit_stack_assign(context, nullptr, jit_stack);
    if (context) pcre2_set_match_limit(context, 10'000'000);
  }
  ~MatchScratch() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    if (jit_stack) pcre2_jit_stack_free(jit_stack);
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(code, buf, sizeof(buf));
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf));
}

}  // namespace

void check_utf8(std::string_view text, const std::string& what, const std::string& where, const std::string& fix) {
  if (auto bad = find_invalid_utf8(text)) {
    fail(what + " is not valid UTF-8 (byte " + std::to_string(*bad) + ")", where, fix);
  }
}

// ---------------------------------------------------------------- Regex

Regex::Regex(std::string_view pattern, std::string where, bool literal)
    : pattern_(pattern), where_(std::move(where)) {
  check_utf8(pattern, "pattern", where_, "fix the pattern in the tokenizer file");
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  // PCRE2_LITERAL refuses PCRE2_UCP (it has no character classes to apply it to).
  const uint32_t options = PCRE2_UTF | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                                   options, &err, &err_offset, nullptr);
  if (!code) {
    fail("regex does not compile: " + pcre2_message(err) + " at offset " +
             std::to_string(err_offset) + " of '" + pattern_ + "'",
         where_, "fix the pattern, or use a tokenizer whose pre-tokenizer dak supports");
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is absent
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  MatchScratch& s = scratch();
  if (!s.data || !s.context) fail("out of memory creating PCRE2 match data", where_, "");
  auto* code = static_cast<pcre2_code*>(code_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    int rc = pcre2_match(code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK, s.data, s.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      fail("regex matching failed: " + pcre2_message(rc) + " (pattern '" + pattern_ + "')", where_,
           "the pattern backtracks too much on this text; split the text or use another tokenizer");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
    size_t b = ov[0], e = ov[1];
    if (e > b) {
      out.emplace_back(b, e);
      offset = e;
    } else {
      // Empty match: step over one character.
      offset = b + utf8_char_len(static_cast<unsigned char>(text[b]));
    }
  }
  return out;
}

// ---------------------------------------------------------------- byte-level alphabet

const std::array<std::string, 256>& byte_level_alphabet() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      append_utf8(t[b], printable(b) ? static_cast<uint32_t>(b) : next++);
    }
    return t;
  }();
  return table;
}

namespace {
// Code point -> byte for the alphabet (code points are all < 324).
const std::array<int16_t, 324>& byte_level_inverse() {
  static const std::array<int16_t, 324> inv = [] {
    std::array<int16_t, 324> t;
    t.fill(-1);
    const auto& alpha = byte_level_alphabet();
    for (int b = 0; b < 256; ++b) {
      const auto* p = reinterpret_cast<const unsigned char*>(alpha[b].data());
      uint32_t cp = alpha[b].size() == 1 ? p[0] : (((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu));
      t[cp] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return inv;
}
}  // namespace

std::optional<std::string> byte_level_decode(std::string_view s) {
  const auto& inv = byte_level_inverse();
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    uint32_t cp;
    if (p[i] < 0x80) {
      cp = p[i];
      i += 1;
    } else if ((p[i] >> 5) == 0x6 && i + 1 < s.size() && (p[i + 1] & 0xC0) == 0x80) {
      cp = ((p[i] & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu);
      i += 2;
    } else {
      return std::nullopt;
    }
    if (cp >= inv.size() || inv[cp] < 0) return std::nullopt;
    out += static_cast<char>(inv[cp]);
  }
  return out;
}

std::string byte_level_encode(std::string_view raw) {
  const auto& alpha = byte_level_alphabet();
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) out += alpha[c];
  return out;
}

// ---------------------------------------------------------------- PreTokenizer

void PreTokenizer::add_split(std::shared_ptr<const Regex> regex, SplitBehavior behavior, bool invert) {
  Step s;
  s.regex = std::move(regex);
  s.behavior = behavior;
  s.invert = invert;
  steps_.push_back(std::move(s));
}

void PreTokenizer::add_byte_level(bool add_prefix_space, bool use_regex) {
  Step s;
  s.byte_level = true;
  s.add_prefix_space = add_prefix_space;
  if (use_regex) s.regex = gpt2_regex();
  if (byte_level_index_ < 0) byte_level_index_ = static_cast<int>(steps_.size());
  steps_.push_back(std::move(s));
}

namespace {

// Splits `n` bytes given the sorted match ranges, following HF's
// NormalizedString::split for each SplitDelimiterBehavior.
std::vector<std::pair<size_t, size_t>> apply_behavior(size_t n,
                                                      const std::vector<std::pair<size_t, size_t>>& matches,
                                                      SplitBehavior behavior, bool invert) {
  struct Span { size_t b, e; bool is_match; };
  std::vector<Span> spans;
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (b > prev) spans.push_back({prev, b, invert});
    spans.push_back({b, e, !invert});
    prev = e;
  }
  if (prev < n) spans.push_back({prev, n, invert});

  std::vector<std::pair<size_t, size_t>> out;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const auto& s : spans) out.emplace_back(s.b, s.e);
      break;
    case SplitBehavior::kRemoved:
      for (const auto& s : spans) if (!s.is_match) out.emplace_back(s.b, s.e);
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const auto& s : spans) {
        if (s.is_match && !previous_match && !out.empty()) out.back().second = s.e;
        else out.emplace_back(s.b, s.e);
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) out.back().first = it->b;
        else out.emplace_back(it->b, it->e);
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const auto& s : spans) {
        if (s.is_match == previous_match && !out.empty()) out.back().second = s.e;
        else out.emplace_back(s.b, s.e);
        previous_match = s.is_match;
      }
      break;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string> pieces;
  if (text.empty()) return pieces;
  pieces.emplace_back(text);
  const auto& alpha = byte_level_alphabet();
  bool mapped = false;  // a ByteLevel step ran: later steps see the byte-level text
  for (const Step& step : steps_) {
    std::vector<std::string> next;
    next.reserve(pieces.size() * 2);
    for (std::string& piece : pieces) {
      if (step.byte_level && step.add_prefix_space && piece.front() != ' ') piece.insert(0, 1, ' ');
      if (!step.regex) {
        next.push_back(std::move(piece));
        continue;
      }
      std::vector<std::pair<size_t, size_t>> ranges;
      if (!mapped) {
        ranges = apply_behavior(piece.size(), step.regex->find_all(piece), step.behavior, step.invert);
      } else {
        // Match on the mapped text, then map the ranges back to raw byte offsets.
        std::string enc;
        std::vector<int32_t> raw_at(piece.size() * 2 + 1, -1);
        for (size_t i = 0; i < piece.size(); ++i) {
          raw_at[enc.size()] = static_cast<int32_t>(i);
          enc += alpha[static_cast<unsigned char>(piece[i])];
        }
        raw_at[enc.size()] = static_cast<int32_t>(piece.size());
        auto enc_ranges = apply_behavior(enc.size(), step.regex->find_all(enc), step.behavior, step.invert);
        for (auto [b, e] : enc_ranges) ranges.emplace_back(raw_at[b], raw_at[e]);
      }
      for (auto [b, e] : ranges) {
        if (e > b) next.emplace_back(piece, b, e - b);
      }
    }
    pieces = std::move(next);
    if (step.byte_level) mapped = true;
    if (pieces.empty()) break;
  }
  return pieces;
}

std::shared_ptr<const Regex> gpt2_regex() {
  static const auto re = std::make_shared<const Regex>(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
      "ByteLevel pre-tokenizer (GPT-2 regex)");
  return re;
}

// ---------------------------------------------------------------- GGUF pre-tokenizer table

namespace {

// Regexes of llama.cpp's pre-tokenizer types (src/llama-vocab.cpp, llm_tokenizer_bpe), with
// the tokenizer.json originals where llama.cpp adapted one to its own engine. Non-ASCII
// characters are written as PCRE2 \x{...} escapes so that no editor or tool can change them
// by Unicode normalization (several ranges end on NFC singletons such as U+1FD3, U+212A).
constexpr const char* kReLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kReQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kReGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kReTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kReGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kReBloom = R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)";
constexpr const char* kReDeepseekV3 =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kReDeepseekLlmLetters =
    R"(\s?[A-Za-z\x{00B5}\x{00C0}-\x{00D6}\x{00D8}-\x{00F6}\x{00F8}-\x{01BA}\x{01BC}-\x{01BF})"
    R"(\x{01C4}-\x{0293}\x{0295}-\x{02AF}\x{0370}-\x{0373}\x{0376}\x{0377}\x{037B}-\x{037D})"
    R"(\x{037F}\x{0386}\x{0388}-\x{038A}\x{038C}\x{038E}-\x{03A1}\x{03A3}-\x{03F5})"
    R"(\x{03F7}-\x{0481}\x{048A}-\x{052F}\x{0531}-\x{0556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})"
    R"(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77})"
    R"(\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D})"
    R"(\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4})"
    R"(\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3})"
    R"(\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})"
    R"(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})"
    R"(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})"
    R"(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF})"
    R"(\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})"
    R"(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
    R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";

struct PreSpec {
  std::vector<const char*> regexes;  // applied in turn, isolated
  bool ignore_merges = false;
  bool add_bos = false;
};

const std::map<std::string, PreSpec, std::less<>>& pre_table() {
  static const std::map<std::string, PreSpec, std::less<>> table = [] {
    std::map<std::string, PreSpec, std::less<>> t;
    auto add = [&t](std::initializer_list<const char*> names, PreSpec spec) {
      for (const char* n : names) t.emplace(n, spec);
    };
    // llama.cpp's fallback for a missing or unknown name.
    add({"default"}, {{R"([\p{P}\$\+<=>\^~\|]+)", kReGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}});
    add({"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "jina-es", "jina-de", "jina-v2-es",
         "jina-v2-de", "exaone4", "mellum", "gigachat", "a.x-4.0"},
        {{kReGpt2}});
    add({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
        {{kReLlama3}, /*ignore_merges=*/true, /*add_bos=*/true});
    add({"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {{kReLlama3}});
    add({"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "kormo"}, {{kReQwen2}});
    add({"starcoder", "smollm", "refact", "command-r", "codeshell", "exaone", "minerva-7b"},
        {{R"(\p{N})", kReGpt2}});
    add({"falcon"}, {{R"([\p{P}\$\+<=>\^~\|`]+)", kReGpt2, "[0-9][0-9][0-9]"}});
    add({"deepseek-llm"},
        {{R"([\r\n])", kReDeepseekLlmLetters, R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)", R"(\s+$)",
          R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)", R"(\p{N}+)"}});
    add({"deepseek-coder"},
        {{R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)", R"(\p{N})"}});
    add({"deepseek-v3"}, {{R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)", kReDeepseekV3}});
    add({"gpt-4o", "llama4"}, {{kReGpt4o}});
    add({"tekken"}, {{kReTekken}, /*ignore_merges=*/true, /*add_bos=*/true});
    add({"poro-chat", "bloom", "gpt3-finnish"}, {{kReBloom}});
    add({"viking"}, {{kReBloom, R"(\p{N})"}});
    return t;
  }();
  return table;
}

}  // namespace

std::vector<std::string> known_gguf_pre_names() {
  std::vector<std::string> names;
  for (const auto& [name, spec] : pre_table()) names.push_back(name);
  return names;
}

GgufPreTokenizer gguf_pre_tokenizer(std::string_view name, const std::string& where) {
  const auto& table = pre_table();
  auto it = table.find(name);
  if (it == table.end()) {
    std::string known;
    for (const auto& [n, spec] : table) known += (known.empty() ? "" : ", ") + n;
    fail("unknown BPE pre-tokenizer '" + std::string(name) + "'", where,
         "dak knows: " + known + ". Use the model's HF folder (tokenizer.json) instead, or "
         "pass the prompt as ids with --prompt-ids");
  }
  // Compiled regexes are shared between names and loads.
  static std::map<std::string, std::shared_ptr<const Regex>, std::less<>> cache;
  static std::mutex mu;
  GgufPreTokenizer out;
  for (const char* re : it->second.regexes) {
    std::shared_ptr<const Regex> compiled;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto c = cache.find(re);
      if (c == cache.end()) {
        c = cache.emplace(re, std::make_shared<const Regex>(re, where + " ('" + std::string(name) + "')")).first;
      }
      compiled = c->second;
    }
    out.pre.add_split(std::move(compiled), SplitBehavior::kIsolated);
  }
  out.pre.add_byte_level(/*add_prefix_space=*/false, /*use_regex=*/false);
  out.ignore_merges = it->second.ignore_merges;
  out.add_bos = it->second.add_bos;
  return out;
}

// ---------------------------------------------------------------- AddedTokenMatcher

void AddedTokenMatcher::add(Token token) {
  // Invalid UTF-8 content could match part of a character and leave invalid text around it.
  if (token.content.empty() || find_invalid_utf8(token.content)) return;
  if (!contents_.insert(token.content).second) return;
  const auto idx = static_cast<uint32_t>(tokens_.size());
  auto& bucket = by_first_byte_[static_cast<unsigned char>(token.content[0])];
  const size_t len = token.content.size();
  tokens_.push_back(std::move(token));
  // Keep the bucket ordered longest first (ties in insertion order).
  auto pos = std::upper_bound(bucket.begin(), bucket.end(), len,
                              [this](size_t l, uint32_t i) { return l > tokens_[i].content.size(); });
  bucket.insert(pos, idx);
}

namespace {
bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
}  // namespace

std::vector<AddedTokenMatcher::Segment> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Segment> out;
  size_t pending = 0;  // start of the plain text not yet emitted
  size_t i = 0;
  while (i < text.size()) {
    const Token* hit = nullptr;
    for (uint32_t idx : by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const Token& t = tokens_[idx];
      if (t.content.size() <= text.size() - i && std::memcmp(text.data() + i, t.content.data(), t.content.size()) == 0) {
        hit = &t;
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    size_t b = i, e = i + hit->content.size();
    if (hit->lstrip) while (b > pending && is_ascii_space(text[b - 1])) --b;
    if (hit->rstrip) while (e < text.size() && is_ascii_space(text[e])) ++e;
    if (b > pending) out.push_back({text.substr(pending, b - pending), -1});
    out.push_back({text.substr(b, e - b), hit->id});
    pending = i = e;
  }
  if (pending < text.size()) out.push_back({text.substr(pending), -1});
  return out;
}

}  // namespace dak
