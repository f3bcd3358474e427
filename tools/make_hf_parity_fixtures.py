#!/usr/bin/env python3
"""Writes the Hugging Face parity fixtures of dak: tiny random checkpoints with their fp32
logits and greedy continuations, computed by transformers (the oracle).

Runs wherever torch + transformers exist (no GPU needed; the GPU machine has both):
    python3 tools/make_hf_parity_fixtures.py OUT_DIR [NAME...]
For every variant (or only the NAMEs given) it writes OUT_DIR/<name>/{config.json, model.safetensors, expected.json}.
config.json is the hub-style dict we built (what users' checkpoints look like);
config.hf.json is what this transformers version writes back (for parser tests).
expected.json:
  sequences: [{input_ids, logits: [[V] per position]}]   teacher-forced, batch 1, eager attention
  greedy:    [{prompt_ids, generated_ids, margins}]      margins = top1 - top2 logit per step
"""
import json
import os
import sys

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

V, HID, INTER, LAYERS, HEADS = 128, 64, 128, 2, 4

def llama_like(model_type, **kw):
    d = dict(model_type=model_type, vocab_size=V, hidden_size=HID, intermediate_size=INTER,
             num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
             max_position_embeddings=128, rms_norm_eps=1e-5, hidden_act="silu",
             rope_theta=10000.0, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
             torch_dtype="float32")
    d.update(kw)
    return d

def opt_like(**kw):
    d = dict(model_type="opt", vocab_size=V, hidden_size=HID, ffn_dim=INTER, num_hidden_layers=LAYERS,
             num_attention_heads=HEADS, max_position_embeddings=128, word_embed_proj_dim=HID,
             do_layer_norm_before=True, activation_function="relu", enable_bias=True,
             layer_norm_elementwise_affine=True, bos_token_id=2, eos_token_id=2, pad_token_id=1,
             tie_word_embeddings=True, torch_dtype="float32")
    d.update(kw)
    return d

VARIANTS = {
    "opt": opt_like(),
    "opt350m_style": opt_like(word_embed_proj_dim=32, do_layer_norm_before=False),
    "llama_gqa": llama_like("llama", num_key_value_heads=2),
    "llama_mqa_tied": llama_like("llama", num_key_value_heads=1, head_dim=24, tie_word_embeddings=True,
                                 attention_bias=True),
    "llama3_rope": llama_like("llama", num_key_value_heads=2, rope_theta=500000.0,
                              rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                            "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 32}),
    "llama_linear_rope": llama_like("llama", rope_scaling={"type": "linear", "factor": 4.0}),
    "qwen2": llama_like("qwen2", num_key_value_heads=2, rope_theta=1000000.0, use_sliding_window=False,
                        sliding_window=None, rms_norm_eps=1e-6),
    "mistral_swa": llama_like("mistral", num_key_value_heads=2, sliding_window=8),
    # YaRN as Qwen2.5 documents it for long contexts (factor = max_position / original).
    "qwen2_yarn": llama_like("qwen2", num_key_value_heads=2, rope_theta=10000.0, use_sliding_window=False,
                             sliding_window=None, rms_norm_eps=1e-6,
                             rope_scaling={"type": "yarn", "factor": 4.0,
                                           "original_max_position_embeddings": 32}),
    # Llama 3.1 scaling whose smooth band holds a frequency (wavelength 32.5 between 64 / 4 and
    # 64 / 1); tools/make_gguf_fixtures.py also converts it to a GGUF with rope_freqs.weight.
    "llama3_rope_band": llama_like("llama", num_key_value_heads=2, rope_theta=500000.0,
                                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                 "high_freq_factor": 4.0,
                                                 "original_max_position_embeddings": 64}),
}

SEQS = [[1, 17, 42, 99, 5, 63, 120, 7, 33, 88, 2, 54, 76],
        [1, 9, 100, 23, 64, 31, 127, 45, 12, 90, 3, 77, 58, 111, 20, 66, 39, 81, 14, 102]]
GREEDY_PROMPTS = [[1, 50, 60, 70], [1, 11, 22, 33, 44, 55, 66, 77, 88]]
GREEDY_NEW = 16

def randomize(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif "embed" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))

def f32list(t):
    return [float(x) for x in t.float().tolist()]

def main(out_dir, only):
    unknown = set(only) - set(VARIANTS)
    if unknown:
        sys.exit(f"unknown variant(s) {sorted(unknown)}; known: {list(VARIANTS)}")
    torch.manual_seed(0)
    for i, (name, cfg_dict) in enumerate(VARIANTS.items()):  # i seeds the weights: keep the order
        if only and name not in only:
            continue
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        cfg = AutoConfig.for_model(cfg_dict["model_type"],
                                   **{k: v for k, v in cfg_dict.items() if k != "model_type"})
        cfg._attn_implementation = "eager"
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
        randomize(model, torch.Generator().manual_seed(1000 + i))
        if cfg_dict.get("tie_word_embeddings"):
            model.tie_weights()
        model.save_pretrained(d, safe_serialization=True)
        os.replace(os.path.join(d, "config.json"), os.path.join(d, "config.hf.json"))
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg_dict, f, indent=2)
        exp = {"transformers_version": transformers.__version__, "torch_version": torch.__version__,
               "model_type": cfg_dict["model_type"], "sequences": [], "greedy": []}
        with torch.no_grad():
            for ids in SEQS:
                logits = model(torch.tensor([ids])).logits[0]
                exp["sequences"].append({"input_ids": ids, "logits": [f32list(r) for r in logits]})
            for prompt in GREEDY_PROMPTS:
                ids = list(prompt)
                gen, margins = [], []
                for _ in range(GREEDY_NEW):
                    last = model(torch.tensor([ids])).logits[0, -1]
                    top2 = torch.topk(last, 2)
                    nxt = int(top2.indices[0])
                    margins.append(float(top2.values[0] - top2.values[1]))
                    gen.append(nxt)
                    ids.append(nxt)
                exp["greedy"].append({"prompt_ids": prompt, "generated_ids": gen, "margins": margins})
        with open(os.path.join(d, "expected.json"), "w") as f:
            json.dump(exp, f)
        rp = getattr(model.config, "rope_parameters", None) or getattr(model.config, "rope_scaling", None)
        print(f"{name}: params={sum(p.numel() for p in model.parameters())} rope={rp} "
              f"sliding_window={getattr(model.config, 'sliding_window', None)} "
              f"min_margin={min(min(g['margins']) for g in exp['greedy']):.4f}")

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: make_hf_parity_fixtures.py OUT_DIR [NAME...]")
    main(sys.argv[1], sys.argv[2:])
