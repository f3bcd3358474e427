// SentencePiece tokenizers through libsentencepiece: from a tokenizer.model file, or from a
// GGUF vocabulary of type "llama" (tokens, scores and token types turned into a
// SentencePiece ModelProto: a BPE model with identity normalization, as llama.cpp's SPM
// tokenizer treats it).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/tokenizer.h"

namespace dak {

/// SentencePiece from a serialized ModelProto held in memory. `source` names it in errors.
/// BOS/EOS come from the model's <s>/</s> control pieces; add_bos defaults to true when the
/// model has a BOS piece (HF LlamaTokenizer, llama.cpp), and tokenizer_config.json next to a
/// file overrides both (load_sentencepiece). Throws dak::Error when the proto is invalid.
std::unique_ptr<Tokenizer> load_sentencepiece_proto(std::string_view serialized, const std::string& source);

/// SentencePiece from GGUF metadata with tokenizer.ggml.model == "llama": tokens, scores,
/// token_type, add_space_prefix, bos/eos ids, add_bos_token, chat template. Throws
/// dak::Error naming the key when one is missing or inconsistent.
std::unique_ptr<Tokenizer> load_gguf_sentencepiece(const GgufFile& gguf);

}  // namespace dak
