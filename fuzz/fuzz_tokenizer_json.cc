// libFuzzer target: parse_hf_tokenizer_json (the tokenizer.json reader behind
// load_hf_tokenizer_json) on arbitrary bytes, then, when a tokenizer comes out, encode and
// decode a few fixed strings and the input itself through it. Only dak::Error may escape.
// Mutations edit the JSON values where the input parses (json_mutator.h).
// dak-fuzz-sources: core/bpe_tokenizer.cc core/pretokenizer.cc core/tokenizer_config.cc
// dak-fuzz-sources: core/sentencepiece_tokenizer.cc core/gguf.cc core/utf8_text.cc
// dak-fuzz-libs: pcre2-8 sentencepiece
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/bpe_tokenizer.h"
#include "core/error.h"
// Half the mutations stay byte-level: the input is also the text encoded (UTF-8 and regex edge cases).
#define DAK_FUZZ_BYTE_MUTATION_ONE_IN 2
#include "json_mutator.h"

namespace {

void round_trip(const dak::Tokenizer& tok, std::string_view text) {
  try {
    const std::vector<int32_t> ids = tok.encode(text, /*allow_bos=*/true);
    (void)tok.decode(ids);
    (void)tok.decode(ids, /*skip_special=*/true);
  } catch (const dak::Error&) {
    // Invalid UTF-8 text, a regex that gives up, text NFC would change: all reported errors.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<dak::Tokenizer> tok;
  try {
    tok = dak::parse_hf_tokenizer_json(input, "fuzz/tokenizer.json");
  } catch (const dak::Error&) {
    return 0;
  }
  for (std::string_view s : {"", "Hello, world! 123  x", "<|im_start|>user\nHi<|im_end|>", "caf\xC3\xA9 \xF0\x9F\x98\x80",
                             "ab\xFF"}) {
    round_trip(*tok, s);
  }
  round_trip(*tok, input.substr(0, 4096));
  return 0;
}
