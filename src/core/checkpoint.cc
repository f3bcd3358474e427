// Checkpoint::open for HF folders, single safetensors files and GGUF files; the expected
// tensor set of each architecture (names and shapes from the HF modeling files) is checked
// at open so that a missing or misshaped tensor is reported before any compute starts.
#include "core/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <regex>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/tensor_names.h"
#include "core/gguf.h"
#include "core/gguf_config.h"
#include "core/json_file.h"
#include "core/safetensors.h"

namespace dak {

namespace fs = std::filesystem;

namespace {

const char* const kFixOpen =
    "pass a Hugging Face model folder (config.json + *.safetensors), a .safetensors file with "
    "config.json beside it, or a .gguf file";

class SafetensorsCheckpoint final : public Checkpoint {
 public:
  SafetensorsCheckpoint(const fs::path& path, const fs::path& config_dir,
                        std::vector<fs::path> files, const SafetensorsIndex* index);

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
};

class GgufCheckpoint final : public Checkpoint {
 public:
  explicit GgufCheckpoint(const fs::path& path);
  const GgufFile* gguf() const override { return file_.get(); }

 private:
  std::unique_ptr<GgufFile> file_;
};

using Shape = std::vector<int64_t>;

/// The tensors a checkpoint of `c` must contain, with their HF shapes
/// (modeling_llama.py / modeling_mistral.py / modeling_qwen2.py / modeling_opt.py).
std::vector<std::pair<std::string, Shape>> expected_tensors(const ModelConfig& c) {
  std::vector<std::pair<std::string, Shape>> e;
  const TensorNames& nm = tensor_names(c.arch);
  const int64_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), ff = c.intermediate_size;
  const bool layer_norm = c.norm == NormKind::kLayerNorm;
  // Norms: RMSNorm has a weight; LayerNorm a weight and a bias unless not elementwise-affine.
  auto add_norm = [&](const std::string& name) {
    if (!c.norm_elementwise_affine) return;
    e.push_back({name + ".weight", {h}});
    if (layer_norm) e.push_back({name + ".bias", {h}});
  };
  auto add_linear = [&](const std::string& name, Shape shape, bool bias) {
    e.push_back({name + ".weight", shape});
    if (bias) e.push_back({name + ".bias", {shape[0]}});
  };
  e.push_back({std::string(nm.embed) + ".weight", {c.vocab_size, c.embed_dim()}});
  if (*nm.positions) {
    // OPTLearnedPositionalEmbedding holds max_position_embeddings + 2 rows (fixed offset 2).
    e.push_back({std::string(nm.positions) + ".weight", {c.max_position_embeddings + 2, h}});
  }
  if (*nm.project_in && c.embed_dim() != h) {
    add_linear(nm.project_in, {h, c.embed_dim()}, false);
    add_linear(nm.project_out, {c.embed_dim(), h}, false);
  }
  // OPT with post-LN (do_layer_norm_before = false) has no final layer norm.
  if (c.arch != Arch::kOpt || c.do_layer_norm_before) add_norm(nm.final_norm);
  if (!c.tie_word_embeddings) e.push_back({std::string(nm.lm_head) + ".weight", {c.vocab_size, c.embed_dim()}});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("{}{}.", nm.layer, l);
    add_norm(p + nm.attn_norm);
    add_norm(p + nm.mlp_norm);
    add_linear(p + nm.q, {q, h}, c.qkv_bias);
    add_linear(p + nm.k, {kv, h}, c.qkv_bias);
    add_linear(p + nm.v, {kv, h}, c.qkv_bias);
    add_linear(p + nm.o, {h, q}, c.o_bias);
    if (*nm.gate) add_linear(p + nm.gate, {ff, h}, c.mlp_bias);
    add_linear(p + nm.up, {ff, h}, c.mlp_bias);
    add_linear(p + nm.down, {h, ff}, c.mlp_bias);
  }
  return e;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

bool is_shard_name(const std::string& name);

/// config.json's quantization_config, said for a message: " (config.json's quantization_config:
/// quant_method 'gptq')", " (config.json has a quantization_config)" without a method; "" when it has
/// none or the file cannot be read here (the config's own reader reports that).
std::string quantization_of(const fs::path& config_file) {
  try {
    const nlohmann::json j = read_json_file(config_file, "the model config", "");
    const auto q = j.find("quantization_config");
    if (q == j.end() || !q->is_object()) return "";
    const auto m = q->find("quant_method");
    return m != q->end() && m->is_string()
               ? " (config.json's quantization_config: quant_method '" + m->get<std::string>() + "')"
               : std::string(" (config.json has a quantization_config)");
  } catch (const Error&) {
    return "";
  }
}

/// Renames tensors saved without the "model." prefix of the *ForCausalLM wrapper (e.g.
/// facebook/opt-* stores "decoder.layers.0..."), then checks every expected tensor is present
/// with its expected shape. `gguf`: the config came from the file's own metadata (no config.json
/// to blame: the fix says so).
void check_tensors(std::vector<TensorInfo>& tensors, const ModelConfig& c, const std::string& where, bool gguf,
                   const std::vector<UnreadTensor>& unread = {}, const std::string& quantized = "") {
  const auto expected = expected_tensors(c);
  std::map<std::string_view, const Shape*> want;
  for (const auto& [name, shape] : expected) want[name] = &shape;
  std::set<std::string, std::less<>> names;
  for (const TensorInfo& t : tensors) names.insert(t.name);
  for (TensorInfo& t : tensors) {
    const std::string prefixed = "model." + t.name;
    if (!t.name.starts_with("model.") && want.count(prefixed) && !names.count(prefixed)) {
      names.erase(t.name);
      t.name = prefixed;
      names.insert(t.name);
    }
  }
  std::map<std::string_view, const TensorInfo*> have;
  for (const TensorInfo& t : tensors) have[t.name] = &t;
  // A config.json without some size keys took the transformers defaults (ModelConfig::
  // defaulted_sizes): a mismatch then most likely comes from those defaults, so say so.
  std::string defaulted, fix = gguf ? "the GGUF file's metadata does not match its tensors: re-convert or re-download "
                                     "the file"
                                   : "check that config.json belongs to this checkpoint";
  if (!c.defaulted_sizes.empty()) {
    const std::string keys = c.defaulted_sizes_text();
    const bool one = c.defaulted_sizes.size() == 1;
    defaulted = fmt::format(" (config.json has no {}, so {} the transformers default{} of model_type {})", keys,
                            one ? "it took" : "they took", one ? "" : "s", arch_name(c.arch));
    fix = "add " + keys + " to config.json with the checkpoint's value" + (one ? "" : "s");
  }
  for (const auto& [name, shape] : expected) {
    const auto it = have.find(name);
    if (it == have.end()) {
      std::string shown = "'" + name + "'", after = defaulted;
      if (gguf) {
        // The file's own names: the GGUF one, and the layer tensors of the file dak does not know
        // (trial 28: a file with blk.5.attn_z.weight in place of blk.5.attn_q.weight).
        if (const std::string file_name = gguf_name_from_hf(name); !file_name.empty())
          shown = "'" + file_name + "' ('" + name + "' in Hugging Face terms)";
        std::vector<std::string> unknown;
        for (const TensorInfo& t : tensors)
          if (t.name.starts_with("blk.")) unknown.push_back("'" + t.name + "'");
        if (!unknown.empty())
          after = fmt::format("; the file has {} layer tensor{} dak does not know: {}", unknown.size(),
                              unknown.size() == 1 ? "" : "s",
                              fmt::join(unknown.begin(), unknown.begin() + std::min<size_t>(unknown.size(), 3), ", "));
      }
      std::string missing_fix =
          gguf || !defaulted.empty()
              ? fix
              : "check that the checkpoint is complete (all shards present) and matches its config";
      if (!gguf) {
        // In a dtype dak does not read: the tensor itself, or a quantized layout in its place (GPTQ /
        // AWQ: <module>.qweight int32 beside scales and zeros; trial of session 50: both were told to
        // convert to bf16 with model.to(torch.bfloat16), which changes neither).
        const std::string module = name.ends_with(".weight") ? name.substr(0, name.size() - 7) : name;
        const UnreadTensor* same = nullptr;
        const UnreadTensor* in_place = nullptr;
        for (const UnreadTensor& u : unread) {
          if (u.name == name || "model." + u.name == name) same = &u;
          // GPTQ / AWQ name qweight beside g_idx, scales and zeros: qweight is the one to show.
          if ((u.name.starts_with(module + ".") || ("model." + u.name).starts_with(module + ".")) &&
              (!in_place || u.name.ends_with(".qweight")))
            in_place = &u;
        }
        const std::string read_what =
            "dak reads bf16, fp16 and fp32 safetensors weights and GGUF files (quantized GGUF included)";
        if (same && quantized.empty()) {
          fail(fmt::format("tensor '{}' has dtype {}, which dak does not support (BF16, F16 and F32 only)", same->name,
                           same->dtype),
               same->file,
               "convert the checkpoint to bf16, fp16 or fp32 (e.g. model.to(torch.bfloat16) and save_pretrained)");
        }
        if (same) {  // the weight itself, stored quantized (bitsandbytes int8, fp8)
          fail(fmt::format("tensor '{}' is stored as {}: the checkpoint holds quantized weights{}", same->name,
                           same->dtype, quantized),
               same->file, read_what + ": use the model's unquantized release, or a GGUF conversion of it");
        }
        if (in_place) {  // another layout in its place (GPTQ / AWQ qweight)
          fail(fmt::format("missing tensor '{}' ({} model, {} layers): the checkpoint holds quantized weights "
                           "('{}', {}) in its place{}",
                           name, arch_name(c.arch), c.num_layers, in_place->name, in_place->dtype, quantized),
               where, read_what + ": use the model's unquantized release, or a GGUF conversion of it");
        }
        // A quantization_config alone blames nothing: the completeness fix below stands (the session-50
        // re-trial: an fp8 "dynamic" config over f32 weights missing model.norm.weight).
        // What the files hold instead (trial of session 50): the name with a prefix before it (a PEFT
        // model saved unmerged: "base_model.model.model.embed_tokens.weight"), or one shard given alone.
        for (const TensorInfo& t : tensors) {
          if (t.name.size() > name.size() && t.name.ends_with("." + name)) {
            const std::string prefix = t.name.substr(0, t.name.size() - name.size());
            after += fmt::format("; the checkpoint has '{}': its tensor names start with '{}'", t.name, prefix);
            missing_fix = prefix.starts_with("base_model.")
                              ? "this looks like a PEFT (LoRA) model saved unmerged: merge it into the base model "
                                "(model.merge_and_unload()) and save_pretrained the result"
                              : "save the model with transformers' save_pretrained (its tensor names have no '" +
                                    prefix + "' prefix)";
            break;
          }
        }
        const std::string file = fs::path(where).filename().string();
        if (is_shard_name(file) && missing_fix.starts_with("check that")) {
          after += fmt::format("; {} is one shard of a sharded checkpoint", file);
          missing_fix = "give the folder that holds all the shards and model.safetensors.index.json: --model " +
                        shell_word(folder_of(where).string());
        }
      }
      fail(fmt::format("missing tensor {} ({} model, {} layers){}", shown, arch_name(c.arch), c.num_layers, after),
           where, missing_fix);
    }
    const TensorInfo& t = *it->second;
    if (t.shape != shape) {
      // A k / v projection whose rows disagree where config.json had no num_key_value_heads: the class
      // default (llama's: as many as the heads) is the likely cause (trial of session 50: a GQA
      // checkpoint with a config that omits the key).
      const bool kv_rows = c.kv_heads_defaulted && defaulted.empty() && !gguf && t.shape.size() == 2 &&
                           shape.size() == 2 && t.shape[1] == shape[1] &&
                           (name.find(".k_proj.") != std::string::npos || name.find(".v_proj.") != std::string::npos);
      fail(fmt::format("tensor '{}'{} has shape {}, but the config needs {}{}", name,
                       t.file_name != t.name ? " ('" + t.file_name + "' in the file)" : "", shape_str(t.shape),
                       shape_str(shape),
                       kv_rows ? fmt::format(" (config.json has no num_key_value_heads, so it took the transformers "
                                             "default of model_type {}: {})",
                                             arch_name(c.arch), c.num_kv_heads)
                               : defaulted),
           t.file,
           kv_rows ? fmt::format("add num_key_value_heads to config.json with the checkpoint's value ({} rows / "
                                 "head_dim {} = {} here)",
                                 t.shape[0], c.head_dim, c.head_dim > 0 ? t.shape[0] / c.head_dim : 0)
                   : fix);
    }
  }
  // Layers beyond the config's count would be silently ignored: a config that does not match.
  const std::string layer_prefix = tensor_names(c.arch).layer;
  for (const TensorInfo& t : tensors) {
    if (!t.name.starts_with(layer_prefix)) continue;
    // "<prefix><digits>.": strtoll alone took "-1" for layer -1 and "x" for layer 0.
    const char* idx = t.name.c_str() + layer_prefix.size();
    const size_t digits = std::strspn(idx, "0123456789");
    if (digits == 0 || digits > 9 || idx[digits] != '.') {
      fail(fmt::format("tensor '{}' has no valid layer index after '{}'", t.name, layer_prefix), t.file,
           "layer tensors are named " + layer_prefix + "<0..num_layers-1>.<name>; check the checkpoint");
    }
    const int64_t layer = std::strtoll(idx, nullptr, 10);
    if (layer >= c.num_layers) {
      // A GGUF file's own tensor name and metadata key (trial of session 50: the HF name and "the
      // config" were named for a file whose block_count was edited).
      if (gguf) {
        fail(fmt::format("tensor '{}' ('{}' in Hugging Face terms) belongs to layer {}, but the file's metadata "
                         "(block_count) says {} layer{}",
                         t.file_name, t.name, layer, c.num_layers, c.num_layers == 1 ? "" : "s"),
             t.file, "the GGUF file's metadata does not match its tensors: re-convert or re-download the file");
      }
      fail(fmt::format("tensor '{}' belongs to layer {}, but the config has {} layer{}", t.name, layer,
                       c.num_layers, c.num_layers == 1 ? "" : "s"),
           t.file, "check that the config (num_hidden_layers) belongs to this checkpoint");
    }
  }
}

TensorInfo info_from(const SafetensorsTensor& st, const fs::path& file) {
  TensorInfo t;
  t.name = st.name;
  t.file_name = st.name;
  t.file = file.string();
  t.dtype = st.dtype;
  t.shape = st.shape;
  t.bytes = st.bytes;
  t.data = st.data;
  return t;
}

SafetensorsCheckpoint::SafetensorsCheckpoint(const fs::path& path, const fs::path& config_dir,
                                             std::vector<fs::path> files,
                                             const SafetensorsIndex* index) {
  format_ = "safetensors";
  path_ = path;
  const fs::path config_file = config_dir / "config.json";
  const fs::file_type config_type = examine_path(config_file);
  if (config_type == fs::file_type::not_found) {
    refuse_peft_adapter(config_dir);  // adapter_model.safetensors given: an adapter, not a model
    fail("config.json not found next to the safetensors weights", config_file.string(),
         "put the model's Hugging Face config.json in the same folder");
  }
  if (config_type != fs::file_type::regular) {
    fail("config.json is not a regular file (a folder?)", config_file.string(),
         "put the model's Hugging Face config.json in the same folder");
  }
  config_ = ModelConfig::from_hf_file(config_file);
  std::map<std::string, std::string, std::less<>> where;  // tensor -> shard, for duplicates
  const auto place = [&](const std::string& name, const fs::path& f) {
    if (auto [it, inserted] = where.emplace(name, f.string()); !inserted) {
      fail(fmt::format("tensor '{}' appears in two shards ({} and {})", name, fs::path(it->second).filename().string(),
                       f.filename().string()),
           path.string(), "re-download the checkpoint");
    }
  };
  for (const fs::path& f : files) {
    files_.push_back(SafetensorsFile::open(f));
    for (const SafetensorsTensor& st : files_.back()->tensors()) {
      place(st.name, f);
      tensors_.push_back(info_from(st, f));
    }
    for (const SafetensorsUnreadTensor& u : files_.back()->unread()) {
      place(u.name, f);
      unread_.push_back({u.name, u.dtype, u.shape, f.string()});
    }
  }
  if (index) {
    for (const auto& [name, shard] : index->weight_map) {
      const auto it = where.find(name);
      if (it == where.end() || fs::path(it->second).filename() != shard) {
        fail(fmt::format("tensor '{}' is listed in the index under shard '{}' but is not in it",
                         name, shard),
             path.string(), "re-download the checkpoint: the index and the shards disagree");
      }
    }
    // As in transformers, the index is authoritative: a tensor of a shard that it does not list is
    // not part of the model (it was used before, silently). One the model needs is an error.
    std::set<std::string, std::less<>> listed, needed;
    for (const auto& [name, shard] : index->weight_map) listed.insert(name);
    for (const auto& [name, shape] : expected_tensors(config_)) needed.insert(name);
    std::erase_if(unread_, [&](const UnreadTensor& t) { return !listed.count(t.name); });
    std::erase_if(tensors_, [&](const TensorInfo& t) {
      if (listed.count(t.name)) return false;
      if (needed.count(t.name) || needed.count("model." + t.name)) {
        fail(fmt::format("tensor '{}' is in shard '{}' but {} does not list it", t.name,
                         fs::path(t.file).filename().string(), "model.safetensors.index.json"),
             path.string(), "re-download the checkpoint: the index and the shards disagree");
      }
      return true;
    });
  }
  check_tensors(tensors_, config_, path.string(), false, unread_, quantization_of(config_file));
}

GgufCheckpoint::GgufCheckpoint(const fs::path& path) {
  format_ = "gguf";
  path_ = path;
  file_ = GgufFile::open(path);
  config_ = model_config_from_gguf(*file_);
  tensors_ = hf_tensors_from_gguf(*file_, config_);
  check_tensors(tensors_, config_, path.string(), true);
}

bool has_gguf_magic(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

// A safetensors file by its content: an 8-byte header length within the file, then '{' (the JSON
// header), as the format begins; whatever its name (trial of session 50: weights.bin).
bool has_safetensors_start(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  uint8_t head[9] = {};
  if (!in.read(reinterpret_cast<char*>(head), 9)) return false;
  uint64_t n = 0;
  std::memcpy(&n, head, 8);
  std::error_code ec;
  const uintmax_t size = fs::file_size(p, ec);
  return !ec && n >= 2 && n <= size - 8 && head[8] == '{';
}

std::unique_ptr<Checkpoint> open_sharded(const fs::path& shown, const fs::path& index_file) {
  const SafetensorsIndex index = SafetensorsIndex::read(index_file);
  const fs::path dir = index_file.parent_path();
  std::vector<fs::path> files;
  std::vector<std::string> missing;
  for (const std::string& s : index.shard_files()) {
    const fs::path f = dir / s;
    const fs::file_type type = examine_path(f);  // a folder on the way this user may not enter: named there
    if (type == fs::file_type::not_found) {
      missing.push_back(s);
    } else if (type != fs::file_type::regular) {
      fail(fmt::format("shard '{}' listed in {} is not a regular file (a folder, device, FIFO or socket?)", s,
                       index_file.filename().string()),
           f.string(), fmt::format("put the shard file {} there, or re-download the checkpoint", s));
    }
    files.push_back(f);
  }
  // Every missing shard at once (a download cut short lacks several), each by name: the fault is
  // theirs, not the index's.
  if (missing.size() == 1) {
    fail(fmt::format("shard '{}' listed in {} does not exist", missing[0], index_file.filename().string()),
         (dir / missing[0]).string(),
         fmt::format("download {} into {} (the index lists every shard the model needs), or re-download the "
                     "checkpoint",
                     missing[0], dir.string()));
  }
  if (!missing.empty()) {
    std::string names;
    for (size_t i = 0; i < missing.size() && i < 4; ++i) names += (i ? ", " : "") + missing[i];
    if (missing.size() > 4) names += fmt::format(" and {} more", missing.size() - 4);
    fail(fmt::format("{} of the {} shards listed in {} do not exist: {}", missing.size(), index.shard_files().size(),
                     index_file.filename().string(), names),
         dir.string(),
         fmt::format("download the missing shards into {} (the index lists every shard the model needs), or "
                     "re-download the checkpoint",
                     dir.string()));
  }
  return std::make_unique<SafetensorsCheckpoint>(shown, dir, std::move(files), &index);
}

}  // namespace

int64_t TensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Checkpoint::~Checkpoint() = default;

std::optional<fs::path> sole_gguf_in(const fs::path& dir, const std::string& lacking) {
  std::error_code ec;
  std::vector<fs::path> ggufs;
  for (const auto& ent : fs::directory_iterator(dir, ec)) {
    std::error_code fe;  // a folder named x.gguf or a dangling link is not a candidate (a trial finding)
    if (ent.path().extension() == ".gguf" && ent.is_regular_file(fe)) ggufs.push_back(ent.path());
  }
  if (ec) throw path_error(dir.string(), ec);
  if (ggufs.empty()) return std::nullopt;
  if (ggufs.size() == 1) return ggufs[0];
  std::sort(ggufs.begin(), ggufs.end());
  std::string names;
  for (size_t i = 0; i < ggufs.size() && i < 4; ++i) names += (i ? ", " : "") + ggufs[i].filename().string();
  if (ggufs.size() > 4) names += fmt::format(" and {} more", ggufs.size() - 4);
  fail(fmt::format("folder has {} .gguf files ({}) and {}", ggufs.size(), names, lacking), dir.string(),
       fmt::format("pass one of them, e.g. {}", ggufs[0].string()));
}

std::unique_ptr<Checkpoint> Checkpoint::open(const fs::path& path) {
  std::error_code ec;
  const fs::file_type type = examine_path(path);
  if (type == fs::file_type::not_found) fail("no such file or folder", path.string(), kFixOpen);
  if (type == fs::file_type::directory) {
    if (examine_path(path / "model.safetensors.index.json") != fs::file_type::not_found) {
      return open_sharded(path, path / "model.safetensors.index.json");
    }
    if (examine_path(path / "model.safetensors") != fs::file_type::not_found) {
      return std::make_unique<SafetensorsCheckpoint>(
          path, path, std::vector<fs::path>{path / "model.safetensors"}, nullptr);
    }
    // A folder this user may not list may hold a .gguf: sole_gguf_in says so, not "folder has no ... .gguf".
    if (std::optional<fs::path> gguf = sole_gguf_in(path, "no safetensors weights"))
      return std::make_unique<GgufCheckpoint>(*gguf);
    // An entry named *.gguf that is no file (a dangling link, a folder, a FIFO) is named as what it is,
    // not taken for "no .gguf" (the trial of session 27).
    std::vector<fs::path> named;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".gguf") named.push_back(it->path());
    }
    std::sort(named.begin(), named.end());
    for (const fs::path& entry : named) {
      const fs::file_type t = examine_path(entry);  // a dangling link or a loop: named there, with the fix
      if (t != fs::file_type::regular) {
        fail(fmt::format("the folder has no weights file: its '{}' is {}, not a GGUF file", entry.filename().string(),
                         t == fs::file_type::directory ? "a folder" : "a device, FIFO or socket"),
             entry.string(), "give a GGUF file, or a folder that holds one (or safetensors weights)");
      }
    }
    refuse_peft_adapter(path);
    refuse_unread_safetensors(path, "the folder", path.string());
    if (const std::string other = unsupported_weight_file_in(path); !other.empty()) {
      fail(fmt::format("folder has no model.safetensors, model.safetensors.index.json or .gguf, only {}", other),
           path.string(), convert_weights_fix(other));
    }
    refuse_hf_cache_root(path);
    fail("folder has no model.safetensors, model.safetensors.index.json or .gguf", path.string(), kFixOpen);
  }
  if (type != fs::file_type::regular) {
    fail("not a regular file (a device, FIFO or socket?)", path.string(), kFixOpen);
  }
  const std::string name = path.filename().string();
  if (path.extension() == ".gguf" && !has_gguf_magic(path) && has_safetensors_start(path)) {
    fail("not a GGUF file: its bytes begin as a safetensors file's (a header length, then JSON)", path.string(),
         "rename it to .safetensors (with the model's config.json beside it), or pass the model's GGUF file");
  }
  if (path.extension() == ".gguf" || has_gguf_magic(path)) {
    return std::make_unique<GgufCheckpoint>(path);
  }
  if (name.ends_with(".safetensors.index.json")) return open_sharded(path, path);
  if (path.extension() == ".safetensors" || (path.extension() != ".json" && has_safetensors_start(path))) {
    return std::make_unique<SafetensorsCheckpoint>(path, path.parent_path(),
                                                   std::vector<fs::path>{path}, nullptr);
  }
  fail("unrecognized checkpoint file (neither .gguf nor .safetensors)", path.string(), kFixOpen);
}

void refuse_peft_adapter(const fs::path& dir) {
  if (examine_path(dir / "adapter_config.json") != fs::file_type::regular ||
      examine_path(dir / "config.json") != fs::file_type::not_found)
    return;
  std::string base;
  try {
    const nlohmann::json j = read_json_file(dir / "adapter_config.json", "the adapter config", "");
    if (j.is_object() && j.contains("base_model_name_or_path") && j["base_model_name_or_path"].is_string())
      base = j["base_model_name_or_path"].get<std::string>();
  } catch (const Error&) {
  }
  fail("the folder holds a PEFT (LoRA) adapter (adapter_config.json), not a model: dak applies no adapters",
       dir.string(),
       fmt::format("merge the adapter into its base model{} with PEFT (PeftModel.from_pretrained(base, adapter)"
                   ".merge_and_unload(), then save_pretrained), and give the merged model's folder",
                   base.empty() ? std::string() : " (" + base + ")"));
}

void refuse_hf_cache_root(const fs::path& path) {
  std::error_code ec;
  if (examine_path(path / "snapshots") != fs::file_type::directory) return;
  std::vector<fs::path> revisions;
  for (fs::directory_iterator it(path / "snapshots", ec), end; !ec && it != end; it.increment(ec))
    revisions.push_back(it->path());
  std::sort(revisions.begin(), revisions.end());
  // The revision refs/main names (huggingface_hub writes the commit hash there), else the last by name.
  fs::path pick = revisions.empty() ? fs::path() : revisions.back();
  std::ifstream ref(path / "refs" / "main");
  std::string hash;
  if (ref >> hash && examine_path(path / "snapshots" / hash) == fs::file_type::directory)
    pick = path / "snapshots" / hash;
  fail("folder has no model.safetensors, model.safetensors.index.json, .gguf or config.json: it looks like a Hugging "
       "Face cache folder, which keeps each download in snapshots/<revision>/",
       path.string(),
       revisions.empty()       ? std::string("its snapshots/ folder is empty: download the model again")
       : revisions.size() == 1 ? "give the snapshot folder: --model " + shell_word(pick.string())
                               : fmt::format("give one of its {} snapshot folders, e.g. the one refs/main names: "
                                             "--model {}",
                                             revisions.size(), shell_word(pick.string())));
}

std::optional<NonFiniteWeight> first_non_finite_weight(const Checkpoint& ckpt) {
  for (const TensorInfo& t : ckpt.tensors()) {
    const std::vector<float> v = ckpt.read_f32(t);
    const auto bad = std::find_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); });
    if (bad != v.end()) return NonFiniteWeight{&t, int64_t(bad - v.begin()), *bad};
  }
  return std::nullopt;
}

fs::path folder_of(const fs::path& path) { return path.has_parent_path() ? path.parent_path() : fs::path("."); }

bool folder_without_weights(const fs::path& path) {
  if (examine_path(path) != fs::file_type::directory ||
      examine_path(path / "model.safetensors.index.json") != fs::file_type::not_found ||
      examine_path(path / "model.safetensors") != fs::file_type::not_found) {
    return false;
  }
  std::error_code ec;
  bool gguf = false;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    gguf = gguf || it->path().extension() == ".gguf";
  }
  return !gguf && !ec;
}

namespace {

// The first (by name) entry of folder `path` whose file name `match` accepts; "" when none (or the
// folder cannot be listed).
std::string first_file_in(const fs::path& path, const std::function<bool(const fs::path&)>& match) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return "";
  std::vector<std::string> found;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (match(it->path().filename())) found.push_back(it->path().filename().string());
  }
  if (found.empty()) return "";
  return *std::min_element(found.begin(), found.end());
}

// transformers' shard names: <prefix>-00001-of-00003.safetensors
bool is_shard_name(const std::string& name) {
  static const std::regex kShard(R"(.*-\d{5}-of-\d{5}\.safetensors)");
  return std::regex_match(name, kShard);
}

// File names for a notice: the first 4, then how many more ("a, b, c, d and 2 more").
std::string file_names_for_notice(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 4; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 4) out += fmt::format(" and {} more", names.size() - 4);
  return out;
}

// The file names of `paths`, in order.
std::vector<std::string> file_names(const std::vector<fs::path>& paths) {
  std::vector<std::string> names;
  for (const fs::path& p : paths) names.push_back(p.filename().string());
  return names;
}

}  // namespace

std::string unsupported_weight_file_in(const fs::path& path) {
  return first_file_in(path, [](const fs::path& name) {
    const std::string ext = name.extension().string();
    return ext == ".bin" || ext == ".pt" || ext == ".pth" || ext == ".ckpt" || ext == ".h5" || ext == ".msgpack";
  });
}

void refuse_unread_safetensors(const fs::path& path, const std::string& name, const std::string& where) {
  if (const std::string shard = first_file_in(path, [](const fs::path& f) { return is_shard_name(f.string()); });
      !shard.empty()) {
    fail(fmt::format("{} holds safetensors shards ({} ...) but no model.safetensors.index.json", name, shard), where,
         "restore model.safetensors.index.json from the model's repository (it says which tensor is in which "
         "shard)");
  }
  const std::string file = first_file_in(path, [](const fs::path& f) {
    return f.extension() == ".safetensors" && f != "model.safetensors" && !is_shard_name(f.string());
  });
  if (!file.empty()) {
    fail(fmt::format("{} holds {}, but a folder's weights are read from model.safetensors (or its index)", name,
                     file),
         where,
         fmt::format("pass the file itself (--model {}) with the model's config.json beside it, or name it "
                     "model.safetensors",
                     shell_word((path / file).string())));
  }
}

std::string convert_weights_fix(const std::string& file) {
  return fmt::format("dak reads safetensors and GGUF weights, not {}: convert them with transformers "
                     "(AutoModelForCausalLM.from_pretrained(folder).save_pretrained(new_folder, "
                     "safe_serialization=True)), or use the model's safetensors or GGUF release",
                     file);
}

std::string mixed_weights_notice(const fs::path& path) {
  if (examine_path(path) != fs::file_type::directory) return "";
  const bool sharded = examine_path(path / "model.safetensors.index.json") != fs::file_type::not_found;
  const bool model_safetensors = examine_path(path / "model.safetensors") != fs::file_type::not_found;
  std::vector<fs::path> ggufs, safetensors;
  std::error_code ec;
  for (const auto& ent : fs::directory_iterator(path, ec)) {
    std::error_code fe;
    if (!ent.is_regular_file(fe)) continue;  // as sole_gguf_in counts them: a folder named x.gguf is no weights
    if (ent.path().extension() == ".gguf") ggufs.push_back(ent.path());
    if (ent.path().extension() == ".safetensors") safetensors.push_back(ent.path());
  }
  std::sort(ggufs.begin(), ggufs.end());
  std::sort(safetensors.begin(), safetensors.end());
  if (ggufs.empty() && sharded && model_safetensors) {
    // model.safetensors beside an index that does not list it (trial of session 50): open() runs the
    // index's shards, as vLLM does (it keeps the files the index lists); transformers' from_pretrained
    // loads model.safetensors first. Said, with how to run the other one.
    std::vector<std::string> shards;
    try {
      shards = SafetensorsIndex::read(path / "model.safetensors.index.json").shard_files();
    } catch (const Error&) {
      return "";  // a damaged index: opening it says what is wrong
    }
    if (std::find(shards.begin(), shards.end(), "model.safetensors") != shards.end()) return "";
    return fmt::format("{} holds model.safetensors beside model.safetensors.index.json, which does not list it: using "
                       "the index and its {} shard{} (as vLLM does; transformers would load model.safetensors), "
                       "ignoring model.safetensors; to run it instead, give its path as the model (--model {})",
                       path.string(), shards.size(), shards.size() == 1 ? "" : "s",
                       shell_word((path / "model.safetensors").string()));
  }
  if (ggufs.empty()) {
    // model.safetensors beside safetensors files of other names (trial 48: extra.safetensors; a LoRA
    // adapter, which dak does not apply): open() reads model.safetensors only.
    if (sharded || !model_safetensors) return "";
    std::vector<std::string> others;
    for (const fs::path& f : safetensors) {
      const std::string name = f.filename().string();
      if (name != "model.safetensors" && !is_shard_name(name)) others.push_back(name);
    }
    if (others.empty()) return "";
    const std::string ignored = file_names_for_notice(others);
    return fmt::format("{} holds more safetensors files: using model.safetensors, ignoring {} (dak applies no "
                       "adapters); to run another file, give its path as the model with the model's config.json "
                       "beside it",
                       path.string(), ignored);
  }
  if (!sharded && !model_safetensors) {
    // Other-named safetensors beside one .gguf (weights.safetensors, trial 47e): Checkpoint::open
    // runs the .gguf, since a folder's safetensors weights are read from model.safetensors only.
    if (safetensors.empty() || ggufs.size() != 1) return "";
    const std::string ignored = file_names_for_notice(file_names(safetensors));
    const auto shard = std::find_if(safetensors.begin(), safetensors.end(),
                                    [](const fs::path& f) { return is_shard_name(f.filename().string()); });
    std::string fix;
    if (shard != safetensors.end()) {
      fix = "to run the safetensors shards, restore model.safetensors.index.json from the model's repository";
    } else {
      // The example: not a LoRA adapter (adapter_model.safetensors), which holds no model.
      const auto example = std::find_if(safetensors.begin(), safetensors.end(), [](const fs::path& f) {
        return !f.filename().string().starts_with("adapter_");
      });
      if (example == safetensors.end()) return "";  // only adapters: nothing else to run
      fix = fmt::format("to run the safetensors weights, give the file as the model (e.g. --model {}) with the "
                        "model's config.json beside it",
                        shell_word(example->string()));
    }
    return fmt::format("{} holds safetensors and GGUF weights: using {}, ignoring {} (a folder's safetensors weights "
                       "are read from model.safetensors or its index); {}",
                       path.string(), ggufs[0].filename().string(), ignored, fix);
  }
  const std::string ignored = file_names_for_notice(file_names(ggufs));
  const fs::path used = path / (sharded ? "model.safetensors.index.json" : "model.safetensors");
  return fmt::format("{} holds safetensors and GGUF weights: using {}{}, ignoring {}; to run a GGUF file, give its "
                     "path as the model (e.g. --model {}), or give {} to choose the safetensors weights",
                     path.string(), used.filename().string(), sharded ? " and its shards" : "", ignored,
                     shell_word(ggufs[0].string()), shell_word(used.string()));
}

uint64_t Checkpoint::total_bytes() const {
  uint64_t n = 0;
  for (const TensorInfo& t : tensors_) n += t.bytes;
  return n;
}

const TensorInfo* Checkpoint::find(std::string_view name) const {
  for (const TensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const TensorInfo& Checkpoint::get(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  fail(fmt::format("missing tensor '{}'", name), path_.string(),
       "check that the checkpoint matches its config (architecture, layer count, tied embeddings)");
}

std::vector<float> Checkpoint::read_f32(const TensorInfo& t) const {
  const int64_t n = t.num_elements();
  if (n < 0 || n % dtype_block_elems(t.dtype) != 0 || t.data == nullptr ||
      uint64_t(dtype_bytes_for(t.dtype, n)) != t.bytes) {
    fail(fmt::format("tensor '{}' has {} elements of {} but {} bytes", t.name, n,
                     dtype_name(t.dtype), t.bytes),
         t.file, "the tensor metadata is inconsistent; re-open the checkpoint");
  }
  std::vector<float> out(size_t(n), 0.0f);
  if (n == 0) return out;
  dequantize(t.dtype, t.data, out.data(), n);
  // A block type's fp16 scales can hold NaN or inf in a damaged file: named here, by the tensor, not
  // later as non-finite logits (trial 28).
  if (dtype_block_elems(t.dtype) > 1) {
    const auto bad = std::find_if(out.begin(), out.end(), [](float v) { return !std::isfinite(v); });
    if (bad != out.end())
      fail(fmt::format("tensor '{}'{} decodes to a non-finite value ({}) at element {}", t.name,
                       t.file_name != t.name ? " ('" + t.file_name + "' in the file)" : "", *bad, bad - out.begin()),
           t.file, "the file is damaged: re-download it or re-quantize the model");
  }
  if (t.gguf_rope_heads <= 0) return out;

  // Undo llama.cpp's LlamaModel.permute: GGUF row h*D + 2*i + j holds HF row h*D + j*D/2 + i
  // (w.reshape(H, 2, D/2, K).swapaxes(1, 2) turns rotate-half halves into interleaved pairs).
  const int64_t rows = t.shape.empty() ? 1 : t.shape[0];
  const int64_t cols = n / rows;
  const int64_t heads = t.gguf_rope_heads;
  if (rows % heads != 0 || (rows / heads) % 2 != 0) {
    fail(fmt::format("tensor '{}' has {} rows, which do not split into {} heads of even size", t.name,
                     rows, heads),
         t.file, "check the GGUF's attention.head_count / head_count_kv");
  }
  const int64_t d = rows / heads, half = d / 2;
  std::vector<float> hf(out.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const float* src = out.data() + (h * d + 2 * i + j) * cols;
        std::copy(src, src + cols, hf.data() + (h * d + j * half + i) * cols);
      }
    }
  }
  return hf;
}

}  // namespace dak
