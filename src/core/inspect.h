// Human- and machine-readable summaries of a Checkpoint, for `dak inspect`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dak {

class Checkpoint;

/// Multi-line text: path and format, architecture and main config values (layers, hidden,
/// intermediate, heads / kv heads / head_dim, vocab, context, norm eps, rope, tying, biases,
/// bos / eos), then one row per tensor (canonical HF name, the name inside the
/// file when it differs, the shard file when there are several, dtype, shape outermost first,
/// storage bytes), then totals: tensor count, total bytes, bytes per dtype, parameter count. The
/// tensors come in one order whatever their order in the files: the embeddings, then the tensors of
/// each layer by layer number (2 before 10) and name, then the rest (final norm, LM head) by name.
std::string inspect_text(const Checkpoint& ckpt);

/// The same as JSON, the tensors in the same order: {"path", "format", "config"
/// (ModelConfig::to_json()), "tensors": [{"name", "file_name", "file", "dtype", "shape", "bytes",
/// "parameters"}], "totals": {"tensor_count", "total_bytes", "parameter_count", "bytes_per_dtype":
/// {dtype: bytes}}}; GGUF files add "gguf": {"version", "metadata": {key: value}} with arrays
/// summarized by their length.
nlohmann::json inspect_json(const Checkpoint& ckpt);

}  // namespace dak
