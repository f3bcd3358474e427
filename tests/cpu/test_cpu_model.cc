// CpuModel on small random models of every family, against a straightforward float64
// re-implementation of the HF forward pass written here (full recompute per sequence, no KV
// cache, no batching, no blocking), plus the Engine::step contract: ragged batches, prefill +
// decode and the errors. Hugging Face's own logits are checked in test_hf_parity.cc.
#include <array>
#include <cmath>
#include <deque>
#include <map>
#include <numbers>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/checkpoint.h"
#include "core/cpu_model.h"
#include "core/error.h"
#include "error_test_util.h"

namespace dak {
namespace {

using Tensors = std::map<std::string, std::vector<float>>;
using Vec = std::vector<double>;

/// A Checkpoint over in-memory fp32 tensors.
class FakeCheckpoint : public Checkpoint {
 public:
  FakeCheckpoint(const ModelConfig& c, const Tensors& tensors, const std::map<std::string, std::vector<int64_t>>& shapes) {
    config_ = c;
    format_ = "safetensors";
    path_ = "fake-checkpoint";
    for (const auto& [name, data] : tensors) store(name, data, shapes.at(name));
  }

 private:
  void store(const std::string& name, const std::vector<float>& data, std::vector<int64_t> shape) {
    data_.push_back(data);
    TensorInfo t;
    t.name = t.file_name = name;
    t.file = "fake.safetensors";
    t.dtype = DType::kF32;
    t.shape = std::move(shape);
    t.bytes = data.size() * sizeof(float);
    t.data = reinterpret_cast<const uint8_t*>(data_.back().data());
    tensors_.push_back(t);
  }
  std::deque<std::vector<float>> data_;
};

// ------------------------------------------------------------------ random models

struct RandomModel {
  ModelConfig cfg;
  Tensors t;
  std::map<std::string, std::vector<int64_t>> shapes;
};

RandomModel make_model(const ModelConfig& c, uint32_t seed) {
  RandomModel m{c, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, float offset = 0.0f) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = offset + scale * uni(rng);
    m.t[name] = v;
    m.shapes[name] = shape;
  };
  auto lin = [&](const std::string& base, int64_t out, int64_t in, bool bias) {
    add(base + ".weight", {out, in}, 1.5f / std::sqrt(float(in)));
    if (bias) add(base + ".bias", {out}, 0.2f);
  };
  const int64_t h = c.hidden_size, e = c.embed_dim(), ff = c.intermediate_size;
  const bool opt = c.arch == Arch::kOpt;
  auto norm = [&](const std::string& base) {
    if (opt && !c.norm_elementwise_affine) return;
    add(base + ".weight", {h}, 0.2f, 1.0f);
    if (opt) add(base + ".bias", {h}, 0.2f);
  };
  const std::string root = opt ? "model.decoder." : "model.";
  add(root + "embed_tokens.weight", {c.vocab_size, e}, 1.0f);
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, e}, 1.0f / std::sqrt(float(e)));
  if (opt) {
    add(root + "embed_positions.weight", {c.max_position_embeddings + 2, h}, 0.5f);
    if (e != h) {
      lin(root + "project_in", h, e, false);
      lin(root + "project_out", e, h, false);
    }
    if (c.do_layer_norm_before) norm(root + "final_layer_norm");
  } else {
    norm(root + "norm");
  }
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("{}layers.{}.", root, l);
    norm(p + (opt ? "self_attn_layer_norm" : "input_layernorm"));
    norm(p + (opt ? "final_layer_norm" : "post_attention_layernorm"));
    lin(p + "self_attn.q_proj", c.q_dim(), h, c.qkv_bias);
    lin(p + "self_attn.k_proj", c.kv_dim(), h, c.qkv_bias);
    lin(p + "self_attn.v_proj", c.kv_dim(), h, c.qkv_bias);
    lin(p + (opt ? "self_attn.out_proj" : "self_attn.o_proj"), h, c.q_dim(), c.o_bias);
    if (opt) {
      lin(p + "fc1", ff, h, c.mlp_bias);
      lin(p + "fc2", h, ff, c.mlp_bias);
    } else {
      lin(p + "mlp.gate_proj", ff, h, c.mlp_bias);
      lin(p + "mlp.up_proj", ff, h, c.mlp_bias);
      lin(p + "mlp.down_proj", h, ff, c.mlp_bias);
    }
  }
  return m;
}

// ------------------------------------------------------------------ float64 reference

struct Reference {
  const ModelConfig& c;
  const Tensors& t;

  const std::vector<float>* find(const std::string& n) const {
    auto it = t.find(n);
    return it == t.end() ? nullptr : &it->second;
  }
  Vec linear(const std::string& base, const Vec& x) const {
    const auto& w = t.at(base + ".weight");
    const auto* b = find(base + ".bias");
    const size_t in = x.size(), out = w.size() / in;
    Vec y(out);
    for (size_t o = 0; o < out; ++o) {
      double s = b ? (*b)[o] : 0.0;
      for (size_t i = 0; i < in; ++i) s += double(w[o * in + i]) * x[i];
      y[o] = s;
    }
    return y;
  }
  Vec norm(const std::string& base, const Vec& x) const {
    const auto* w = find(base + ".weight");
    const auto* b = find(base + ".bias");
    const double n = double(x.size());
    Vec y(x.size());
    if (c.norm == NormKind::kRmsNorm) {
      double ss = 0;
      for (double v : x) ss += v * v;
      const double inv = 1.0 / std::sqrt(ss / n + c.norm_eps);
      for (size_t i = 0; i < x.size(); ++i) y[i] = (*w)[i] * x[i] * inv;
    } else {
      double mean = 0, var = 0;
      for (double v : x) mean += v / n;
      for (double v : x) var += (v - mean) * (v - mean) / n;
      const double inv = 1.0 / std::sqrt(var + c.norm_eps);
      for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) * inv * (w ? (*w)[i] : 1.0) + (b ? (*b)[i] : 0.0);
    }
    return y;
  }
  double act(double x) const {
    switch (c.activation) {
      case Activation::kSilu: return x / (1 + std::exp(-x));
      case Activation::kRelu: return x > 0 ? x : 0;
      case Activation::kGelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
      case Activation::kGeluTanh:
        return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    }
    return x;
  }
  // Rotary frequency i < D/2 (modeling_rope_utils.py, in float64).
  double freq(int64_t i) const {
    double f = 1.0 / std::pow(c.rope_theta, double(2 * i) / double(c.head_dim));
    if (c.rope_scaling == RopeScaling::kLinear) return f / c.rope_factor;
    if (c.rope_scaling == RopeScaling::kLlama3) {
      const double wl = 2 * std::numbers::pi / f;
      const double old = double(c.rope_original_max_position);
      if (wl < old / c.rope_high_freq_factor) return f;
      if (wl > old / c.rope_low_freq_factor) return f / c.rope_factor;
      const double s = (old / wl - c.rope_low_freq_factor) / (c.rope_high_freq_factor - c.rope_low_freq_factor);
      return (1 - s) * f / c.rope_factor + s * f;
    }
    return f;
  }
  void rope(Vec& x, int64_t heads, int64_t pos) const {
    const int64_t d = c.head_dim, half = d / 2;
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < half; ++i) {
        const double a = pos * freq(i);
        const double x1 = x[h * d + i], x2 = x[h * d + i + half];
        x[h * d + i] = x1 * std::cos(a) - x2 * std::sin(a);
        x[h * d + i + half] = x2 * std::cos(a) + x1 * std::sin(a);
      }
    }
  }

  // Logits [n][V] of every position of `ids`.
  std::vector<Vec> logits(const std::vector<int32_t>& ids) const {
    const bool opt = c.arch == Arch::kOpt;
    const std::string root = opt ? "model.decoder." : "model.";
    const int64_t n = int64_t(ids.size()), e = c.embed_dim(), d = c.head_dim;
    const auto& emb = t.at(root + "embed_tokens.weight");
    std::vector<Vec> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      Vec v(emb.begin() + ids[i] * e, emb.begin() + (ids[i] + 1) * e);
      if (e != c.hidden_size) v = linear(root + "project_in", v);
      if (opt) {
        const auto& pe = t.at(root + "embed_positions.weight");
        for (int64_t j = 0; j < c.hidden_size; ++j) v[j] += pe[(i + 2) * c.hidden_size + j];
      }
      x[i] = v;
    }
    const bool pre = !opt || c.do_layer_norm_before;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const std::string p = fmt::format("{}layers.{}.", root, l);
      const std::string n1 = p + (opt ? "self_attn_layer_norm" : "input_layernorm");
      const std::string n2 = p + (opt ? "final_layer_norm" : "post_attention_layernorm");
      std::vector<Vec> q(static_cast<size_t>(n)), k(static_cast<size_t>(n)), v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const Vec hin = pre ? norm(n1, x[i]) : x[i];
        q[i] = linear(p + "self_attn.q_proj", hin);
        k[i] = linear(p + "self_attn.k_proj", hin);
        v[i] = linear(p + "self_attn.v_proj", hin);
        if (!opt) {
          rope(q[i], c.num_heads, i);
          rope(k[i], c.num_kv_heads, i);
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        Vec att(size_t(c.q_dim()), 0.0);
        for (int64_t hq = 0; hq < c.num_heads; ++hq) {
          const int64_t hk = hq / (c.num_heads / c.num_kv_heads);
          std::vector<double> s;
          std::vector<int64_t> js;
          for (int64_t j = 0; j <= i; ++j) {
            if (c.sliding_window > 0 && j <= i - c.sliding_window) continue;
            double dot = 0;
            for (int64_t z = 0; z < d; ++z) dot += q[i][hq * d + z] * k[j][hk * d + z];
            s.push_back(dot / std::sqrt(double(d)));
            js.push_back(j);
          }
          double mx = -1e300, sum = 0;
          for (double sv : s) mx = std::max(mx, sv);
          for (double& sv : s) sum += (sv = std::exp(sv - mx));
          for (size_t u = 0; u < js.size(); ++u)
            for (int64_t z = 0; z < d; ++z) att[hq * d + z] += s[u] / sum * v[js[u]][hk * d + z];
        }
        const Vec o = linear(p + (opt ? "self_attn.out_proj" : "self_attn.o_proj"), att);
        for (size_t z = 0; z < o.size(); ++z) x[i][z] += o[z];
        if (!pre) x[i] = norm(n1, x[i]);
      }
      for (int64_t i = 0; i < n; ++i) {
        const Vec hin = pre ? norm(n2, x[i]) : x[i];
        Vec m;
        if (opt) {
          Vec u = linear(p + "fc1", hin);
          for (double& z : u) z = act(z);
          m = linear(p + "fc2", u);
        } else {
          Vec g = linear(p + "mlp.gate_proj", hin), u = linear(p + "mlp.up_proj", hin);
          for (size_t z = 0; z < u.size(); ++z) u[z] *= act(g[z]);
          m = linear(p + "mlp.down_proj", u);
        }
        for (size_t z = 0; z < m.size(); ++z) x[i][z] += m[z];
        if (!pre) x[i] = norm(n2, x[i]);
      }
    }
    std::vector<Vec> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      Vec f = x[i];
      if (!opt) f = norm(root + "norm", f);
      if (opt && c.do_layer_norm_before) f = norm(root + "final_layer_norm", f);
      if (e != c.hidden_size) f = linear(root + "project_out", f);
      const auto& w = c.tie_word_embeddings ? emb : t.at("lm_head.weight");
      Vec lg(size_t(c.vocab_size));
      for (int64_t vv = 0; vv < c.vocab_size; ++vv) {
        double s = 0;
        for (int64_t z = 0; z < e; ++z) s += double(w[vv * e + z]) * f[z];
        lg[vv] = s;
      }
      out[i] = lg;
    }
    return out;
  }
};

// ------------------------------------------------------------------ configs

ModelConfig base_config(Arch a) {
  ModelConfig c;
  c.arch = a;
  c.vocab_size = 37;
  c.hidden_size = 32;
  c.intermediate_size = 40;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 40;
  c.norm_eps = 1e-5f;
  return c;
}

struct Case {
  const char* name;
  ModelConfig cfg;
};

std::vector<Case> cases() {
  std::vector<Case> v;
  {
    ModelConfig c = base_config(Arch::kLlama);  // GQA, llama3 RoPE (all three bands), biases, tied
    c.rope_scaling = RopeScaling::kLlama3;
    c.rope_factor = 8;
    c.rope_low_freq_factor = 1;
    c.rope_high_freq_factor = 4;
    c.rope_original_max_position = 64;
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
    c.tie_word_embeddings = true;
    v.push_back({"llama_gqa_llama3_bias_tied", c});
  }
  {
    ModelConfig c = base_config(Arch::kMistral);  // MQA, explicit head_dim, window 3, linear RoPE
    c.num_kv_heads = 1;
    c.head_dim = 12;
    c.sliding_window = 3;
    c.rope_scaling = RopeScaling::kLinear;
    c.rope_factor = 2.5;
    c.rope_theta = 500.0;
    v.push_back({"mistral_mqa_window3_linear", c});
  }
  {
    ModelConfig c = base_config(Arch::kQwen2);
    c.qkv_bias = true;
    c.activation = Activation::kGeluTanh;
    v.push_back({"qwen2_qkv_bias", c});
  }
  {
    ModelConfig c = base_config(Arch::kOpt);  // pre-LN, untied
    c.num_kv_heads = 4;
    c.norm = NormKind::kLayerNorm;
    c.activation = Activation::kRelu;
    c.gated_mlp = false;
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
    c.word_embed_proj_dim = 32;
    c.position_offset = 2;
    v.push_back({"opt_pre_ln", c});
  }
  {
    ModelConfig c = v.back().cfg;  // OPT-350m style: post-LN, project_in/out, tied
    c.do_layer_norm_before = false;
    c.word_embed_proj_dim = 16;
    c.tie_word_embeddings = true;
    c.activation = Activation::kGelu;
    v.push_back({"opt_post_ln_project", c});
  }
  return v;
}

const std::vector<std::vector<int32_t>> kSeqs = {
    {3, 17, 5, 36, 0, 22, 9}, {11}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 30, 31, 32}};

// ‖got - ref‖ / ‖ref‖ over one row of logits.
double rel_err(const float* got, const Vec& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

constexpr double kTol = 1e-5;  // fp32 against float64 on a 2-layer model of width 32

TEST(CpuModel, MatchesFloat64ReferenceForEveryFamily) {
  for (const Case& cs : cases()) {
    SCOPED_TRACE(cs.name);
    RandomModel rm = make_model(cs.cfg, 42);
    FakeCheckpoint ckpt(rm.cfg, rm.t, rm.shapes);
    CpuModel model(ckpt);
    Reference ref{rm.cfg, rm.t};
    const int64_t v = rm.cfg.vocab_size;

    // Each sequence alone, teacher-forced.
    std::vector<std::vector<Vec>> want;
    for (const auto& s : kSeqs) {
      want.push_back(ref.logits(s));
      model.start(1, 20);
      std::vector<std::vector<int32_t>> one{s};
      const std::vector<float> got = model.step(one, true);
      ASSERT_EQ(got.size(), s.size() * size_t(v));
      for (size_t i = 0; i < s.size(); ++i) EXPECT_LT(rel_err(got.data() + i * v, want.back()[i]), kTol) << "pos " << i;
      EXPECT_EQ(model.position(0), int64_t(s.size()));
    }

    // All sequences as one ragged batch.
    model.start(int64_t(kSeqs.size()), 20);
    const std::vector<float> all = model.step(kSeqs, true);
    size_t row = 0;
    for (size_t b = 0; b < kSeqs.size(); ++b)
      for (size_t i = 0; i < kSeqs[b].size(); ++i, ++row)
        EXPECT_LT(rel_err(all.data() + row * v, want[b][i]), kTol) << "seq " << b << " pos " << i;
    ASSERT_EQ(row * v, all.size());

    // Prefill of the first half, then one token per step (ragged: short sequences idle).
    model.start(int64_t(kSeqs.size()), 20);
    std::vector<std::vector<int32_t>> half(kSeqs.size());
    for (size_t b = 0; b < kSeqs.size(); ++b) half[b].assign(kSeqs[b].begin(), kSeqs[b].begin() + (kSeqs[b].size() + 1) / 2);
    std::vector<float> last = model.step(half, false);
    ASSERT_EQ(last.size(), kSeqs.size() * size_t(v));
    for (size_t b = 0; b < kSeqs.size(); ++b)
      EXPECT_LT(rel_err(last.data() + b * v, want[b][half[b].size() - 1]), kTol);
    for (size_t i = 0;; ++i) {
      std::vector<std::vector<int32_t>> step(kSeqs.size());
      bool any = false;
      for (size_t b = 0; b < kSeqs.size(); ++b) {
        const size_t p = half[b].size() + i;
        if (p < kSeqs[b].size()) {
          step[b] = {kSeqs[b][p]};
          any = true;
        }
      }
      if (!any) break;
      last = model.step(step, false);
      for (size_t b = 0; b < kSeqs.size(); ++b)
        if (!step[b].empty()) {
          EXPECT_LT(rel_err(last.data() + b * v, want[b][half[b].size() + i]), kTol) << "seq " << b << " step " << i;
        }
    }
    for (size_t b = 0; b < kSeqs.size(); ++b) EXPECT_EQ(model.position(int64_t(b)), int64_t(kSeqs[b].size()));
  }
}

TEST(CpuModel, SlidingWindowMasksOldKeys) {
  // The float64 reference covers the window's exact boundary; here: the window changes nothing
  // while a position sees fewer than W keys (bitwise) and changes the logits once it sees more.
  Case cs = cases()[1];
  RandomModel rm = make_model(cs.cfg, 7);
  FakeCheckpoint windowed(rm.cfg, rm.t, rm.shapes);
  ModelConfig full_cfg = rm.cfg;
  full_cfg.sliding_window = 0;
  FakeCheckpoint full(full_cfg, rm.t, rm.shapes);
  CpuModel a(windowed), b(full);
  std::vector<std::vector<int32_t>> s{kSeqs[2]};
  a.start(1, 20);
  b.start(1, 20);
  const auto la = a.step(s, true), lb = b.step(s, true);
  const int64_t v = rm.cfg.vocab_size;
  // Positions < window see the same keys either way; later positions differ.
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < v; ++j) EXPECT_EQ(la[i * v + j], lb[i * v + j]);
  double diff = 0;
  for (int64_t j = 0; j < v; ++j) diff += std::abs(la[10 * v + j] - lb[10 * v + j]);
  EXPECT_GT(diff, 1e-3);
}

using testing::expect_error;

TEST(CpuModel, RejectsBadInputWithErrors) {
  RandomModel rm = make_model(cases()[0].cfg, 1);
  FakeCheckpoint ckpt(rm.cfg, rm.t, rm.shapes);
  CpuModel model(ckpt);
  using Batch = std::vector<std::vector<int32_t>>;
  expect_error([&] { model.step(Batch{{1}}, false); }, {"start"});
  expect_error([&] { model.start(1, 41); }, {"41", "40"});
  expect_error([&] { model.start(0, 10); }, {"batch"});
  model.start(2, 8);
  expect_error([&] { model.step(Batch{{1}}, false); }, {"2"});
  expect_error([&] { model.step(Batch{{1, 37}, {2}}, false); }, {"37", "vocabulary"});
  expect_error([&] { model.step(Batch{{-1}, {2}}, false); }, {"-1", "vocabulary"});
  expect_error([&] { model.step(Batch{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {2}}, false); }, {"9", "8"});
  // Nothing was appended by the failed calls.
  EXPECT_EQ(model.position(0), 0);
  model.step(Batch{{1, 2, 3, 4, 5, 6, 7, 8}, {}}, false);
  expect_error([&] { model.step(Batch{{1}, {}}, false); }, {"context"});
  expect_error([&] { model.position(2); }, {"sequence 2"});
}

TEST(CpuModel, ReportsMissingOrMisshapenTensors) {
  RandomModel rm = make_model(cases()[0].cfg, 1);
  {
    RandomModel broken = rm;
    broken.t.erase("model.layers.1.mlp.up_proj.weight");
    FakeCheckpoint ckpt(broken.cfg, broken.t, broken.shapes);
    expect_error([&] { CpuModel m(ckpt); }, {"model.layers.1.mlp.up_proj.weight"});
  }
  {
    RandomModel broken = rm;
    broken.shapes["model.layers.0.self_attn.k_proj.weight"] = {32, 16};
    FakeCheckpoint ckpt(broken.cfg, broken.t, broken.shapes);
    expect_error([&] { CpuModel m(ckpt); }, {"model.layers.0.self_attn.k_proj.weight", "[32, 16]", "[16, 32]"});
  }
  {
    RandomModel untied = rm;
    untied.cfg.tie_word_embeddings = false;
    FakeCheckpoint ckpt(untied.cfg, untied.t, untied.shapes);
    expect_error([&] { CpuModel m(ckpt); }, {"lm_head.weight"});
  }
}

TEST(CpuModel, OptNamesWithoutModelPrefixLoad) {
  // facebook/opt-* checkpoints store "decoder.*" without the wrapper's "model." prefix.
  RandomModel rm = make_model(cases()[3].cfg, 3);
  Tensors stripped;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [n, d] : rm.t) {
    const std::string s = n.starts_with("model.") ? n.substr(6) : n;
    stripped[s] = d;
    shapes[s] = rm.shapes[n];
  }
  FakeCheckpoint a(rm.cfg, rm.t, rm.shapes), b(rm.cfg, stripped, shapes);
  CpuModel ma(a), mb(b);
  EXPECT_EQ(ma.weight_bytes(), mb.weight_bytes());
  std::vector<std::vector<int32_t>> s{kSeqs[0]};
  ma.start(1, 10);
  mb.start(1, 10);
  EXPECT_EQ(ma.step(s, true), mb.step(s, true));
}

TEST(CpuModel, LayerProgressObservesEachLayerWithoutChangingTheLogits) {
  // dak generate's prefill progress line: one call before the first layer and one after each,
  // with the step's tokens; the logits are bit for bit those of a model without it.
  RandomModel rm = make_model(cases()[0].cfg, 7);
  FakeCheckpoint ckpt(rm.cfg, rm.t, rm.shapes);
  CpuModel plain(ckpt), watched(ckpt);
  std::vector<std::array<int64_t, 3>> calls;
  watched.set_layer_progress([&](int64_t tokens, int64_t done, int64_t layers) {
    calls.push_back({tokens, done, layers});
  });
  const std::vector<std::vector<int32_t>> prefill{kSeqs[0], kSeqs[2]}, decode{{4}, {5}};
  plain.start(2, 20);
  watched.start(2, 20);
  EXPECT_EQ(plain.step(prefill, true), watched.step(prefill, true));
  EXPECT_EQ(plain.step(decode, false), watched.step(decode, false));
  const int64_t layers = rm.cfg.num_layers, rows = int64_t(kSeqs[0].size() + kSeqs[2].size());
  ASSERT_EQ(calls.size(), size_t(2 * (layers + 1)));
  for (int64_t l = 0; l <= layers; ++l) {
    EXPECT_EQ(calls[l], (std::array<int64_t, 3>{rows, l, layers}));
    EXPECT_EQ(calls[layers + 1 + l], (std::array<int64_t, 3>{2, l, layers}));
  }
}

TEST(CpuModel, WeightBytesCountsEveryTensorOnce) {
  RandomModel rm = make_model(cases()[1].cfg, 5);
  FakeCheckpoint ckpt(rm.cfg, rm.t, rm.shapes);
  CpuModel m(ckpt);
  uint64_t n = 0;
  for (const auto& [name, d] : rm.t) n += d.size();
  EXPECT_EQ(m.weight_bytes(), n * sizeof(float));
  EXPECT_EQ(m.device_name(), "cpu");
}

// weight_bytes_for (what the memory check before loading uses) against the loaded model, for
// every family case (OPT post-LN and projections, biases, GQA, tied) and the HF fixtures.
TEST(CpuModel, WeightBytesForAConfigIsWhatItLoads) {
  for (const Case& cs : cases()) {
    SCOPED_TRACE(cs.name);
    RandomModel rm = make_model(cs.cfg, 7);
    FakeCheckpoint ckpt(rm.cfg, rm.t, rm.shapes);
    CpuModel m(ckpt);
    EXPECT_EQ(CpuModel::weight_bytes_for(rm.cfg), m.weight_bytes());
  }
  for (const char* name : {"opt", "opt350m_style", "llama_mqa_tied", "qwen2", "qwen2_yarn"}) {
    SCOPED_TRACE(name);
    const auto ckpt = Checkpoint::open(std::string(DAK_TEST_DATA_DIR) + "/hf_parity/" + name);
    CpuModel m(*ckpt);
    EXPECT_EQ(CpuModel::weight_bytes_for(ckpt->config()), m.weight_bytes());
  }
}

// The load's progress (the CLI's "loading weights" line): one call a tensor, counts rising to the
// parameters the model holds (4 bytes each in fp32), the last call done == total.
TEST(CpuModel, LoadProgressCountsEveryParameter) {
  for (const char* name : {"opt", "llama_mqa_tied", "qwen2"}) {
    SCOPED_TRACE(name);
    const auto ckpt = Checkpoint::open(std::string(DAK_TEST_DATA_DIR) + "/hf_parity/" + name);
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    CpuModel m(*ckpt, [&](uint64_t done, uint64_t total) { calls.push_back({done, total}); });
    ASSERT_GE(calls.size(), size_t(3 + 4 * ckpt->config().num_layers)) << "fewer calls than linear tensors";
    const uint64_t total = calls.back().second;
    EXPECT_EQ(total * sizeof(float), m.weight_bytes());
    EXPECT_EQ(calls.back().first, total);
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].second, total) << i;
      if (i > 0) EXPECT_GT(calls[i].first, calls[i - 1].first) << i;
    }
  }
}

// Weights whose fp32 copy exceeds the memory there is: refused before anything is read or allocated
// (the checkpoint has no tensors at all, so a load would fail differently).
TEST(CpuModel, WeightsBeyondMemoryAreRefusedBeforeLoading) {
  ModelConfig c = cases()[1].cfg;
  c.hidden_size = 16384;
  c.num_heads = 128;
  c.num_kv_heads = 8;
  c.head_dim = 128;
  c.intermediate_size = 65536;
  c.num_layers = 1024;  // ~4.8e12 parameters: ~17.6 TiB in fp32
  const double want = double(CpuModel::weight_bytes_for(c));
  ASSERT_GT(want, 1e13);
  FakeCheckpoint empty(c, {}, {});
  testing::expect_error([&] { CpuModel m(empty); },
                        {"the CPU path needs", "GiB for this model's weights in fp32, more than the",
                         "MemAvailable", "fake-checkpoint", "--device cuda"});
}

// A KV cache beyond the memory there is: refused before allocating (pages allocated without being
// touched would be filled later, and the kernel would kill the process then).
TEST(CpuModel, KvCacheBeyondMemoryIsRefusedBeforeAllocating) {
  const auto ckpt = Checkpoint::open(std::string(DAK_TEST_DATA_DIR) + "/hf_parity/llama_gqa");
  CpuModel m(*ckpt);
  // 2 layers x 32 kv columns x 128 positions x 8 bytes = 64 KiB a sequence: 2^24 sequences are 1 TiB.
  testing::expect_error([&] { m.start(int64_t(1) << 24, 128); },
                        {"the fp32 KV cache needs 1024.00 GiB for 16777216 sequences x 128 positions", "MemAvailable",
                         "use fewer prompts"});
  m.start(1, 16);  // the model is still usable
  EXPECT_EQ(m.position(0), 0);
}

}  // namespace
}  // namespace dak
