#include "core/bpe_tokenizer.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <queue>

#include "core/error.h"
#include "core/gguf.h"
#include "core/json_file.h"
#include "core/sentencepiece_tokenizer.h"
#include "core/tokenizer_config.h"

namespace dak {

// ---------------------------------------------------------------- Normalizer

void Normalizer::add_prepend(std::string prefix) { steps_.push_back({Step::Kind::kPrepend, std::move(prefix), {}}); }

void Normalizer::add_replace(std::string pattern, std::string content) {
  steps_.push_back({Step::Kind::kReplace, std::move(pattern), std::move(content)});
}

void Normalizer::add_nfc() { steps_.push_back({Step::Kind::kNfc, {}, {}}); }

namespace {

// Characters that NFC may change or compose (Unicode NFC_Quick_Check = No or Maybe):
// combining marks, conjoining Hangul jamo and the NFC singletons / exclusions. Text free of
// them is invariant under NFC. Ranges are widened to whole blocks where that is simpler.
const Regex& nfc_unsafe_regex() {
  static const Regex re(
      R"([\p{M}\x{1100}-\x{11FF}\x{0340}-\x{0344}\x{0374}\x{037E}\x{0387}\x{0958}-\x{095F})"
      R"(\x{09DC}-\x{09DF}\x{0A33}-\x{0A36}\x{0A59}-\x{0A5E}\x{0B5C}-\x{0B5D}\x{0F43}-\x{0FB9})"
      R"(\x{1F71}-\x{1FFD}\x{2000}-\x{2001}\x{2126}-\x{212B}\x{2329}-\x{232A}\x{2ADC})"
      R"(\x{F900}-\x{FAFF}\x{FB1D}-\x{FB4E}\x{1D15E}-\x{1D1C0}\x{2F800}-\x{2FA1F}])",
      "NFC normalizer check");
  return re;
}

}  // namespace

std::string Normalizer::apply(std::string_view text, const std::string& source) const {
  std::string s(text);
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::kPrepend:
        if (!s.empty()) s.insert(0, step.a);
        break;
      case Step::Kind::kReplace: {
        if (step.a.empty()) break;
        std::string r;
        size_t pos = 0;
        for (size_t hit; (hit = s.find(step.a, pos)) != std::string::npos; pos = hit + step.a.size()) {
          r.append(s, pos, hit - pos);
          r += step.b;
        }
        r.append(s, pos);
        s = std::move(r);
        break;
      }
      case Step::Kind::kNfc: {
        auto hits = nfc_unsafe_regex().find_all(s);
        if (!hits.empty()) {
          fail("the text has characters that Unicode NFC normalization may change (byte " +
                   std::to_string(hits[0].first) + "), and dak does not implement NFC",
               source + ": normalizer (NFC)",
               "NFC-normalize the text before passing it (e.g. python unicodedata.normalize), or pass "
               "token ids with --prompt-ids");
        }
        break;
      }
    }
  }
  return s;
}

// ---------------------------------------------------------------- BpeTokenizer

BpeTokenizer::BpeTokenizer(BpeSpec spec)
    : source_(std::move(spec.source)),
      tokens_(std::move(spec.tokens)),
      kinds_(std::move(spec.kinds)),
      pre_(std::move(spec.pre)),
      normalizer_(std::move(spec.normalizer)),
      ignore_merges_(spec.ignore_merges),
      unk_id_(spec.unk_id),
      token_count_(spec.token_count) {
  kinds_.resize(tokens_.size(), BpeTokenKind::kNormal);
  token_bytes_.resize(tokens_.size());
  text_to_id_.reserve(tokens_.size() * 2);
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const std::string& t = tokens_[id];
    if (kinds_[id] == BpeTokenKind::kNormal) {
      auto raw = byte_level_decode(t);
      token_bytes_[id] = raw ? std::move(*raw) : t;  // outside the alphabet: its UTF-8 as is (HF)
    } else {
      token_bytes_[id] = t;
    }
    if (!t.empty()) text_to_id_.emplace(t, static_cast<int32_t>(id));
  }
  const auto& alpha = byte_level_alphabet();
  for (int b = 0; b < 256; ++b) {
    auto it = text_to_id_.find(alpha[b]);
    byte_ids_[b] = (it != text_to_id_.end() && kinds_[it->second] == BpeTokenKind::kNormal) ? it->second : -1;
    if (byte_ids_[b] < 0 && spec.byte_fallback) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      const std::string piece = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
      if (auto f = text_to_id_.find(piece); f != text_to_id_.end()) byte_ids_[b] = f->second;
    }
  }
  merges_.reserve(spec.merges.size() * 2);
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [a, b] = spec.merges[rank];
    const std::string where = source_ + ": " + spec.merges_field + "[" + std::to_string(rank) + "]";
    auto ia = text_to_id_.find(a);
    auto ib = text_to_id_.find(b);
    if (ia == text_to_id_.end() || ib == text_to_id_.end()) {
      fail("merge '" + a + " " + b + "' references token '" + (ia == text_to_id_.end() ? a : b) +
               "', which is not in the vocabulary",
           where, "the merges do not belong to this vocabulary; restore the tokenizer file");
    }
    auto im = text_to_id_.find(a + b);
    if (im == text_to_id_.end()) {
      fail("merge '" + a + " " + b + "' produces '" + a + b + "', which is not in the vocabulary", where,
           "the merges do not belong to this vocabulary; restore the tokenizer file");
    }
    merges_.emplace(pair_key(ia->second, ib->second), Merge{static_cast<int32_t>(rank), im->second});
  }
  for (auto& t : spec.added) {
    if (t.id >= 0 && t.id < static_cast<int32_t>(tokens_.size())) added_.add(std::move(t));
  }
}

void BpeTokenizer::set_specials(int32_t bos_id, std::vector<int32_t> eos_ids, bool add_bos,
                                std::optional<std::string> chat_template, std::string chat_template_source) {
  bos_id_ = bos_id;
  eos_ids_ = std::move(eos_ids);
  add_bos_ = add_bos && bos_id >= 0;
  chat_template_source_ = chat_template ? std::move(chat_template_source) : std::string();
  chat_template_ = std::move(chat_template);
}

std::optional<int32_t> BpeTokenizer::token_id(std::string_view text) const {
  auto it = text_to_id_.find(std::string(text));
  if (it == text_to_id_.end()) return std::nullopt;
  return it->second;
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<int32_t>& out) const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  bool done = false;
  if (ignore_merges_) {
    auto it = text_to_id_.find(byte_level_encode(word));
    if (it != text_to_id_.end() && kinds_[it->second] == BpeTokenKind::kNormal) {
      ids.push_back(it->second);
      done = true;
    }
  }
  if (!done) {
    struct Symbol {
      int32_t id;
      int32_t prev, next;
    };
    std::vector<Symbol> sym;
    sym.reserve(word.size());
    for (unsigned char c : word) {
      int32_t id = byte_ids_[c] >= 0 ? byte_ids_[c] : unk_id_;
      if (id < 0) continue;  // no token for this byte and no unknown token: dropped, as HF does
      const auto i = static_cast<int32_t>(sym.size());
      sym.push_back({id, i - 1, -1});
      if (i > 0) sym[i - 1].next = i;
    }
    struct Candidate {
      int32_t rank, pos, left, right, merged;
      bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto push_pair = [&](int32_t pos) {
      const int32_t next = sym[pos].next;
      if (next < 0) return;
      auto it = merges_.find(pair_key(sym[pos].id, sym[next].id));
      if (it != merges_.end()) heap.push({it->second.rank, pos, sym[pos].id, sym[next].id, it->second.id});
    };
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym.size()); ++i) push_pair(i);
    while (!heap.empty()) {
      const Candidate c = heap.top();
      heap.pop();
      Symbol& left = sym[c.pos];
      if (left.id != c.left || left.next < 0 || sym[left.next].id != c.right) continue;  // stale
      const int32_t right = left.next;
      left.id = c.merged;
      left.next = sym[right].next;
      if (left.next >= 0) sym[left.next].prev = c.pos;
      sym[right].id = -1;
      if (left.prev >= 0) push_pair(left.prev);
      push_pair(c.pos);
    }
    for (int32_t i = sym.empty() ? -1 : 0; i >= 0; i = sym[i].next) ids.push_back(sym[i].id);
  }
  out.insert(out.end(), ids.begin(), ids.end());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() >= (1u << 18)) cache_.clear();
  cache_.emplace(word, std::move(ids));
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool allow_bos) const {
  check_utf8(text, "the text to encode", source_, "pass UTF-8 text, or token ids with --prompt-ids");
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (allow_bos && add_bos_ && bos_id_ >= 0) ids.push_back(bos_id_);
  if (allow_bos) ids.insert(ids.end(), prefix_ids_.begin(), prefix_ids_.end());
  for (const auto& seg : added_.split(text)) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    std::string normalized = normalizer_.empty() ? std::string(seg.text) : normalizer_.apply(seg.text, source_);
    for (const std::string& word : pre_.split(normalized)) encode_word(word, ids);
  }
  if (allow_bos) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      fail("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")",
           source_, "pass ids produced by this model's tokenizer");
    }
    if (skip_special && kinds_[id] == BpeTokenKind::kSpecial) continue;
    out += token_bytes_[id];
  }
  return out;
}

// ---------------------------------------------------------------- tokenizer.json

namespace {

using nlohmann::json;

constexpr int64_t kMaxVocab = 1 << 21;  // 2M ids; the largest real vocabularies have ~256K
constexpr int kMaxNesting = 16;         // Sequence inside Sequence ...

[[noreturn]] void bad_field(const std::string& source, const std::string& field, const std::string& what,
                            const std::string& fix = "restore the tokenizer files from the model's repository") {
  fail(what, source + ": " + field, fix);
}

json parse_tokenizer_json(std::string_view text, const std::string& source) {
  return dak::parse_json_text(std::string(text), "tokenizer file", source,
                              "restore the file from the model's repository");
}

bool get_bool(const json& obj, const char* key, bool fallback, const std::string& source, const std::string& field) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) bad_field(source, field + "." + key, "expected true or false");
  return it->get<bool>();
}

std::string get_string(const json& obj, const char* key, const std::string& source, const std::string& field) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) bad_field(source, field + "." + key, "missing or not a string");
  return it->get<std::string>();
}

// {"String": "..."} or {"Regex": "..."} -> compiled pattern.
std::shared_ptr<const Regex> get_pattern(const json& obj, const std::string& source, const std::string& field) {
  auto it = obj.find("pattern");
  if (it == obj.end() || !it->is_object()) bad_field(source, field + ".pattern", "missing or not an object");
  if (auto s = it->find("String"); s != it->end() && s->is_string()) {
    return std::make_shared<const Regex>(s->get<std::string>(), source + ": " + field + ".pattern.String", true);
  }
  if (auto r = it->find("Regex"); r != it->end() && r->is_string()) {
    return std::make_shared<const Regex>(r->get<std::string>(), source + ": " + field + ".pattern.Regex");
  }
  bad_field(source, field + ".pattern", "expected {\"String\": ...} or {\"Regex\": ...}");
}

SplitBehavior get_behavior(const json& obj, const std::string& source, const std::string& field) {
  auto it = obj.find("behavior");
  if (it == obj.end() || it->is_null()) return SplitBehavior::kIsolated;
  const std::string b = it->is_string() ? it->get<std::string>() : "";
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  bad_field(source, field + ".behavior", "unknown split behavior '" + b + "'");
}

const std::string kUnsupportedTokenizerFix =
    "dak reads byte-level BPE tokenizer.json files and SentencePiece tokenizer.model files; "
    "pass token ids with --prompt-ids to run without a tokenizer";

void build_pre_tokenizer(const json& j, const std::string& source, const std::string& field, PreTokenizer& pre,
                         int depth = 0) {
  if (j.is_null()) return;
  if (depth > kMaxNesting) bad_field(source, field, "nested too deeply");
  if (!j.is_object()) bad_field(source, field, "expected an object or null");
  const std::string type = get_string(j, "type", source, field);
  if (type == "Sequence") {
    auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) bad_field(source, field + ".pretokenizers", "missing or not a list");
    for (size_t i = 0; i < it->size(); ++i) {
      build_pre_tokenizer((*it)[i], source, field + ".pretokenizers[" + std::to_string(i) + "]", pre, depth + 1);
    }
  } else if (type == "Split") {
    pre.add_split(get_pattern(j, source, field), get_behavior(j, source, field),
                  get_bool(j, "invert", false, source, field));
  } else if (type == "ByteLevel") {
    pre.add_byte_level(get_bool(j, "add_prefix_space", false, source, field),
                       get_bool(j, "use_regex", true, source, field));
  } else if (type == "Digits") {
    const bool individual = get_bool(j, "individual_digits", false, source, field);
    pre.add_split(std::make_shared<const Regex>(individual ? R"(\p{N})" : R"(\p{N}+)", source + ": " + field),
                  SplitBehavior::kIsolated);
  } else if (type == "Punctuation") {
    pre.add_split(std::make_shared<const Regex>(R"([\p{P}!-/:-@\[-`{-~])", source + ": " + field),
                  get_behavior(j, source, field));
  } else if (type == "Whitespace") {
    pre.add_split(std::make_shared<const Regex>(R"([\p{L}\p{N}\p{M}\p{Pc}\x{200C}\x{200D}]+|[^\p{L}\p{N}\p{M}\p{Pc}\x{200C}\x{200D}\s]+)",
                                                source + ": " + field),
                  SplitBehavior::kRemoved, /*invert=*/true);
  } else if (type == "WhitespaceSplit") {
    pre.add_split(std::make_shared<const Regex>(R"(\s+)", source + ": " + field), SplitBehavior::kRemoved);
  } else {
    bad_field(source, field + ".type", "unsupported pre-tokenizer '" + type + "'", kUnsupportedTokenizerFix);
  }
}

void build_normalizer(const json& j, const std::string& source, const std::string& field, Normalizer& norm,
                      int depth = 0) {
  if (j.is_null()) return;
  if (depth > kMaxNesting) bad_field(source, field, "nested too deeply");
  if (!j.is_object()) bad_field(source, field, "expected an object or null");
  const std::string type = get_string(j, "type", source, field);
  if (type == "Sequence") {
    auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) bad_field(source, field + ".normalizers", "missing or not a list");
    for (size_t i = 0; i < it->size(); ++i) {
      build_normalizer((*it)[i], source, field + ".normalizers[" + std::to_string(i) + "]", norm, depth + 1);
    }
  } else if (type == "Prepend") {
    norm.add_prepend(get_string(j, "prepend", source, field));
  } else if (type == "Replace") {
    auto p = j.find("pattern");
    if (p == j.end() || !p->is_object() || !p->contains("String") || !(*p)["String"].is_string()) {
      bad_field(source, field + ".pattern", "only a literal {\"String\": ...} Replace pattern is supported",
                kUnsupportedTokenizerFix);
    }
    norm.add_replace((*p)["String"].get<std::string>(), get_string(j, "content", source, field));
  } else if (type == "NFC") {
    norm.add_nfc();
  } else {
    bad_field(source, field + ".type", "unsupported normalizer '" + type + "'", kUnsupportedTokenizerFix);
  }
}

bool has_byte_level(const json& j, int depth = 0) {
  if (!j.is_object() || depth > kMaxNesting) return false;
  auto type = j.find("type");
  if (type != j.end() && type->is_string() && type->get<std::string>() == "ByteLevel") return true;
  auto seq = j.find("pretokenizers");
  if (seq != j.end() && seq->is_array()) {
    for (const json& p : *seq) if (has_byte_level(p, depth + 1)) return true;
  }
  return false;
}

// What a tokenizer.json post-processor adds around a single sequence (HF tokenizers' processors):
// the special tokens it puts before the sequence (the first is dak's BOS when tokenizer_config.json
// names none; the others are prefix_ids()) and after it (suffix_ids()), as token names and ids.
struct PostProcessorTokens {
  std::vector<std::string> prefix_names;     // before the text, in order
  std::vector<int64_t> prefix_ids;           // their ids where the processor gives them (-1: by name)
  std::vector<std::string> suffix_names;     // after the text, in order
  std::vector<int64_t> suffix_ids;           // their ids (-1: by name)
  int sequences = 0;                         // TemplateProcessing: the text's places ($A) in "single", most
  std::vector<std::string> not_applied;      // processor types dak does not apply (a notice)
  bool wrapped_template = false;             // a Sequence adds tokens after a TemplateProcessing that did

  std::optional<std::string> first() const {
    return prefix_names.empty() ? std::nullopt : std::optional<std::string>(prefix_names[0]);
  }
  int64_t first_id() const { return prefix_ids.empty() ? -1 : prefix_ids[0]; }
};

// " ('NAME' is id X in the vocabulary)" where the vocabulary has the token under another id; "".
std::string vocabulary_id_note(const BpeTokenizer& tok, const std::string& name) {
  const std::optional<int32_t> id = tok.token_id(name);
  return id ? fmt::format(" ('{}' is id {} in the vocabulary)", name, *id) : std::string();
}

// The fix for a post-processor id past the vocabulary (ids 0 to vocab_size - 1).
std::string out_of_vocabulary_fix(const BpeTokenizer& tok, const std::string& name, int64_t id) {
  return fmt::format("the vocabulary has ids 0 to {}: give '{}' an id in that range in the post_processor, or add it "
                     "to added_tokens with id {} (or restore the tokenizer files from the model's repository)",
                     tok.vocab_size() - 1, name, id);
}

// Tokens dak accepts from a post-processor around one sequence, at most. Real templates add one to
// three (BOS, EOS, [CLS] ... [SEP]); a list of millions (trial 47f) is a broken file, not a long prompt.
constexpr size_t kMaxPostProcessorTokens = 64;

// Fails when `out` holds more than kMaxPostProcessorTokens tokens around the text.
void check_post_processor_size(const PostProcessorTokens& out, const std::string& source, const std::string& field) {
  const size_t n = out.prefix_ids.size() + out.suffix_ids.size();
  if (n > kMaxPostProcessorTokens) {
    bad_field(source, field,
              fmt::format("at least {} special tokens around the text; dak accepts at most {} (templates put a "
                          "few: BOS, EOS)",
                          n, kMaxPostProcessorTokens));
  }
}

void read_post_processor(const json& j, const std::string& source, const std::string& field, PostProcessorTokens& out,
                         int depth = 0) {
  if (j.is_null()) return;
  if (!j.is_object()) bad_field(source, field, "expected an object or null");
  if (depth > kMaxNesting) bad_field(source, field, "nested too deeply");
  const auto t = j.find("type");
  const std::string type = (t != j.end() && t->is_string()) ? t->get<std::string>() : "";
  if (type == "Sequence") {
    // Each processor wraps what the ones before it made (Hugging Face's Sequence): a later one's
    // tokens before the text go before the earlier ones', its tokens after the text after theirs.
    auto it = j.find("processors");
    if (it == j.end() || !it->is_array()) bad_field(source, field + ".processors", "missing or not a list");
    bool template_added = false;  // a TemplateProcessing before this processor put tokens around the text
    for (size_t i = 0; i < it->size(); ++i) {
      PostProcessorTokens sub;
      const std::string at = field + ".processors[" + std::to_string(i) + "]";
      read_post_processor((*it)[i], source, at, sub, depth + 1);
      const bool adds = !sub.prefix_ids.empty() || !sub.suffix_ids.empty();
      // Hugging Face's tokenizers then wraps each piece the template made as its own sequence (or
      // fails, for two templates); dak wraps the whole (trial 48's review).
      if (template_added && adds) out.wrapped_template = true;
      const auto t2 = (*it)[i].is_object() ? (*it)[i].find("type") : (*it)[i].end();
      if (adds && t2 != (*it)[i].end() && *t2 == "TemplateProcessing") template_added = true;
      out.prefix_names.insert(out.prefix_names.begin(), sub.prefix_names.begin(), sub.prefix_names.end());
      out.prefix_ids.insert(out.prefix_ids.begin(), sub.prefix_ids.begin(), sub.prefix_ids.end());
      out.suffix_names.insert(out.suffix_names.end(), sub.suffix_names.begin(), sub.suffix_names.end());
      out.suffix_ids.insert(out.suffix_ids.end(), sub.suffix_ids.begin(), sub.suffix_ids.end());
      out.sequences = std::max(out.sequences, sub.sequences);
      out.not_applied.insert(out.not_applied.end(), sub.not_applied.begin(), sub.not_applied.end());
      out.wrapped_template = out.wrapped_template || sub.wrapped_template;
      check_post_processor_size(out, source, at);
    }
    return;
  }
  if (type == "ByteLevel") return;  // offsets only
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    // Single sequence: cls $A sep, each given as [token, id].
    auto pair = [&](const char* key) -> std::pair<std::string, int64_t> {
      auto it = j.find(key);
      if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_string() ||
          !(*it)[1].is_number_integer()) {
        bad_field(source, field + "." + key, "expected [token, id]");
      }
      return {(*it)[0].get<std::string>(), (*it)[1].get<int64_t>()};
    };
    const auto cls = pair("cls"), sep = pair("sep");
    out.prefix_names.push_back(cls.first);
    out.prefix_ids.push_back(cls.second);
    out.suffix_names.push_back(sep.first);
    out.suffix_ids.push_back(sep.second);
    check_post_processor_size(out, source, field);
    return;
  }
  if (type != "TemplateProcessing") {
    out.not_applied.push_back(type.empty() ? std::string("(no type)") : type);
    return;
  }
  auto single = j.find("single");
  if (single == j.end() || !single->is_array()) bad_field(source, field + ".single", "missing or not a list");
  const auto specials = j.find("special_tokens");
  bool after = false;  // past the sequence $A
  int sequences = 0;
  for (size_t i = 0; i < single->size(); ++i) {
    const json& item = (*single)[i];
    const std::string where = field + ".single[" + std::to_string(i) + "]";
    if (item.is_object() && item.contains("Sequence")) {
      after = true;
      ++sequences;
      continue;
    }
    const json* id = nullptr;  // item.SpecialToken.id
    if (item.is_object()) {
      if (auto st = item.find("SpecialToken"); st != item.end() && st->is_object()) {
        if (auto i = st->find("id"); i != st->end() && i->is_string()) id = &*i;
      }
    }
    if (!id) bad_field(source, where, "expected {\"Sequence\": ...} or {\"SpecialToken\": {\"id\": name}}");
    const std::string name = id->get<std::string>();
    // The ids of special_tokens[name] (HF: a special token may stand for several ids), else the
    // vocabulary's id of the name (-1: looked up by the caller).
    std::vector<int64_t> ids{-1};
    if (specials != j.end() && specials->is_object()) {
      if (auto e = specials->find(name); e != specials->end()) {
        const std::string at = field + ".special_tokens." + name + ".ids";
        const auto list = e->is_object() ? e->find("ids") : e->end();
        if (list == e->end() || !list->is_array()) bad_field(source, at, "expected a list of ids");
        ids.clear();
        if (list->size() > kMaxPostProcessorTokens) {
          bad_field(source, at,
                    fmt::format("{} ids for one special token; dak accepts at most {} tokens around the text",
                                list->size(), kMaxPostProcessorTokens));
        }
        for (const json& v : *list) {
          if (!v.is_number_integer() || v.get<int64_t>() < 0) bad_field(source, at, "expected ids of 0 or more");
          ids.push_back(v.get<int64_t>());
        }
      }
    }
    for (const int64_t v : ids) {
      (after ? out.suffix_names : out.prefix_names).push_back(name);
      (after ? out.suffix_ids : out.prefix_ids).push_back(v);
    }
    check_post_processor_size(out, source, field + ".single");
  }
  out.sequences = std::max(out.sequences, sequences);
}

}  // namespace

bool hf_tokenizer_json_is_byte_level(std::string_view json_text, const std::string& source) {
  json j = parse_tokenizer_json(json_text, source);
  return j.is_object() && j.contains("pre_tokenizer") && has_byte_level(j["pre_tokenizer"]);
}

std::unique_ptr<Tokenizer> parse_hf_tokenizer_json(std::string_view json_text, const std::string& source,
                                                   const HfTokenizerConfig& cfg) {
  json j = parse_tokenizer_json(json_text, source);
  if (!j.is_object()) fail("expected a JSON object at the top level", source, "restore the file");

  // model
  auto mit = j.find("model");
  if (mit == j.end() || !mit->is_object()) bad_field(source, "model", "missing or not an object");
  const json& model = *mit;
  if (auto t = model.find("type"); t != model.end()) {
    if (!t->is_string()) bad_field(source, "model.type", "not a string");
    if (t->get<std::string>() != "BPE") {
      bad_field(source, "model.type", "unsupported tokenizer model '" + t->get<std::string>() + "' (dak supports BPE)",
                kUnsupportedTokenizerFix);
    }
  } else if (!model.contains("merges")) {
    bad_field(source, "model.type", "missing (and no model.merges): not a BPE model", kUnsupportedTokenizerFix);
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty())) {
      bad_field(source, std::string("model.") + key, "not supported for byte-level BPE", kUnsupportedTokenizerFix);
    }
  }
  BpeSpec spec;
  spec.source = source;
  spec.merges_field = "model.merges";
  spec.ignore_merges = get_bool(model, "ignore_merges", false, source, "model");
  spec.byte_fallback = get_bool(model, "byte_fallback", false, source, "model");

  auto vit = model.find("vocab");
  if (vit == model.end() || !vit->is_object()) bad_field(source, "model.vocab", "missing or not an object");
  int64_t max_id = -1;
  std::unordered_map<int64_t, const std::string*> token_of_id;  // a second token with an id is refused
  token_of_id.reserve(vit->size());
  for (auto it = vit->begin(); it != vit->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() >= kMaxVocab) {
      bad_field(source, "model.vocab[\"" + it.key() + "\"]", "token id is not an integer in [0, 2^21)");
    }
    const int64_t id = it.value().get<int64_t>();
    // Two tokens with one id: one of them would be lost, and a merge naming it reported as not in the
    // vocabulary (a new-user trial), or the text encoded with the other's id.
    if (const auto [at, fresh] = token_of_id.emplace(id, &it.key()); !fresh) {
      bad_field(source, "model.vocab[\"" + it.key() + "\"]",
                fmt::format("the tokens '{}' and '{}' both have the id {} (each token needs an id of its own)",
                            *at->second, it.key(), id));
    }
    max_id = std::max(max_id, id);
  }
  struct Added { std::string content; int64_t id; bool special, lstrip, rstrip; };
  std::vector<Added> added;
  if (auto at = j.find("added_tokens"); at != j.end() && !at->is_null()) {
    if (!at->is_array()) bad_field(source, "added_tokens", "not a list");
    for (size_t i = 0; i < at->size(); ++i) {
      const json& t = (*at)[i];
      const std::string field = "added_tokens[" + std::to_string(i) + "]";
      if (!t.is_object()) bad_field(source, field, "not an object");
      auto id = t.find("id");
      if (id == t.end() || !id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() >= kMaxVocab) {
        bad_field(source, field + ".id", "missing or not an integer in [0, 2^21)");
      }
      added.push_back({get_string(t, "content", source, field), id->get<int64_t>(),
                       get_bool(t, "special", false, source, field), get_bool(t, "lstrip", false, source, field),
                       get_bool(t, "rstrip", false, source, field)});
      max_id = std::max(max_id, id->get<int64_t>());
    }
  }
  spec.tokens.resize(static_cast<size_t>(max_id + 1));
  spec.kinds.assign(spec.tokens.size(), BpeTokenKind::kNormal);
  for (auto it = vit->begin(); it != vit->end(); ++it) spec.tokens[it.value().get<int64_t>()] = it.key();
  // The ids defined, for a size check that says how many tokens there are (not max id + 1).
  std::vector<bool> defined(spec.tokens.size(), false);
  for (const auto& [id, token] : token_of_id) defined[size_t(id)] = true;
  for (const Added& a : added) defined[size_t(a.id)] = true;
  spec.token_count = std::count(defined.begin(), defined.end(), true);
  for (const Added& a : added) {
    spec.tokens[a.id] = a.content;
    spec.kinds[a.id] = a.special ? BpeTokenKind::kSpecial : BpeTokenKind::kAdded;
    spec.added.push_back({a.content, static_cast<int32_t>(a.id), a.lstrip, a.rstrip});
  }

  auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) bad_field(source, "model.merges", "missing or not a list");
  spec.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    const std::string field = "model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos) {
        bad_field(source, field, "expected \"left right\" (two tokens separated by one space), got '" + s + "'");
      }
      spec.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      bad_field(source, field, "expected \"left right\" or [\"left\", \"right\"]");
    }
  }
  if (auto u = model.find("unk_token"); u != model.end() && u->is_string()) {
    if (auto id = vit->find(u->get<std::string>()); id != vit->end()) spec.unk_id = id->get<int32_t>();
  }

  // normalizer, pre-tokenizer
  if (auto n = j.find("normalizer"); n != j.end()) build_normalizer(*n, source, "normalizer", spec.normalizer);
  if (auto p = j.find("pre_tokenizer"); p != j.end()) build_pre_tokenizer(*p, source, "pre_tokenizer", spec.pre);
  if (!spec.pre.has_byte_level()) {
    bad_field(source, "pre_tokenizer", "not a byte-level BPE (no ByteLevel pre-tokenizer)", kUnsupportedTokenizerFix);
  }
  PostProcessorTokens pp;
  if (auto it = j.find("post_processor"); it != j.end()) read_post_processor(*it, source, "post_processor", pp);
  const std::optional<std::string> pp_bos = pp.first();
  const int64_t pp_bos_id = pp.first_id();

  auto tok = std::make_unique<BpeTokenizer>(std::move(spec));

  auto lookup = [&tok](std::string_view t) { return tok->token_id(t); };
  int32_t bos = -1;
  if (cfg.bos_token) {
    bos = tok->token_id(*cfg.bos_token).value_or(-1);
  } else if (pp_bos_id >= 0) {  // the id the post-processor gives (its name may be no token)
    if (pp_bos_id >= tok->vocab_size() && cfg.add_bos_token.value_or(true)) {  // refused only where used
      bad_field(source, "post_processor",
                "the token '" + *pp_bos + "' it puts first has id " + std::to_string(pp_bos_id) +
                    ", outside the vocabulary" + vocabulary_id_note(*tok, *pp_bos),
                out_of_vocabulary_fix(*tok, *pp_bos, pp_bos_id));
    }
    bos = pp_bos_id < tok->vocab_size() ? int32_t(pp_bos_id) : -1;
  } else if (pp_bos) {
    bos = tok->token_id(*pp_bos).value_or(-1);
    // As a token it appends (below): the file names a token it does not define (Hugging Face's
    // tokenizers refuses such a template too), unless tokenizer_config.json's add_bos_token leaves
    // it out (transformers then rebuilds the template without it).
    if (bos < 0 && cfg.add_bos_token.value_or(true)) {
      bad_field(source, "post_processor", "the token '" + *pp_bos + "' it puts first is not in the vocabulary");
    }
  }
  int64_t eos = -1;
  if (cfg.eos_token) eos = tok->token_id(*cfg.eos_token).value_or(-1);
  const bool add_bos = cfg.add_bos_token.value_or(pp_bos.has_value());
  std::vector<int64_t> ignored;
  tok->set_specials(bos, collect_eos_ids(eos, cfg.generation_eos_ids, tok->vocab_size(), lookup, &ignored), add_bos,
                    cfg.chat_template, cfg.chat_template_source);
  tok->add_notice(ignored_eos_notice(ignored, "generation_config.json's eos_token_id", tok->vocab_size()));

  // The post-processor's ids (where it gave none, the vocabulary's id of the name), each within the
  // vocabulary; `what` says where the token goes, for the error.
  const auto resolve = [&](const std::vector<int64_t>& given, const std::vector<std::string>& names,
                           const std::string& what) {
    std::vector<int32_t> out;
    for (size_t i = 0; i < given.size(); ++i) {
      const int64_t id = given[i] >= 0 ? given[i] : tok->token_id(names[i]).value_or(-1);
      if (id < 0) {
        bad_field(source, "post_processor", "the token '" + names[i] + "' it " + what + " is not in the vocabulary");
      }
      if (id >= tok->vocab_size()) {
        bad_field(source, "post_processor",
                  "the token '" + names[i] + "' it " + what + " has id " + std::to_string(id) +
                      ", outside the vocabulary" + vocabulary_id_note(*tok, names[i]),
                  out_of_vocabulary_fix(*tok, names[i], id));
      }
      out.push_back(int32_t(id));
    }
    return out;
  };
  // After the text: the post-processor's tokens (checked only where used), or, where
  // tokenizer_config.json gives add_eos_token, EOS or nothing, as its add_bos_token decides BOS (dak's
  // rule, README; transformers' classes and versions differ here).
  std::vector<int32_t> suffix;
  std::vector<std::string> suffix_names;
  std::string suffix_from = "tokenizer.json's post_processor";
  if (!cfg.add_eos_token) {
    suffix = resolve(pp.suffix_ids, pp.suffix_names, "appends");
    suffix_names = pp.suffix_names;
  } else if (*cfg.add_eos_token) {
    check_add_eos(eos, cfg.eos_token, source);
    suffix.push_back(int32_t(eos));
    suffix_names.push_back(cfg.eos_token.value_or(tok->decode(suffix)));
    suffix_from = "tokenizer_config.json's add_eos_token";
  }
  if (!suffix.empty()) tok->add_notice(suffix_notice(suffix_names, suffix_from));
  // Where tokenizer_config.json overrides the post-processor, say what it took away (trial 48b).
  if (cfg.add_eos_token && !pp.suffix_names.empty() && suffix_names != pp.suffix_names) {
    tok->add_notice(fmt::format("tokenizer_config.json's add_eos_token ({}) {} {}, which tokenizer.json's "
                                "post_processor puts after the text",
                                *cfg.add_eos_token ? "true" : "false", *cfg.add_eos_token ? "replaces" : "leaves out",
                                names_for_notice(pp.suffix_names)));
  }
  // tokenizer_config.json's add_bos_token, where given, decides the tokens before the text: BOS or
  // none (transformers' Llama-class tokenizers rebuild the template as "BOS? $A EOS?").
  const size_t dropped_before =
      cfg.add_bos_token ? pp.prefix_names.size() - (add_bos && pp_bos && bos >= 0 ? 1 : 0) : 0;
  if (dropped_before > 0) {
    const std::vector<std::string> dropped(pp.prefix_names.end() - std::ptrdiff_t(dropped_before),
                                           pp.prefix_names.end());
    tok->add_notice(fmt::format("tokenizer_config.json's add_bos_token ({}) leaves out {}, which tokenizer.json's "
                                "post_processor puts before the text",
                                add_bos ? "true" : "false", names_for_notice(dropped)));
  }
  if (add_bos && bos < 0) {
    tok->add_notice(cfg.bos_token ? fmt::format("tokenizer_config.json's bos_token '{}' is not in the vocabulary: "
                                                "prompts get no BOS",
                                                *cfg.bos_token)
                                  : std::string("add_bos_token is true but the tokenizer names no BOS token: prompts "
                                                "get no BOS"));
  }
  tok->set_suffix_ids(std::move(suffix));
  // Before the text, after its first token: the post-processor's other prefix tokens, unless
  // tokenizer_config.json's add_bos_token decides (above).
  std::vector<int32_t> prefix;
  if (!cfg.add_bos_token && pp.prefix_ids.size() > 1) {
    prefix = resolve(std::vector<int64_t>(pp.prefix_ids.begin() + 1, pp.prefix_ids.end()),
                     std::vector<std::string>(pp.prefix_names.begin() + 1, pp.prefix_names.end()),
                     "puts before the text");
  }
  std::vector<std::string> prefix_names;
  for (const int32_t id : prefix) {
    const int32_t one[] = {id};
    prefix_names.push_back(tok->decode(one));  // the token's text: a name may stand for several ids
  }
  if (!prefix.empty()) {
    tok->add_notice(fmt::format("every prompt has {} before its text{} (tokenizer.json's post_processor); --chat "
                                "prompts, --prompt-ids and the text of dak perplexity do not",
                                names_for_notice(prefix_names), add_bos && bos >= 0 ? ", after BOS" : ""));
  }
  tok->set_prefix_ids(std::move(prefix));
  if (pp.sequences > 1) {
    tok->add_notice(fmt::format("tokenizer.json's post_processor puts the text {} times; dak puts it once",
                                pp.sequences));
  }
  if (pp_bos && cfg.bos_token && *pp_bos != *cfg.bos_token && add_bos && bos >= 0) {
    tok->add_notice(fmt::format("the BOS added to prompts is tokenizer_config.json's bos_token '{}', not '{}', which "
                                "tokenizer.json's post_processor puts first",
                                *cfg.bos_token, *pp_bos));
  }
  if (pp.wrapped_template) {
    tok->add_notice("tokenizer.json's post_processor is a Sequence in which a processor adds tokens after a "
                    "TemplateProcessing did: dak puts them all around the text once, where Hugging Face's tokenizers "
                    "wraps each piece of the template (or refuses two templates)");
  }
  if (!pp.not_applied.empty()) {
    std::vector<std::string> kinds;
    for (const std::string& k : pp.not_applied) {
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
    }
    tok->add_notice(fmt::format("tokenizer.json's post_processor of type {} is not applied: prompts may lack special "
                                "tokens that Hugging Face adds",
                                fmt::join(kinds, ", ")));
  }
  return tok;
}

std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::filesystem::path& tokenizer_json) {
  return parse_hf_tokenizer_json(read_text_file(tokenizer_json), tokenizer_json.string(),
                                 read_tokenizer_config(tokenizer_json.parent_path()));
}

// ---------------------------------------------------------------- GGUF

// Here, not in tokenizer.cc: the GGUF loaders of both tokenizer kinds call it, and the fuzz targets link
// the loaders without tokenizer.cc.
void apply_gguf_add_eos(Tokenizer& tok, const GgufFile& gguf, int64_t eos, const std::string& source) {
  if (!gguf.opt_bool("tokenizer.ggml.add_eos_token").value_or(false)) return;
  if (eos < 0 || eos >= tok.vocab_size()) {
    fail("tokenizer.ggml.add_eos_token is true but the file names no EOS token (tokenizer.ggml.eos_token_id)",
         source + ": tokenizer.ggml.add_eos_token", "restore the file's metadata");
  }
  const std::vector<int32_t> suffix{int32_t(eos)};
  tok.add_notice(suffix_notice({tok.decode(suffix)}, "tokenizer.ggml.add_eos_token"));
  tok.set_suffix_ids(suffix);
}

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& gguf) {
  const std::string source = gguf.path().string();
  const auto model = gguf.opt_string("tokenizer.ggml.model");
  if (!model) {
    fail("the GGUF file has no tokenizer (tokenizer.ggml.model is missing)", source,
         "pass the prompt as token ids with --prompt-ids");
  }
  if (*model == "llama") return load_gguf_sentencepiece(gguf);
  if (*model != "gpt2") {
    fail("unsupported tokenizer type '" + *model + "'", source + ": tokenizer.ggml.model",
         "dak supports 'gpt2' (byte-level BPE) and 'llama' (SentencePiece); pass token ids with --prompt-ids");
  }
  BpeSpec spec;
  spec.source = source;
  spec.merges_field = "tokenizer.ggml.merges";
  spec.tokens = gguf.get_string_array("tokenizer.ggml.tokens");
  const auto n = static_cast<int64_t>(spec.tokens.size());
  if (n == 0 || n >= kMaxVocab) fail("tokenizer.ggml.tokens has " + std::to_string(n) + " entries", source, "restore the file");
  std::vector<int64_t> types(spec.tokens.size(), 1);
  if (gguf.find("tokenizer.ggml.token_type")) {
    types = gguf.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != spec.tokens.size()) {
      fail("tokenizer.ggml.token_type has " + std::to_string(types.size()) + " entries for " + std::to_string(n) +
               " tokens",
           source + ": tokenizer.ggml.token_type", "restore the file");
    }
  }
  spec.kinds.resize(spec.tokens.size(), BpeTokenKind::kNormal);
  for (size_t i = 0; i < types.size(); ++i) {
    // llama.cpp token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
    if (types[i] == 2 || types[i] == 3) spec.kinds[i] = BpeTokenKind::kSpecial;
    if (types[i] == 4) spec.kinds[i] = BpeTokenKind::kAdded;
    if (types[i] == 3 || types[i] == 4) spec.added.push_back({spec.tokens[i], static_cast<int32_t>(i), false, false});
  }
  const auto merges = gguf.get_string_array("tokenizer.ggml.merges");
  spec.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const size_t sp = merges[i].find(' ', 1);
    if (sp == std::string::npos || sp + 1 >= merges[i].size()) {
      fail("merge '" + merges[i] + "' is not two tokens separated by a space",
           source + ": tokenizer.ggml.merges[" + std::to_string(i) + "]", "restore the file");
    }
    spec.merges.emplace_back(merges[i].substr(0, sp), merges[i].substr(sp + 1));
  }
  const std::string pre_name = gguf.opt_string("tokenizer.ggml.pre").value_or("default");
  GgufPreTokenizer pre = gguf_pre_tokenizer(pre_name, source + ": tokenizer.ggml.pre");
  spec.pre = std::move(pre.pre);
  spec.ignore_merges = pre.ignore_merges;
  auto id_key = [&](const char* key) -> int64_t {
    auto v = gguf.opt_int(key);
    if (!v) return -1;
    if (*v < 0 || *v >= n) fail("token id " + std::to_string(*v) + " is outside the vocabulary", source + ": " + key, "restore the file");
    return *v;
  };
  spec.unk_id = static_cast<int32_t>(id_key("tokenizer.ggml.unknown_token_id"));
  const int64_t bos = id_key("tokenizer.ggml.bos_token_id");
  const int64_t eos = id_key("tokenizer.ggml.eos_token_id");
  std::vector<int64_t> extra_eos;
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (int64_t id = id_key(key); id >= 0) extra_eos.push_back(id);
  }
  const bool add_bos = gguf.opt_bool("tokenizer.ggml.add_bos_token").value_or(pre.add_bos);
  auto tmpl = gguf.opt_string("tokenizer.chat_template");

  auto tok = std::make_unique<BpeTokenizer>(std::move(spec));
  auto lookup = [&tok](std::string_view t) { return tok->token_id(t); };
  std::vector<int64_t> ignored;
  tok->set_specials(static_cast<int32_t>(bos), collect_eos_ids(eos, extra_eos, tok->vocab_size(), lookup, &ignored),
                    add_bos, std::move(tmpl), source + ": metadata tokenizer.chat_template");
  tok->add_notice(ignored_eos_notice(ignored, source + "'s tokenizer.ggml.eot_token_id / eom_token_id",
                                     tok->vocab_size()));
  apply_gguf_add_eos(*tok, gguf, eos, source);
  if (!gguf.find("tokenizer.ggml.pre")) {
    // llama.cpp warns loudly here ("GENERATION QUALITY WILL BE DEGRADED"); dak said nothing (trial of
    // session 50: "don't" became 3 tokens instead of the model's 2).
    tok->add_notice(source + " names no pre-tokenizer (tokenizer.ggml.pre): its text is split as llama.cpp's "
                             "'default' (GPT-2's split), which may give other tokens than the model's own "
                             "tokenizer; convert the model with a current llama.cpp (convert_hf_to_gguf.py writes "
                             "the key), or run its safetensors release");
  }
  return tok;
}

}  // namespace dak
