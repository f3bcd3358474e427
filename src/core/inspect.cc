#include "core/inspect.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checkpoint.h"
#include "core/json_file.h"
#include "core/gguf.h"

namespace dak {

namespace {

std::string human_bytes(uint64_t b) {
  const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.2f} {}", v, units[u]);
}

/// 134515008 -> "134,515,008".
std::string grouped(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

std::string shape_str(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

const char* rope_scaling_name(RopeScaling r) {
  switch (r) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kLlama3: return "llama3";
    case RopeScaling::kYarn: return "yarn";
  }
  return "?";
}

/// `s` with invalid UTF-8 replaced by U+FFFD, so that json::dump() cannot throw on names or
/// metadata strings read from a file.
std::string utf8_safe(const std::string& s) {
  using nlohmann::json;
  try {
    (void)json(s).dump();
    return s;
  } catch (const json::exception&) {
    return json::parse(json(s).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
  }
}

struct Totals {
  uint64_t bytes = 0;
  uint64_t params = 0;
  std::map<std::string, uint64_t> bytes_per_dtype;
};

Totals totals_of(const Checkpoint& ckpt) {
  Totals t;
  for (const TensorInfo& ti : ckpt.tensors()) {
    t.bytes += ti.bytes;
    t.params += uint64_t(ti.num_elements());
    t.bytes_per_dtype[std::string(dtype_name(ti.dtype))] += ti.bytes;
  }
  return t;
}

/// Whether `a` sorts before `b` with runs of digits compared as numbers ("layers.2." before
/// "layers.10.").
bool natural_less(const std::string& a, const std::string& b) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Compare the numbers without their leading zeros: the longer is larger, else by their digits.
      size_t ia = i, jb = j;
      while (ia + 1 < ie && a[ia] == '0') ++ia;
      while (jb + 1 < je && b[jb] == '0') ++jb;
      if (ie - ia != je - jb) return ie - ia < je - jb;
      if (const int c = a.compare(ia, ie - ia, b, jb, je - jb); c != 0) return c < 0;
      if (ie - i != je - j) return ie - i < je - j;  // "01" after "1": an order for equal numbers
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return (unsigned char)a[i] < (unsigned char)b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

/// Where a tensor goes in the listing: 0 the embeddings (no layer number), 1 the layers (a name part
/// that is a number), 2 the rest (final norm, LM head).
int listing_group(const std::string& name) {
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    if (end > start && name.find_first_not_of("0123456789", start) >= end) return 1;
    start = end + 1;
  }
  return name.find("embed") != std::string::npos ? 0 : 2;
}

/// The tensors of `ckpt` in the order inspect lists them (listing_group, then natural_less of the
/// names: by layer number, then name), whatever their order in the files.
std::vector<const TensorInfo*> listing_order(const Checkpoint& ckpt) {
  std::vector<const TensorInfo*> ts;
  for (const TensorInfo& t : ckpt.tensors()) ts.push_back(&t);
  std::stable_sort(ts.begin(), ts.end(), [](const TensorInfo* a, const TensorInfo* b) {
    const int ga = listing_group(a->name), gb = listing_group(b->name);
    return ga != gb ? ga < gb : natural_less(a->name, b->name);
  });
  return ts;
}

bool several_files(const Checkpoint& ckpt) {
  std::set<std::string_view> files;
  for (const TensorInfo& t : ckpt.tensors()) files.insert(t.file);
  return files.size() > 1;
}

}  // namespace

std::string inspect_text(const Checkpoint& ckpt) {
  const ModelConfig& c = ckpt.config();
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("checkpoint    {} ({}{})", ckpt.path().string(), ckpt.format(),
                   ckpt.gguf() ? fmt::format(" v{}", ckpt.gguf()->version()) : ""));
  line(fmt::format("architecture  {}", arch_name(c.arch)));
  line(fmt::format("layers {}, hidden {}, intermediate {}, heads {} (kv {}), head_dim {}", c.num_layers,
                   c.hidden_size, c.intermediate_size, c.num_heads, c.num_kv_heads, c.head_dim));
  line(fmt::format("vocab {}, context {}, {} eps {:g}", c.vocab_size, c.max_position_embeddings,
                   c.norm == NormKind::kRmsNorm ? "rmsnorm" : "layernorm", c.norm_eps));
  if (c.arch != Arch::kOpt) {
    const bool by_factors = c.rope_scaling == RopeScaling::kNone && !c.rope_freq_factors.empty();
    std::string rope = fmt::format("rope theta {:g}, scaling {}", c.rope_theta,
                                   by_factors ? "by rope_freqs.weight" : rope_scaling_name(c.rope_scaling));
    if (c.rope_scaling == RopeScaling::kYarn)
      rope += fmt::format(" (factor {:g} over {} positions, attention factor {:g})", c.rope_factor,
                          c.rope_original_max_position, c.rope_attention_factor);
    else if (c.rope_scaling != RopeScaling::kNone)
      rope += fmt::format(" (factor {:g})", c.rope_factor);
    if (!c.rope_freq_factors.empty()) {
      const auto [lo, hi] = std::minmax_element(c.rope_freq_factors.begin(), c.rope_freq_factors.end());
      rope += by_factors ? fmt::format(" (per-frequency factors {:g} to {:g}, Llama 3.1 style)", *lo, *hi)
                         : fmt::format(", then rope_freqs.weight (per-frequency factors {:g} to {:g})", *lo, *hi);
    }
    if (c.sliding_window > 0) rope += fmt::format(", sliding window {}", c.sliding_window);
    line(rope);
  }
  line(fmt::format("tied embeddings {}, bias qkv {} o {} mlp {}", c.tie_word_embeddings ? "yes" : "no",
                   c.qkv_bias ? "yes" : "no", c.o_bias ? "yes" : "no", c.mlp_bias ? "yes" : "no"));
  line(fmt::format("bos {}, eos [{}]", c.bos_token_id, fmt::join(c.eos_token_ids, ", ")));
  line("");

  const std::vector<const TensorInfo*> ts = listing_order(ckpt);
  const bool show_file_name = std::any_of(ts.begin(), ts.end(),
                                          [](const TensorInfo* t) { return t->file_name != t->name; });
  const bool show_file = several_files(ckpt);
  size_t w_name = 4, w_fname = 9, w_file = 4, w_shape = 5;
  for (const TensorInfo* tp : ts) {
    const TensorInfo& t = *tp;
    w_name = std::max(w_name, t.name.size());
    w_fname = std::max(w_fname, t.file_name.size());
    w_file = std::max(w_file, std::filesystem::path(t.file).filename().string().size());
    w_shape = std::max(w_shape, shape_str(t.shape).size());
  }
  std::string head = fmt::format("{:<{}}", "name", w_name);
  if (show_file_name) head += fmt::format("  {:<{}}", "file name", w_fname);
  if (show_file) head += fmt::format("  {:<{}}", "file", w_file);
  head += fmt::format("  {:<5}  {:<{}}  {:>14}", "dtype", "shape", w_shape, "bytes");
  line(head);
  for (const TensorInfo* tp : ts) {
    const TensorInfo& t = *tp;
    std::string row = fmt::format("{:<{}}", t.name, w_name);
    if (show_file_name) row += fmt::format("  {:<{}}", t.file_name != t.name ? t.file_name : "", w_fname);
    if (show_file) {
      row += fmt::format("  {:<{}}", std::filesystem::path(t.file).filename().string(), w_file);
    }
    row += fmt::format("  {:<5}  {:<{}}  {:>14}", dtype_name(t.dtype), shape_str(t.shape), w_shape,
                       grouped(t.bytes));
    line(row);
  }
  line("");

  const Totals tot = totals_of(ckpt);
  line(fmt::format("tensors       {}", ts.size()));
  line(fmt::format("total bytes   {} ({})", grouped(tot.bytes), human_bytes(tot.bytes)));
  for (const auto& [dt, b] : tot.bytes_per_dtype) {
    line(fmt::format("  {:<10}  {} ({})", dt, grouped(b), human_bytes(b)));
  }
  line(fmt::format("parameters    {}", grouped(tot.params)));
  if (!ckpt.unread_tensors().empty()) {
    // In dtypes dak does not compute with and unused by the model (a position_ids buffer): not counted
    // above, and not loaded (Checkpoint::unread_tensors).
    line(fmt::format("not read      {} tensor{} in dtypes dak does not use, which the model does not need:",
                     ckpt.unread_tensors().size(), ckpt.unread_tensors().size() == 1 ? "" : "s"));
    for (const UnreadTensor& u : ckpt.unread_tensors())
      line(fmt::format("  {}  {}  {}", utf8_safe(u.name), u.dtype, shape_str(u.shape)));
  }
  return out;
}

nlohmann::json inspect_json(const Checkpoint& ckpt) {
  using nlohmann::json;
  json j;
  j["path"] = utf8_safe(ckpt.path().string());
  j["format"] = std::string(ckpt.format());
  j["config"] = ckpt.config().to_json();
  json tensors = json::array();
  for (const TensorInfo* tp : listing_order(ckpt)) {
    const TensorInfo& t = *tp;
    tensors.push_back({{"name", utf8_safe(t.name)},
                       {"file_name", utf8_safe(t.file_name)},
                       {"file", utf8_safe(t.file)},
                       {"dtype", std::string(dtype_name(t.dtype))},
                       {"shape", t.shape},
                       {"bytes", t.bytes},
                       {"parameters", t.num_elements()}});
  }
  j["tensors"] = std::move(tensors);
  json unread = json::array();
  for (const UnreadTensor& u : ckpt.unread_tensors())
    unread.push_back({{"name", utf8_safe(u.name)}, {"dtype", utf8_safe(u.dtype)}, {"shape", u.shape},
                      {"file", utf8_safe(u.file)}});
  j["unread_tensors"] = std::move(unread);
  const Totals tot = totals_of(ckpt);
  j["totals"] = {{"tensor_count", ckpt.tensors().size()},
                 {"total_bytes", tot.bytes},
                 {"parameter_count", tot.params},
                 {"bytes_per_dtype", tot.bytes_per_dtype}};
  if (const GgufFile* g = ckpt.gguf()) {
    json meta = json::object();
    for (const auto& [key, v] : g->metadata()) {
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::string>) {
              meta[utf8_safe(key)] = utf8_safe(x);
            } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                          std::is_same_v<T, std::vector<double>> ||
                          std::is_same_v<T, std::vector<std::string>>) {
              meta[utf8_safe(key)] = {{"array_length", x.size()}};
            } else if constexpr (std::is_same_v<T, double>) {
              meta[utf8_safe(key)] = g->is_float32(key) ? float_as_written(float(x)) : x;
            } else {
              meta[utf8_safe(key)] = x;
            }
          },
          v);
    }
    j["gguf"] = {{"version", g->version()}, {"metadata", std::move(meta)}};
  }
  return j;
}

}  // namespace dak
