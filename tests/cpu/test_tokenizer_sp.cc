// SentencePiece against the python sentencepiece oracle (tests/data/tokenizer/
// tiny_sp_oracle.json, made by tools/make_sp_fixture.py with the tiny model tiny_sp.model
// and the same vocabulary as GGUF metadata in tiny_sp.gguf).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/gguf.h"
#include "core/sentencepiece_tokenizer.h"
#include "core/tokenizer.h"

namespace dak {
namespace {

const std::filesystem::path kData = std::filesystem::path(DAK_TEST_DATA_DIR) / "tokenizer";

struct SpOracle {
  std::vector<std::string> strings, decoded;
  std::vector<std::vector<int32_t>> ids;
  int32_t bos = -1, eos = -1;
};

const SpOracle& oracle() {
  static const SpOracle o = [] {
    std::ifstream f(kData / "tiny_sp_oracle.json");
    auto j = nlohmann::json::parse(f);
    SpOracle r;
    r.strings = j.at("strings").get<std::vector<std::string>>();
    r.decoded = j.at("decoded").get<std::vector<std::string>>();
    r.ids = j.at("ids").get<std::vector<std::vector<int32_t>>>();
    r.bos = j.at("bos_id");
    r.eos = j.at("eos_id");
    return r;
  }();
  return o;
}

void expect_matches_oracle(const Tokenizer& tok) {
  const SpOracle& o = oracle();
  ASSERT_EQ(o.strings.size(), o.ids.size());
  for (size_t i = 0; i < o.strings.size(); ++i) {
    EXPECT_EQ(tok.encode(o.strings[i], /*allow_bos=*/false), o.ids[i]) << "string " << i << " '" << o.strings[i] << "'";
    EXPECT_EQ(tok.decode(o.ids[i]), o.decoded[i]) << "string " << i;
  }
  EXPECT_EQ(tok.bos_id(), o.bos);
  EXPECT_TRUE(tok.is_eos(o.eos));
  EXPECT_EQ(tok.vocab_size(), 400);
}

TEST(TokenizerSentencePiece, ModelFileMatchesPythonSentencePiece) {
  expect_matches_oracle(*load_sentencepiece(kData / "tiny_sp.model"));
}

TEST(TokenizerSentencePiece, GgufLlamaVocabMatchesPythonSentencePiece) {
  auto gguf = GgufFile::open(kData / "tiny_sp.gguf");
  expect_matches_oracle(*load_gguf_tokenizer(*gguf));
}

TEST(TokenizerSentencePiece, BosAndControlTokensWrittenLiterally) {
  const auto tok = load_sentencepiece(kData / "tiny_sp.model");
  const SpOracle& o = oracle();
  EXPECT_TRUE(tok->add_bos());  // no tokenizer_config.json: BOS as in HF LlamaTokenizer
  std::vector<int32_t> want = {o.bos};
  want.insert(want.end(), o.ids[0].begin(), o.ids[0].end());
  EXPECT_EQ(tok->encode(o.strings[0], /*allow_bos=*/true), want);
  // "<s>" and "</s>" in the text are the control tokens; the text between them is encoded
  // on its own (SentencePiece adds its dummy prefix to each piece).
  std::vector<int32_t> with_controls = {o.bos};
  with_controls.insert(with_controls.end(), o.ids[0].begin(), o.ids[0].end());
  with_controls.push_back(o.eos);
  EXPECT_EQ(tok->encode("<s>" + o.strings[0] + "</s>", false), with_controls);
  EXPECT_EQ(tok->decode(with_controls), "<s>" + o.strings[0] + "</s>");
  EXPECT_EQ(tok->decode(with_controls, /*skip_special=*/true), o.strings[0]);
}

TEST(TokenizerSentencePiece, StreamingDecodeKeepsBytes) {
  const auto tok = load_sentencepiece(kData / "tiny_sp.model");
  const SpOracle& o = oracle();
  // Strings 9 and 10 (CJK, emoji) are byte-fallback pieces: every prefix decodes to a byte
  // prefix of the text, without replacement characters.
  for (size_t s : {9u, 10u}) {
    for (size_t n = 0; n <= o.ids[s].size(); ++n) {
      const std::string prefix = tok->decode(std::span<const int32_t>(o.ids[s].data(), n));
      EXPECT_EQ(o.decoded[s].compare(0, prefix.size(), prefix), 0) << "prefix " << n << " of string " << s;
    }
  }
}

TEST(TokenizerSentencePiece, CorruptModelIsAnError) {
  const std::string bytes = "\x0a\x05hello-this-is-not-a-model";
  EXPECT_THROW(load_sentencepiece_proto(bytes, "broken.model"), Error);
  try {
    load_sentencepiece(kData / "does_not_exist.model");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.where_part().find("does_not_exist.model"), std::string::npos);
  }
}

}  // namespace
}  // namespace dak
