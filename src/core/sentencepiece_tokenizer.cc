#include "core/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <cstring>

#include "core/error.h"
#include "core/gguf.h"
#include "core/pretokenizer.h"
#include "core/tokenizer_config.h"

namespace dak {

namespace {

// SentencePiece's whitespace symbol U+2581.
constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";

std::string replace_space_symbol(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
      out += ' ';
      i += kSpaceSymbol.size();
    } else {
      out += piece[i++];
    }
  }
  return out;
}

// "<0x41>" -> 0x41.
std::optional<uint8_t> byte_piece_value(std::string_view p) {
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  int hi = hex(p[3]), lo = hex(p[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

/// SentencePiece model wrapped as a dak Tokenizer.
///
/// encode: control pieces written literally (e.g. "<s>", "</s>") are split out first and
/// map to their ids (as HF's tokenizers do for special tokens); SentencePiece encodes the
/// text between them. decode: done here rather than by SentencePiece so that a cut
/// sequence yields its raw bytes (byte-fallback pieces are bytes, U+2581 is a space, the
/// leading space of the first piece is dropped when the model adds a dummy prefix, as
/// SentencePiece's decoder does), control pieces render as their text unless skipped.
class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, std::string source)
      : sp_(std::move(sp)), source_(std::move(source)) {
    const int n = sp_->GetPieceSize();
    surface_.resize(n);
    kind_.resize(n, Kind::kText);
    for (int id = 0; id < n; ++id) {
      const std::string& piece = sp_->IdToPiece(id);
      if (sp_->IsControl(id)) {
        kind_[id] = Kind::kControl;
        surface_[id] = piece;
        control_.add({piece, id, false, false});
      } else if (sp_->IsByte(id) && byte_piece_value(piece)) {
        kind_[id] = Kind::kByte;
        surface_[id] = std::string(1, static_cast<char>(*byte_piece_value(piece)));
      } else {
        surface_[id] = replace_space_symbol(piece);
      }
    }
    std::vector<std::string> pieces;
    if (sp_->Encode("a", &pieces).ok() && !pieces.empty()) {
      strip_leading_space_ = pieces[0].compare(0, kSpaceSymbol.size(), kSpaceSymbol) == 0;
    }
    bos_id_ = sp_->bos_id();
    add_bos_ = bos_id_ >= 0;
    eos_ids_ = collect_eos_ids(sp_->eos_id(), {}, n, [this](std::string_view t) { return piece_id(t); });
  }

  std::vector<int32_t> encode(std::string_view text, bool allow_bos) const override {
    check_utf8(text, "the text to encode", source_, "pass UTF-8 text, or token ids with --prompt-ids");
    std::vector<int32_t> out;
    if (allow_bos && add_bos_ && bos_id_ >= 0) out.push_back(bos_id_);
    std::vector<int> ids;
    for (const auto& seg : control_.split(text)) {
      if (seg.id >= 0) {
        out.push_back(seg.id);
        continue;
      }
      auto status = sp_->Encode(seg.text, &ids);
      if (!status.ok()) fail("SentencePiece failed to encode: " + status.ToString(), source_, "");
      out.insert(out.end(), ids.begin(), ids.end());
    }
    if (allow_bos) out.insert(out.end(), suffix_ids_.begin(), suffix_ids_.end());
    return out;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    bool at_start = true;
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) {
        fail("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")",
             source_, "pass ids produced by this model's tokenizer");
      }
      if (kind_[id] == Kind::kControl) {
        if (!skip_special) out += surface_[id];
        continue;
      }
      std::string_view s = surface_[id];
      if (at_start && strip_leading_space_ && kind_[id] == Kind::kText && !s.empty() && s[0] == ' ') s.remove_prefix(1);
      if (!surface_[id].empty()) at_start = false;
      out += s;
    }
    return out;
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(surface_.size()); }
  const std::string& source() const override { return source_; }

  /// Id of a piece, or nullopt (PieceToId answers unk for unknown pieces).
  std::optional<int32_t> piece_id(std::string_view piece) const {
    const int id = sp_->PieceToId(piece);
    if (id < 0 || id >= vocab_size() || sp_->IdToPiece(id) != piece) return std::nullopt;
    return id;
  }

  /// Applies what tokenizer_config.json / generation_config.json say.
  void apply_config(const HfTokenizerConfig& cfg) {
    if (cfg.bos_token) bos_id_ = piece_id(*cfg.bos_token).value_or(bos_id_);
    int64_t eos = sp_->eos_id();
    if (cfg.eos_token) eos = piece_id(*cfg.eos_token).value_or(eos);
    std::vector<int64_t> ignored;
    eos_ids_ = collect_eos_ids(eos, cfg.generation_eos_ids, vocab_size(),
                               [this](std::string_view t) { return piece_id(t); }, &ignored);
    add_notice(ignored_eos_notice(ignored, "generation_config.json's eos_token_id", vocab_size()));
    if (cfg.add_bos_token) add_bos_ = *cfg.add_bos_token && bos_id_ >= 0;
    if (cfg.add_eos_token.value_or(false)) {
      check_add_eos(eos, cfg.eos_token, source_);
      suffix_ids_ = {int32_t(eos)};
      add_notice(suffix_notice({surface_[size_t(eos)]}, "tokenizer_config.json's add_eos_token"));
    }
    if (cfg.chat_template) {
      chat_template_ = cfg.chat_template;
      chat_template_source_ = cfg.chat_template_source;
    }
  }

  /// Sets the specials from GGUF metadata (ids already range-checked), and the chat template with where
  /// it was read (chat_template_source()).
  void set_specials(int32_t bos, std::vector<int32_t> eos_ids, bool add_bos, std::optional<std::string> tmpl,
                    std::string tmpl_source) {
    bos_id_ = bos;
    eos_ids_ = std::move(eos_ids);
    add_bos_ = add_bos && bos >= 0;
    chat_template_source_ = tmpl ? std::move(tmpl_source) : std::string();
    chat_template_ = std::move(tmpl);
  }

 private:
  enum class Kind : uint8_t { kText, kControl, kByte };
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string source_;
  std::vector<std::string> surface_;  // id -> decoded bytes (controls: their text)
  std::vector<Kind> kind_;
  AddedTokenMatcher control_;
  bool strip_leading_space_ = false;
};

std::unique_ptr<SentencePieceTokenizer> make_from_proto(std::string_view serialized, const std::string& source) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  auto status = sp->LoadFromSerializedProto(serialized);
  if (!status.ok()) {
    // The library's message names its own source line and call ("./src/sentencepiece_processor.cc(232)
    // [model_proto->ParseFromArray(...)]", the trial of session 27); say what it means instead.
    std::string why = status.message() ? status.message() : "";
    if (serialized.empty()) {
      why = "the file is empty";
    } else if (why.find("ParseFromArray") != std::string::npos) {
      why = "its bytes are not a SentencePiece model protobuf (another kind of file, or a damaged one)";
    } else if (const size_t bracket = why.find(") ["); why.rfind("./", 0) == 0 && bracket != std::string::npos) {
      why = why.substr(bracket + 3, why.size() - bracket - 3 - (why.back() == ']' ? 1 : 0));
    }
    // A GGUF file's vocabulary (source "... (tokenizer.ggml.* as SentencePiece)") has no tokenizer.model
    // to restore (trial of session 50).
    const bool gguf = source.find("tokenizer.ggml.") != std::string::npos;
    fail("not a valid SentencePiece model: " + why, source,
         gguf ? "the GGUF file's tokenizer metadata is damaged or incomplete: re-convert or re-download the file, "
                "or pass token ids with --prompt-ids"
              : "restore tokenizer.model from the model's repository, or pass token ids with --prompt-ids");
  }
  if (sp->GetPieceSize() <= 0) fail("the SentencePiece model has no pieces", source, "restore the file");
  return std::make_unique<SentencePieceTokenizer>(std::move(sp), source);
}

// ---- protobuf wire format (protobuf.dev/programming-guides/encoding) for the ModelProto
// of sentencepiece_model.proto; only the fields dak sets.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void put_key(std::string& out, uint32_t field, uint32_t wire) { put_varint(out, (uint64_t{field} << 3) | wire); }
void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}
void put_uint(std::string& out, uint32_t field, uint64_t v) {
  put_key(out, field, 0);
  put_varint(out, v);
}
void put_float(std::string& out, uint32_t field, float f) {
  put_key(out, field, 5);
  char b[4];
  std::memcpy(b, &f, 4);  // little-endian hosts only (x86-64, aarch64)
  out.append(b, 4);
}

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece_proto(std::string_view serialized, const std::string& source) {
  return make_from_proto(serialized, source);
}

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file) {
  auto tok = make_from_proto(read_text_file(model_file), model_file.string());
  tok->apply_config(read_tokenizer_config(model_file.parent_path()));
  return tok;
}

std::unique_ptr<Tokenizer> load_gguf_sentencepiece(const GgufFile& gguf) {
  const std::string source = gguf.path().string();
  const auto tokens = gguf.get_string_array("tokenizer.ggml.tokens");
  const auto n = static_cast<int64_t>(tokens.size());
  std::vector<double> scores(tokens.size(), 0.0);
  if (gguf.find("tokenizer.ggml.scores")) scores = gguf.get_float_array("tokenizer.ggml.scores");
  std::vector<int64_t> types(tokens.size(), 1);
  if (gguf.find("tokenizer.ggml.token_type")) types = gguf.get_int_array("tokenizer.ggml.token_type");
  if (scores.size() != tokens.size() || types.size() != tokens.size()) {
    fail("tokenizer.ggml.scores / token_type do not have one entry per token (" + std::to_string(n) + ")", source,
         "restore the file");
  }
  std::string proto;
  bool has_bytes = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    int64_t type = types[i];
    if (type < 1 || type > 6) type = 1;
    has_bytes |= type == 6;
    std::string piece;
    put_bytes(piece, 1, tokens[i]);
    put_float(piece, 2, static_cast<float>(scores[i]));
    put_uint(piece, 3, static_cast<uint64_t>(type));
    put_bytes(proto, 1, piece);
  }
  std::string trainer;
  put_uint(trainer, 3, 2);  // model_type = BPE (llama.cpp's SPM merges by piece score)
  put_uint(trainer, 35, has_bytes ? 1 : 0);  // byte_fallback
  put_bytes(proto, 2, trainer);
  std::string normalizer;
  put_bytes(normalizer, 1, "identity");
  put_uint(normalizer, 3, gguf.opt_bool("tokenizer.ggml.add_space_prefix").value_or(true) ? 1 : 0);
  put_uint(normalizer, 4, gguf.opt_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(false) ? 1 : 0);
  put_uint(normalizer, 5, 1);  // escape_whitespaces
  put_bytes(proto, 3, normalizer);

  auto tok = make_from_proto(proto, source + " (tokenizer.ggml.* as SentencePiece)");
  auto id_key = [&](const char* key, int64_t fallback) -> int64_t {
    auto v = gguf.opt_int(key);
    if (!v) return fallback;
    if (*v < 0 || *v >= n) fail("token id " + std::to_string(*v) + " is outside the vocabulary", source + ": " + key, "restore the file");
    return *v;
  };
  const int64_t bos = id_key("tokenizer.ggml.bos_token_id", tok->bos_id());
  const int64_t eos = id_key("tokenizer.ggml.eos_token_id", -1);
  std::vector<int64_t> extra;
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (int64_t id = id_key(key, -1); id >= 0) extra.push_back(id);
  }
  auto eos_ids = collect_eos_ids(eos, extra, tok->vocab_size(), [&tok](std::string_view t) { return tok->piece_id(t); });
  tok->set_specials(static_cast<int32_t>(bos), std::move(eos_ids),
                    gguf.opt_bool("tokenizer.ggml.add_bos_token").value_or(true),
                    gguf.opt_string("tokenizer.chat_template"), source + ": metadata tokenizer.chat_template");
  apply_gguf_add_eos(*tok, gguf, eos, source);
  return tok;
}

}  // namespace dak
