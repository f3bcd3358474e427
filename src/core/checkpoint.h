// Checkpoint: a model's config and tensors, memory-mapped, under canonical Hugging Face names.
//
// Sources:
//   - a HF folder: config.json + model.safetensors, or sharded model-0000x-of-0000y.safetensors
//     listed by model.safetensors.index.json (weight_map), bf16/fp16/fp32;
//   - a single .safetensors file next to a config.json;
//   - a .gguf file (v3, llama-architecture metadata): tensors renamed to HF names
//     (blk.N.attn_q.weight -> model.layers.N.self_attn.q_proj.weight, token_embd.weight ->
//     model.embed_tokens.weight, output.weight -> lm_head.weight, ...), shapes reversed to
//     HF row-major order, and the Q/K row permutation that llama.cpp's converter applies
//     (convert_hf_to_gguf.py LlamaModel.permute) undone by read_f32.
// Tensor data stays in the mapping until read_f32 decodes it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/model_config.h"

namespace dak {

class GgufFile;

struct TensorInfo {
  std::string name;            // canonical HF name, e.g. "model.layers.0.self_attn.q_proj.weight"
  std::string file_name;       // name inside the file (GGUF: "blk.0.attn_q.weight")
  std::string file;            // file it lives in (shards differ)
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // row-major, outermost first: Linear weights are [out, in]
  uint64_t bytes = 0;          // storage bytes in the file
  const uint8_t* data = nullptr;  // into the memory map
  int64_t gguf_rope_heads = 0; // > 0: rows are in GGUF's interleaved-RoPE order for this many heads

  int64_t num_elements() const;
};

/// A tensor of a safetensors checkpoint in a dtype dak does not read (SafetensorsUnreadTensor): not
/// in Checkpoint::tensors(); refused only where the model needs it, else ignored (inspect lists it).
struct UnreadTensor {
  std::string name;            // as in the file
  std::string dtype;           // e.g. "I64", "I32", "F8_E4M3"
  std::vector<int64_t> shape;  // as in the file
  std::string file;            // file it lives in
};

class Checkpoint {
 public:
  /// Opens a HF folder, a .safetensors file or a .gguf file. Throws dak::Error on anything
  /// malformed (names the file and the tensor/field) or unsupported, naming what is at fault when a
  /// file cannot be reached: every shard the index lists but the folder lacks, or the folder or file
  /// this user may not enter or read (path_error).
  static std::unique_ptr<Checkpoint> open(const std::filesystem::path& path);
  virtual ~Checkpoint();

  const ModelConfig& config() const { return config_; }
  std::string_view format() const { return format_; }   // "safetensors" or "gguf"
  const std::filesystem::path& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  /// Tensors in dtypes dak does not read, which the model does not use (UnreadTensor); empty for GGUF.
  const std::vector<UnreadTensor>& unread_tensors() const { return unread_; }
  uint64_t total_bytes() const;

  const TensorInfo* find(std::string_view name) const;
  /// Throws dak::Error "missing tensor NAME" naming the checkpoint when absent.
  const TensorInfo& get(std::string_view name) const;

  /// Decodes a tensor to fp32 in HF layout (GGUF Q/K permutation undone).
  std::vector<float> read_f32(const TensorInfo& t) const;

  /// Non-null for GGUF checkpoints (tokenizer vocabulary, chat template, metadata).
  virtual const GgufFile* gguf() const { return nullptr; }

 protected:
  Checkpoint() = default;
  ModelConfig config_;
  std::string format_;
  std::filesystem::path path_;
  std::vector<TensorInfo> tensors_;
  std::vector<UnreadTensor> unread_;
};

/// A weight value that is not finite: the tensor (of the checkpoint searched), the element's index
/// (row-major, fp32 HF layout) and the value (nan or inf).
struct NonFiniteWeight {
  const TensorInfo* tensor = nullptr;
  int64_t element = 0;
  float value = 0;
};

/// The first weight of `ckpt` (in the order of its tensors) that holds a value that is not finite;
/// nullopt when every value is finite. Reads every tensor (the error path of a run whose logits were
/// not finite: trial of session 50, where an f32 weight's NaN was reported only as "logits are not
/// finite"). Throws what read_f32 throws for a damaged quantized block.
std::optional<NonFiniteWeight> first_non_finite_weight(const Checkpoint& ckpt);

/// The one .gguf file directly inside folder `dir`, nullopt when there is none. Throws dak::Error
/// when there are several, naming them (which one is meant is the user's choice; `lacking` ends the
/// message, e.g. "no safetensors weights"), and path_error when `dir` cannot be listed.
std::optional<std::filesystem::path> sole_gguf_in(const std::filesystem::path& dir, const std::string& lacking);

/// The folder that holds `path`, as written: its parent, or "." for a bare file name (what a fix
/// names as the model folder: "m/base" for "m/base/tokenizer.json").
std::filesystem::path folder_of(const std::filesystem::path& path);

/// True when `path` is a folder that Checkpoint::open refuses for having no weights at all, judged
/// as it looks, in its order: neither model.safetensors.index.json nor model.safetensors, and a
/// listing without error that has no entry named *.gguf. False for anything else (a file, a folder
/// that cannot be listed, ...). Throws dak::Error where open's examine_path does (a dangling link
/// named model.safetensors: "fix or remove the link"). Callers use it to tell a config-only
/// folder from a broken checkpoint before opening it.
bool folder_without_weights(const std::filesystem::path& path);

/// Throws dak::Error when `dir` holds a PEFT (LoRA) adapter (adapter_config.json) and no config.json:
/// an adapter is not a model; the fix says how to merge it into its base model (named from
/// base_model_name_or_path). Returns for any other folder.
void refuse_peft_adapter(const std::filesystem::path& dir);

/// Throws dak::Error when `path` is a Hugging Face cache folder (models--org--name: a snapshots/
/// folder of downloads by revision) given in place of the model folder, with the snapshot folder to
/// give (the one refs/main names where there are several). Returns for any other path.
void refuse_hf_cache_root(const std::filesystem::path& path);

/// The name of a weight file in the folder `path` in a format dak does not read (PyTorch pickles
/// *.bin / *.pt / *.pth / *.ckpt, TensorFlow *.h5, Flax *.msgpack; the first in name order), for
/// the no-weights refusals to name with the conversion; "" when there is none or `path` is no
/// listable folder. Never throws.
std::string unsupported_weight_file_in(const std::filesystem::path& path);

/// For a folder `path` without model.safetensors or model.safetensors.index.json: throws dak::Error
/// when it holds safetensors weights that Checkpoint::open reads only otherwise: shards named as
/// transformers names them ("model-00001-of-00002.safetensors") without their index, or a file of
/// another name ("consolidated.safetensors", read when given itself). `name` is how the message
/// names the folder, `where` the error's where. Returns when there are none.
void refuse_unread_safetensors(const std::filesystem::path& path, const std::string& name, const std::string& where);

/// Fix of a refusal for a folder whose weights are all in a format dak does not read (`file`, from
/// unsupported_weight_file_in): convert them to safetensors with transformers.
std::string convert_weights_fix(const std::string& file);

/// When `path` is a model folder with safetensors weights (model.safetensors, or the shards of
/// model.safetensors.index.json), which Checkpoint::open uses, and .gguf files beside them, which
/// it ignores: a notice (one line, without "dak: notice: ") naming the weights used and the files
/// ignored, and how to choose (a file's own path as the model picks it). Also when the folder holds
/// one .gguf, which Checkpoint::open then runs, beside safetensors files of other names (e.g.
/// weights.safetensors), which it ignores; and when model.safetensors (unsharded) is read beside
/// safetensors files of other names (extra weights, a LoRA adapter), which it ignores; and when
/// model.safetensors lies beside an index that does not list it (the index's shards are used, as in
/// vLLM; transformers would load model.safetensors). "" otherwise.
std::string mixed_weights_notice(const std::filesystem::path& path);

}  // namespace dak
