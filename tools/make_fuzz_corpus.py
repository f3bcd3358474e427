#!/usr/bin/env python3
"""Writes the seed corpora of dak's libFuzzer targets into fuzz/corpus/<target>/.

fuzz_gguf:        a 1-layer llama GGUF with one tensor of every type dak reads (PyPI gguf
                  GGUFWriter + gguf.quants), and a metadata-only GGUF with every value type;
fuzz_safetensors: a 2-tensor safetensors file (json + struct + numpy) and an index document;
fuzz_hf_config:   small Hugging Face config.json documents for llama (llama3 rope scaling),
                  mistral (sliding window), qwen2 and opt.
Seeds stay small (a few KB) so the ctest fuzz runs start fast. Fixed seed: reproducible.
Usage: python3 tools/make_fuzz_corpus.py
"""
import json
import os
import struct

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def out(target: str, name: str) -> str:
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def gguf_seeds(rng):
    hidden, ffn, vocab, heads, kv_heads = 32, 32, 32, 4, 2
    w = gguf.GGUFWriter(out("fuzz_gguf", "tiny_llama.gguf"), arch="llama")
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_token_list([f"t{i}" for i in range(vocab)])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    hd = hidden // heads
    tensors = [
        ("token_embd.weight", (vocab, hidden), Q.Q8_0),
        ("output_norm.weight", (hidden,), Q.F32),
        ("blk.0.attn_norm.weight", (hidden,), Q.F32),
        ("blk.0.attn_q.weight", (heads * hd, hidden), Q.Q4_1),
        ("blk.0.attn_k.weight", (kv_heads * hd, hidden), Q.Q4_0),
        ("blk.0.attn_v.weight", (kv_heads * hd, hidden), Q.F16),
        ("blk.0.attn_output.weight", (hidden, heads * hd), Q.BF16),
        ("blk.0.ffn_norm.weight", (hidden,), Q.F32),
        ("blk.0.ffn_gate.weight", (ffn, hidden), Q.Q8_0),
        ("blk.0.ffn_up.weight", (ffn, hidden), Q.Q4_0),
        ("blk.0.ffn_down.weight", (hidden, ffn), Q.Q4_1),
    ]
    for name, shape, qtype in tensors:
        data = gguf.quants.quantize(rng.standard_normal(shape).astype(np.float32), qtype)
        if qtype in (Q.F32, Q.F16):
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    m = gguf.GGUFWriter(out("fuzz_gguf", "metadata_types.gguf"), arch="qwen2")
    m.add_custom_alignment(64)
    for key, vtype, sub, val in [
        ("a.u8", V.UINT8, None, 7), ("a.i8", V.INT8, None, -7), ("a.u16", V.UINT16, None, 700),
        ("a.i16", V.INT16, None, -700), ("a.u32", V.UINT32, None, 70000),
        ("a.i32", V.INT32, None, -70000), ("a.u64", V.UINT64, None, 2**40),
        ("a.i64", V.INT64, None, -(2**40)), ("a.f32", V.FLOAT32, None, 0.5),
        ("a.f64", V.FLOAT64, None, 0.25), ("a.bool", V.BOOL, None, True),
        ("a.str", V.STRING, None, "x"), ("a.arr_i32", V.ARRAY, V.INT32, [1, -2]),
        ("a.arr_f32", V.ARRAY, V.FLOAT32, [1.5]), ("a.arr_str", V.ARRAY, V.STRING, ["p", "q"]),
        ("a.arr_bool", V.ARRAY, V.BOOL, [False, True]),
    ]:
        m.add_key_value(key, val, vtype, sub_type=sub)
    m.add_tensor("w.weight", np.arange(8, dtype=np.float32))
    m.write_header_to_file()
    m.write_kv_data_to_file()
    m.write_tensors_to_file()
    m.close()


def safetensors_seeds(rng):
    a = rng.standard_normal((2, 3)).astype("<f4").tobytes()
    b = (rng.standard_normal(4).astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    header = {
        "__metadata__": {"format": "pt"},
        "model.norm.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, len(a)]},
        "lm_head.weight": {"dtype": "BF16", "shape": [4], "data_offsets": [len(a), len(a) + len(b)]},
    }
    h = json.dumps(header, separators=(",", ":")).encode()
    with open(out("fuzz_safetensors", "two_tensors.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + a + b)
    with open(out("fuzz_safetensors", "index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 40}, "weight_map": {
            "model.norm.weight": "model-00001-of-00002.safetensors",
            "lm_head.weight": "model-00002-of-00002.safetensors"}}, f)


def config_seeds():
    base = {"vocab_size": 32000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
            "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2}
    configs = {
        "llama3.json": {**base, "model_type": "llama", "head_dim": 16, "attention_bias": False,
                        "mlp_bias": False, "eos_token_id": [2, 3],
                        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                         "high_freq_factor": 4.0,
                                         "original_max_position_embeddings": 128}},
        "mistral.json": {**base, "model_type": "mistral", "sliding_window": 32},
        "qwen2.json": {**base, "model_type": "qwen2", "use_sliding_window": False,
                       "sliding_window": 64, "tie_word_embeddings": True,
                       "rope_scaling": {"type": "linear", "factor": 2.0}},
        "opt.json": {"model_type": "opt", "vocab_size": 50272, "hidden_size": 64, "ffn_dim": 256,
                     "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 128,
                     "word_embed_proj_dim": 32, "do_layer_norm_before": False,
                     "activation_function": "relu", "enable_bias": True, "bos_token_id": 2,
                     "eos_token_id": 2, "pad_token_id": 1},
    }
    for name, c in configs.items():
        with open(out("fuzz_hf_config", name), "w") as f:
            json.dump(c, f)


def main():
    rng = np.random.default_rng(11)
    gguf_seeds(rng)
    safetensors_seeds(rng)
    config_seeds()


if __name__ == "__main__":
    main()
