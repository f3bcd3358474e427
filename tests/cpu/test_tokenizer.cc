// Byte-level BPE against the transformers oracle (tests/data/tokenizer/smollm2_oracle.json:
// ids and decoded text of tricky_strings.json by transformers' tokenizer loaded from the
// SmolLM2 GGUF, add_special_tokens=False; smollm2/tokenizer.json + tokenizer_config.json +
// chat_template.jinja saved by its save_pretrained), through both the GGUF path and the
// tokenizer.json path.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/bpe_tokenizer.h"
#include "core/error.h"
#include "core/gguf.h"
#include "core/tokenizer.h"

namespace dak {
namespace {

const std::filesystem::path kData = std::filesystem::path(DAK_TEST_DATA_DIR) / "tokenizer";
const std::filesystem::path kSmolGguf =
    std::filesystem::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf";

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  EXPECT_TRUE(f.good()) << p;
  return nlohmann::json::parse(f);
}

struct Oracle {
  std::vector<std::string> strings;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::string> decoded;
  nlohmann::json raw;
};

const Oracle& smollm2_oracle() {
  static const Oracle o = [] {
    Oracle r;
    r.raw = read_json(kData / "smollm2_oracle.json");
    r.strings = r.raw.at("strings").get<std::vector<std::string>>();
    r.ids = r.raw.at("ids").get<std::vector<std::vector<int32_t>>>();
    r.decoded = r.raw.at("decoded").get<std::vector<std::string>>();
    return r;
  }();
  return o;
}

std::string show(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Every oracle string: exact ids, the oracle's decoded text, and decode(encode(s)) == s.
void expect_matches_oracle(const Tokenizer& tok) {
  const Oracle& o = smollm2_oracle();
  ASSERT_EQ(o.strings.size(), o.ids.size());
  ASSERT_EQ(o.strings.size(), o.decoded.size());
  for (size_t i = 0; i < o.strings.size(); ++i) {
    const auto ids = tok.encode(o.strings[i], /*allow_bos=*/false);
    EXPECT_EQ(ids, o.ids[i]) << "string " << i << " '" << o.strings[i] << "': got " << show(ids) << " want "
                             << show(o.ids[i]);
    EXPECT_EQ(tok.decode(o.ids[i]), o.decoded[i]) << "string " << i;
    EXPECT_EQ(tok.decode(ids), o.strings[i]) << "string " << i;
  }
}

std::unique_ptr<Tokenizer> smollm2_gguf() {
  auto gguf = GgufFile::open(kSmolGguf);
  return load_gguf_tokenizer(*gguf);
}

#define SKIP_WITHOUT_MODEL()                                                                  \
  if (!std::filesystem::exists(kSmolGguf)) GTEST_SKIP() << kSmolGguf << " missing (tools/setup.sh)"

TEST(TokenizerSmolLM2, GgufMatchesTransformersOracle) {
  SKIP_WITHOUT_MODEL();
  expect_matches_oracle(*smollm2_gguf());
}

TEST(TokenizerSmolLM2, TokenizerJsonMatchesTransformersOracle) {
  expect_matches_oracle(*load_hf_tokenizer_json(kData / "smollm2" / "tokenizer.json"));
}

TEST(TokenizerSmolLM2, SpecialTokensAndEos) {
  SKIP_WITHOUT_MODEL();
  const Oracle& o = smollm2_oracle();
  // The oracle encodes "<|im_start|>user\nHi there<|im_end|>" with the special tokens at
  // both ends; their ids are what EOS / BOS refer to.
  const auto& chat_ids = o.ids[16];
  ASSERT_EQ(o.strings[16].rfind("<|im_start|>", 0), 0u);
  const int32_t im_start = chat_ids.front(), im_end = chat_ids.back();
  for (const auto& tok : {smollm2_gguf(), load_hf_tokenizer_json(kData / "smollm2" / "tokenizer.json")}) {
    EXPECT_TRUE(tok->is_eos(im_end));  // ChatML end of turn stops generation
    EXPECT_EQ(tok->vocab_size(), 49152);
    EXPECT_FALSE(tok->add_bos());      // GGUF add_bos_token = false; no BOS in the post-processor
    EXPECT_EQ(tok->encode("Hello world", true), o.ids[0]);
    EXPECT_EQ(tok->decode(chat_ids, /*skip_special=*/true), o.strings[16].substr(12, o.strings[16].size() - 12 - 10));
  }
  EXPECT_EQ(smollm2_gguf()->bos_id(), im_start);  // GGUF tokenizer.ggml.bos_token_id
}

TEST(TokenizerSmolLM2, ChatTemplateMatchesTransformers) {
  SKIP_WITHOUT_MODEL();
  const auto& ex = smollm2_oracle().raw.at("chat_example");
  std::vector<ChatMessage> msgs;
  for (const auto& m : ex.at("messages")) msgs.push_back({m.at("role"), m.at("content")});
  const std::string want = ex.at("rendered");
  EXPECT_EQ(smollm2_gguf()->apply_chat_template(msgs), want);
  EXPECT_EQ(load_hf_tokenizer_json(kData / "smollm2" / "tokenizer.json")->apply_chat_template(msgs), want);
}

TEST(TokenizerSmolLM2, StreamingDecodeOfCutCharacters) {
  const auto tok = load_hf_tokenizer_json(kData / "smollm2" / "tokenizer.json");
  // The emoji string's ids split 4-byte characters across tokens (oracle string 10).
  const Oracle& o = smollm2_oracle();
  for (size_t s : {8u, 9u, 10u}) {
    std::string streamed;
    for (int32_t id : o.ids[s]) streamed += tok->decode(std::span<const int32_t>(&id, 1));
    EXPECT_EQ(streamed, o.strings[s]) << "string " << s;
    for (size_t n = 0; n <= o.ids[s].size(); ++n) {
      const std::string prefix = tok->decode(std::span<const int32_t>(o.ids[s].data(), n));
      EXPECT_EQ(o.strings[s].compare(0, prefix.size(), prefix), 0) << "prefix " << n << " of string " << s;
    }
  }
}

TEST(TokenizerSmolLM2, EncodesKilobytesInMilliseconds) {
  const auto tok = load_hf_tokenizer_json(kData / "smollm2" / "tokenizer.json");
  // ~16 KB of distinct pseudo-words (defeats the word cache) plus the oracle strings.
  std::mt19937 rng(7);
  std::string text;
  while (text.size() < 16000) {
    const int len = 2 + static_cast<int>(rng() % 12);
    for (int i = 0; i < len; ++i) text += static_cast<char>('a' + rng() % 26);
    text += (rng() % 9 == 0) ? ".\n" : " ";
  }
  for (const auto& s : smollm2_oracle().strings) text += s;
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = tok->encode(text, false);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(tok->decode(ids), text);
  EXPECT_LT(ms, 500.0) << "encoding " << text.size() << " bytes took " << ms << " ms";
}

TEST(TokenizerJson, SequencePipelineMatchesHfTokenizers) {
  // sequence_pre_tokenizer.json: normalizer Sequence[NFC, Replace "  "->" ", Prepend "\u0120"],
  // pre-tokenizer Sequence[Split(Llama-3 regex), Digits(individual), ByteLevel(add_prefix_space,
  // no regex), Split("-", MergedWithNext) on the mapped text, Punctuation(Contiguous)],
  // ignore_merges, TemplateProcessing BOS. Expected ids from HF tokenizers 0.23.3:
  //   Tokenizer.from_file("sequence_pre_tokenizer.json").encode(s).ids
  const auto tok = load_hf_tokenizer_json(kData / "sequence_pre_tokenizer.json");
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->encode("hello world-x 12 <|im_end|>"),
            (std::vector<int32_t>{265, 32, 196, 160, 259, 262, 32, 45, 120, 32, 32, 49, 32, 50, 32, 266}));
  EXPECT_EQ(tok->encode("a--b  c'S 123456, ok!?"),
            (std::vector<int32_t>{265, 32, 196, 160, 97, 32, 45, 45, 32, 98, 32, 99, 32, 39, 83, 32, 32, 49, 32, 50,
                                  32, 51, 32, 52, 32, 53, 32, 54, 32, 44, 32, 111, 107, 32, 33, 63}));
}

// ---------------------------------------------------------------- pre-tokenizer units

std::vector<std::string> split_with(std::string_view pattern, SplitBehavior b, std::string_view text) {
  PreTokenizer pre;
  pre.add_split(std::make_shared<const Regex>(pattern, "test"), b);
  return pre.split(text);
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, SplitBehaviorsMatchHfDocs) {
  // HF tokenizers' documentation of SplitDelimiterBehavior, on "the-final--countdown".
  const std::string t = "the-final--countdown";
  EXPECT_EQ(split_with("-", SplitBehavior::kRemoved, t), (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(split_with("-", SplitBehavior::kIsolated, t), (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split_with("-", SplitBehavior::kMergedWithPrevious, t), (Pieces{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split_with("-", SplitBehavior::kMergedWithNext, t), (Pieces{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split_with("-", SplitBehavior::kContiguous, t), (Pieces{"the", "-", "final", "--", "countdown"}));
}

TEST(PreTokenizer, Llama3RegexSplitsDigitsInThrees) {
  // Read off the Llama-3 regex: letters with one optional leading non-letter, digits in
  // groups of at most 3, a lone space before digits is its own piece, "'s" is a contraction.
  auto pre = gguf_pre_tokenizer("llama-bpe", "test").pre;
  EXPECT_EQ(pre.split("Hello 123456 world's"), (Pieces{"Hello", " ", "123", "456", " world", "'s"}));
}

TEST(PreTokenizer, SmollmSplitsEachDigit) {
  // "smollm": \p{N} isolated first, then the GPT-2 regex inside each piece.
  auto pre = gguf_pre_tokenizer("smollm", "test").pre;
  EXPECT_EQ(pre.split("ab 12 cd"), (Pieces{"ab", " ", "1", "2", " cd"}));
}

TEST(PreTokenizer, EveryKnownGgufNameCompiles) {
  const auto names = known_gguf_pre_names();
  EXPECT_GE(names.size(), 20u);
  for (const auto& n : names) {
    auto p = gguf_pre_tokenizer(n, "test");
    EXPECT_TRUE(p.pre.has_byte_level()) << n;
    EXPECT_FALSE(p.pre.split("Hello, world 42!").empty()) << n;
  }
}

TEST(PreTokenizer, UnknownGgufNameListsKnownOnes) {
  try {
    gguf_pre_tokenizer("no-such-pre", "model.gguf: tokenizer.ggml.pre");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.what_part().find("no-such-pre"), std::string::npos);
    EXPECT_EQ(e.where_part(), "model.gguf: tokenizer.ggml.pre");
    EXPECT_NE(e.fix_part().find("smollm"), std::string::npos);
    EXPECT_NE(e.fix_part().find("llama-bpe"), std::string::npos);
  }
}

TEST(ByteLevel, AlphabetIsGpt2s) {
  // openai/gpt-2 bytes_to_unicode: printable ASCII stands for itself, space is U+0120 'Ġ',
  // newline U+010A 'Ċ', byte 0 U+0100 'Ā', 0xAD (soft hyphen) U+0143 'Ń', 0xFF 'ÿ'.
  const auto& a = byte_level_alphabet();
  EXPECT_EQ(a['A'], "A");
  EXPECT_EQ(a['~'], "~");
  EXPECT_EQ(a[' '], "\xC4\xA0");
  EXPECT_EQ(a['\n'], "\xC4\x8A");
  EXPECT_EQ(a[0], "\xC4\x80");
  EXPECT_EQ(a[0xAD], "\xC5\x83");
  EXPECT_EQ(a[0xFF], "\xC3\xBF");
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(byte_level_decode(byte_level_encode(all)), all);
  EXPECT_EQ(byte_level_decode("\xE2\x96\x81"), std::nullopt);  // U+2581 is not in the alphabet
}

TEST(Utf8, FindsInvalidSequences) {
  EXPECT_EQ(find_invalid_utf8("plain ascii"), std::nullopt);
  EXPECT_EQ(find_invalid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80"), std::nullopt);
  EXPECT_EQ(find_invalid_utf8("ab\xC3"), 2u);              // truncated
  EXPECT_EQ(find_invalid_utf8("a\xC0\x80"), 1u);           // overlong NUL
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);        // surrogate U+D800
  EXPECT_EQ(find_invalid_utf8("x\xF4\x90\x80\x80"), 1u);   // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("\x80"), 0u);                // lone continuation byte
}

TEST(AddedTokens, LongestMatchAndStrip) {
  AddedTokenMatcher m;
  m.add({"<a>", 1});
  m.add({"<a><b>", 2});
  m.add({"<c>", 3, /*lstrip=*/true, /*rstrip=*/true});
  auto segs = m.split("x<a><b>y<a> <c>  z");
  ASSERT_EQ(segs.size(), 6u);
  EXPECT_EQ(segs[0].text, "x");
  EXPECT_EQ(segs[1].id, 2);
  EXPECT_EQ(segs[2].text, "y");
  EXPECT_EQ(segs[3].id, 1);
  EXPECT_EQ(segs[4].id, 3);
  EXPECT_EQ(segs[4].text, " <c>  ");
  EXPECT_EQ(segs[5].text, "z");
}

}  // namespace
}  // namespace dak
