#!/usr/bin/env python3
"""Writes the GGUF test fixtures of dak into tests/data/gguf/ (oracle: PyPI `gguf` + numpy).

1. tiny_llama.gguf: a 2-layer llama (hidden 32, 4 heads, 2 kv heads, head_dim 8, ffn 32,
   vocab 32, untied output, q/k/v/o biases) whose tensors use every type dak reads (F32, F16,
   BF16, Q8_0, Q4_0, Q4_1), written with gguf.GGUFWriter exactly as llama.cpp's
   convert_hf_to_gguf.py would: q/k weights and biases row-permuted with LlamaModel.permute,
   ggml dims reversed. Alignment 64 (non-default) and one metadata key of every value type.
   tiny_llama_expected.json describes the config, the metadata and every tensor (HF name,
   GGUF name, dtype, HF shape, rope heads); tiny_llama_expected.f32 holds each tensor's
   expected fp32 values in HF layout (little-endian, concatenated in the JSON's order),
   computed with gguf.quants.dequantize and the numpy inverse of the permutation.
2. llama3_rope_band.gguf: the HF parity fixture tests/data/hf_parity/llama3_rope_band in the layout
   llama.cpp's convert_hf_to_gguf.py gives Llama 3.1 checkpoints (F32 tensors, q/k rows permuted, no
   rope scaling type, the per-frequency factors in the F32 tensor rope_freqs.weight, with that
   script's formula). One difference: the original context length is the fixture's rope_scaling one
   (64), where the script reads a top-level key with 8192 as its default (Llama 3.1's value, so real
   checkpoints come out the same). dak's logits on it are checked against the fixture's
   transformers logits.
3. quant_blocks.gguf: one tensor [2, 512] of each further block type dak decodes (Q5_0, Q5_1,
   Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS: what llama.cpp's Q4_K_M-style and IQ4 files hold)
   made of random bytes
   with finite fp16 scales, and quant_blocks_expected.f32: their values as gguf-py's
   gguf.quants.dequantize decodes them (the tensors in file order, fp32 little-endian).
4. smollm2_values.json: a few dozen values of the real models/SmolLM2-135M-Instruct.Q4_1.gguf
   (Q8_0 token_embd rows, Q4_1 q_proj / k_proj rows after undoing the permutation, a Q4_1
   down_proj, F32 norms), decoded by gguf.GGUFReader + gguf.quants.dequantize.

Usage: python3 tools/make_gguf_fixtures.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf] [--only NAME]
Re-running it reproduces the committed files bit for bit (fixed seed).
"""
import argparse
import json
import math
import os
import sys
from importlib.metadata import version

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "gguf")

VOCAB, HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, CONTEXT = 32, 32, 2, 4, 2, 8, 32, 128

# (gguf name suffix, HF name suffix, HF shape, type in layer 0, type in layer 1)
LAYER_TENSORS = [
    ("attn_norm.weight", "input_layernorm.weight", (HIDDEN,), Q.F32, Q.BF16),
    ("attn_q.weight", "self_attn.q_proj.weight", (HEADS * HEAD_DIM, HIDDEN), Q.Q4_1, Q.Q8_0),
    ("attn_q.bias", "self_attn.q_proj.bias", (HEADS * HEAD_DIM,), Q.F32, Q.F32),
    ("attn_k.weight", "self_attn.k_proj.weight", (KV_HEADS * HEAD_DIM, HIDDEN), Q.Q4_0, Q.BF16),
    ("attn_k.bias", "self_attn.k_proj.bias", (KV_HEADS * HEAD_DIM,), Q.F32, Q.F32),
    ("attn_v.weight", "self_attn.v_proj.weight", (KV_HEADS * HEAD_DIM, HIDDEN), Q.F16, Q.Q4_1),
    ("attn_v.bias", "self_attn.v_proj.bias", (KV_HEADS * HEAD_DIM,), Q.F32, Q.F32),
    ("attn_output.weight", "self_attn.o_proj.weight", (HIDDEN, HEADS * HEAD_DIM), Q.BF16, Q.F32),
    ("attn_output.bias", "self_attn.o_proj.bias", (HIDDEN,), Q.F32, Q.F16),
    ("ffn_norm.weight", "post_attention_layernorm.weight", (HIDDEN,), Q.F32, Q.F32),
    ("ffn_gate.weight", "mlp.gate_proj.weight", (FFN, HIDDEN), Q.Q8_0, Q.Q4_0),
    ("ffn_up.weight", "mlp.up_proj.weight", (FFN, HIDDEN), Q.Q4_0, Q.F16),
    ("ffn_down.weight", "mlp.down_proj.weight", (HIDDEN, FFN), Q.F32, Q.Q8_0),
]
GLOBAL_TENSORS = [
    ("token_embd.weight", "model.embed_tokens.weight", (VOCAB, HIDDEN), Q.Q8_0),
    ("output_norm.weight", "model.norm.weight", (HIDDEN,), Q.F32),
    ("output.weight", "lm_head.weight", (VOCAB, HIDDEN), Q.F16),
]

# One metadata key per GGUF value type: (key, value type, array element type, value).
EXTRA_METADATA = [
    ("dak.test.u8", V.UINT8, None, 200),
    ("dak.test.i8", V.INT8, None, -100),
    ("dak.test.u16", V.UINT16, None, 60000),
    ("dak.test.i16", V.INT16, None, -30000),
    ("dak.test.u32", V.UINT32, None, 4000000000),
    ("dak.test.i32", V.INT32, None, -2000000000),
    ("dak.test.u64", V.UINT64, None, 18000000000000000000),
    ("dak.test.i64", V.INT64, None, -9000000000000000000),
    ("dak.test.f32", V.FLOAT32, None, 0.1),
    ("dak.test.f64", V.FLOAT64, None, 0.1),
    ("dak.test.bool", V.BOOL, None, True),
    ("dak.test.string", V.STRING, None, "h\u00e9llo \u4e16\u754c"),
    ("dak.test.array_u8", V.ARRAY, V.UINT8, [0, 1, 255]),
    ("dak.test.array_i16", V.ARRAY, V.INT16, [-32768, 0, 32767]),
    ("dak.test.array_i32", V.ARRAY, V.INT32, [-1, 2, -3]),
    ("dak.test.array_u64", V.ARRAY, V.UINT64, [0, 9000000000000000000]),
    ("dak.test.array_f32", V.ARRAY, V.FLOAT32, [0.5, -0.25, 0.1]),
    ("dak.test.array_f64", V.ARRAY, V.FLOAT64, [1e-300, -2.5]),
    ("dak.test.array_bool", V.ARRAY, V.BOOL, [True, False, True]),
    ("dak.test.array_string", V.ARRAY, V.STRING, ["a", "", "bc"]),
]


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute: HF rotate-half rows -> interleaved."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of permute (the swap of axes 1 and 2 undone on the permuted layout)."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def as_json_value(vtype, sub, val):
    """The value as dak's GgufValue holds it: f32 values widened exactly to double."""
    if vtype == V.FLOAT32:
        return float(np.float32(val))
    if vtype == V.ARRAY and sub == V.FLOAT32:
        return [float(np.float32(x)) for x in val]
    if vtype == V.ARRAY and sub == V.BOOL:
        return [int(x) for x in val]  # dak stores bool arrays as integer arrays
    return val


def write_tiny_llama():
    rng = np.random.default_rng(20240611)
    w = gguf.GGUFWriter(os.path.join(OUT, "tiny_llama.gguf"), arch="llama")
    w.add_custom_alignment(64)
    w.add_name("dak tiny llama fixture")
    w.add_block_count(LAYERS)
    w.add_context_length(CONTEXT)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
    w.add_rope_scaling_factor(2.0)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_1)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"tok{i}" for i in range(VOCAB)])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_eot_token_id(3)
    for key, vtype, sub, val in EXTRA_METADATA:
        w.add_key_value(key, val, vtype, sub_type=sub)

    specs = [(g, hf, shape, t, None) for g, hf, shape, t in GLOBAL_TENSORS]
    for layer in range(LAYERS):
        for g, hf, shape, t0, t1 in LAYER_TENSORS:
            heads = HEADS if g.startswith("attn_q") else KV_HEADS if g.startswith("attn_k") else None
            specs.append((f"blk.{layer}.{g}", f"model.layers.{layer}.{hf}", shape,
                          t0 if layer == 0 else t1, heads))

    tensors, values = [], []
    offset = 0
    for gname, hfname, shape, qtype, heads in specs:
        hf_w = (rng.standard_normal(shape) * 0.5).astype(np.float32)
        if hfname.endswith("layernorm.weight") or hfname == "model.norm.weight":
            hf_w += np.float32(1.0)
        stored = permute(hf_w, heads) if heads else hf_w
        data = gguf.quants.quantize(stored, qtype)
        if qtype in (Q.F32, Q.F16):
            w.add_tensor(gname, data)
        else:
            w.add_tensor(gname, data, raw_dtype=qtype)
        expect = gguf.quants.dequantize(data, qtype).astype(np.float32).reshape(shape)
        if heads:
            expect = unpermute(expect, heads)
        if qtype == Q.F32:  # lossless types: the round trip must give the HF weight back
            assert np.array_equal(expect, hf_w), gname
        values.append(np.ascontiguousarray(expect).reshape(-1))
        tensors.append({"name": hfname, "gguf_name": gname, "dtype": qtype.name.lower(),
                        "shape": list(shape), "rope_heads": heads or 0,
                        "offset_floats": offset, "count": int(np.prod(shape))})
        offset += int(np.prod(shape))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    np.concatenate(values).astype("<f4").tofile(os.path.join(OUT, "tiny_llama_expected.f32"))
    doc = {
        "generator": "tools/make_gguf_fixtures.py",
        "gguf_package_version": version("gguf"),
        "numpy_version": np.__version__,
        "file": "tiny_llama.gguf",
        "values_file": "tiny_llama_expected.f32",
        "alignment": 64,
        "config": {
            "architecture": "llama", "vocab_size": VOCAB, "hidden_size": HIDDEN,
            "intermediate_size": FFN, "num_layers": LAYERS, "num_heads": HEADS,
            "num_kv_heads": KV_HEADS, "head_dim": HEAD_DIM, "max_position_embeddings": CONTEXT,
            "rope_theta": 500000.0, "rope_scaling": "linear", "rope_factor": 2.0,
            "norm_eps": float(np.float32(1e-5)), "tie_word_embeddings": False,
            "qkv_bias": True, "o_bias": True, "mlp_bias": False,
            "bos_token_id": 1, "eos_token_ids": [2, 3],
        },
        "metadata": [{"key": k, "type": vt.name.lower(), "element_type": st.name.lower() if st else None,
                      "value": as_json_value(vt, st, v)} for k, vt, st, v in EXTRA_METADATA],
        "tensors": tensors,
    }
    with open(os.path.join(OUT, "tiny_llama_expected.json"), "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def read_safetensors(path: str) -> dict:
    """name -> float32 array of an F32 safetensors file (the format is an 8-byte header length,
    a JSON header, then the data)."""
    with open(path, "rb") as f:
        blob = f.read()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(blob[8 + n + b:8 + n + e], dtype="<f4").reshape(t["shape"]).copy()
    return out


def llama3_rope_factors(cfg: dict) -> np.ndarray:
    """The formula of convert_hf_to_gguf.py's rope_freqs for rope_type llama3: 1 below the
    high-frequency wavelength, factor above the low-frequency one, 1 / ((1 - smooth) / factor +
    smooth) between; the original length from rope_scaling (see the module docstring)."""
    rs = cfg["rope_scaling"]
    base, dim = cfg["rope_theta"], cfg["hidden_size"] // cfg["num_attention_heads"]
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    factor, low, high, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], \
        rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / float(freq)
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_llama3_rope_gguf(name: str = "llama3_rope_band"):
    src = os.path.join(ROOT, "tests", "data", "hf_parity", name)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    assert cfg["rope_scaling"]["rope_type"] == "llama3" and not cfg["tie_word_embeddings"]
    t = read_safetensors(os.path.join(src, "model.safetensors"))
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    w = gguf.GGUFWriter(os.path.join(OUT, name + ".gguf"), arch="llama")
    w.add_name(f"dak {name} fixture (converted from tests/data/hf_parity/{name})")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_dimension_count(cfg["hidden_size"] // heads)
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_bos_token_id(cfg["bos_token_id"])
    w.add_eos_token_id(cfg["eos_token_id"])
    w.add_tensor("rope_freqs.weight", llama3_rope_factors(cfg))
    w.add_tensor("token_embd.weight", t["model.embed_tokens.weight"])
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w.add_tensor(f"blk.{i}.attn_norm.weight", t[p + "input_layernorm.weight"])
        w.add_tensor(f"blk.{i}.attn_q.weight", permute(t[p + "self_attn.q_proj.weight"], heads))
        w.add_tensor(f"blk.{i}.attn_k.weight", permute(t[p + "self_attn.k_proj.weight"], kv_heads))
        w.add_tensor(f"blk.{i}.attn_v.weight", t[p + "self_attn.v_proj.weight"])
        w.add_tensor(f"blk.{i}.attn_output.weight", t[p + "self_attn.o_proj.weight"])
        w.add_tensor(f"blk.{i}.ffn_norm.weight", t[p + "post_attention_layernorm.weight"])
        w.add_tensor(f"blk.{i}.ffn_gate.weight", t[p + "mlp.gate_proj.weight"])
        w.add_tensor(f"blk.{i}.ffn_up.weight", t[p + "mlp.up_proj.weight"])
        w.add_tensor(f"blk.{i}.ffn_down.weight", t[p + "mlp.down_proj.weight"])
    w.add_tensor("output_norm.weight", t["model.norm.weight"])
    w.add_tensor("output.weight", t["lm_head.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{name}.gguf: rope_freqs {llama3_rope_factors(cfg).tolist()}")


# (type, byte offsets of the block's fp16 fields) for quant_blocks.gguf.
QUANT_BLOCK_TYPES = [
    (Q.Q5_0, [0]), (Q.Q5_1, [0, 2]), (Q.Q2_K, [80, 82]), (Q.Q3_K, [108]),
    (Q.Q4_K, [0, 2]), (Q.Q5_K, [0, 2]), (Q.Q6_K, [208]), (Q.IQ4_NL, [0]), (Q.IQ4_XS, [0]),
]


def write_quant_blocks():
    rng = np.random.default_rng(20261205)
    w = gguf.GGUFWriter(os.path.join(OUT, "quant_blocks.gguf"), arch="llama")
    w.add_name("dak quantized block fixture")
    values = []
    rows, cols = 2, 512
    for qtype, half_fields in QUANT_BLOCK_TYPES:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        n_blocks = rows * cols // block
        blocks = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
        for off in half_fields:  # finite scales of either sign, including small ones
            h = (rng.standard_normal(n_blocks) * 0.02).astype(np.float16)
            blocks[:, off:off + 2] = h.view(np.uint8).reshape(n_blocks, 2)
        data = blocks.reshape(rows, -1)
        w.add_tensor(qtype.name.lower(), data, raw_dtype=qtype)
        expect = gguf.quants.dequantize(data, qtype).astype(np.float32).reshape(-1)
        assert expect.size == rows * cols and np.all(np.isfinite(expect)), qtype.name
        values.append(expect)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    np.concatenate(values).astype("<f4").tofile(os.path.join(OUT, "quant_blocks_expected.f32"))


def write_smollm2_values(model_path: str):
    r = gguf.GGUFReader(model_path)
    heads = int(r.fields["llama.attention.head_count"].contents())
    kv_heads = int(r.fields["llama.attention.head_count_kv"].contents())
    by_name = {t.name: t for t in r.tensors}

    def hf_matrix(name, n_head=None):
        t = by_name[name]
        ne0 = int(t.shape[0])  # ggml order: ne[0] is the row length
        m = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(-1, ne0)
        return unpermute(m, n_head) if n_head else m

    picks = [  # (gguf name, HF name, rows, first n columns, heads to un-permute)
        ("token_embd.weight", "model.embed_tokens.weight", [0, 1, 1000, 49151], 8, None),
        ("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", [0, 1, 31, 32, 63, 64, 575], 6, heads),
        ("blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", [0, 1, 32, 33, 191], 6, kv_heads),
        ("blk.29.ffn_down.weight", "model.layers.29.mlp.down_proj.weight", [0, 575], 6, None),
        ("blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight", [0], 8, None),
        ("output_norm.weight", "model.norm.weight", [0], 8, None),
    ]
    entries = []
    for gname, hfname, rows, ncols, n_head in picks:
        m = hf_matrix(gname, n_head)
        entries.append({
            "name": hfname, "gguf_name": gname, "dtype": by_name[gname].tensor_type.name.lower(),
            "shape": [int(x) for x in reversed(by_name[gname].shape)],
            "rope_heads": n_head or 0,
            "rows": rows,
            "values": [[float(x) for x in m[r, :ncols]] for r in rows],
        })
    doc = {
        "generator": "tools/make_gguf_fixtures.py",
        "gguf_package_version": version("gguf"),
        "numpy_version": np.__version__,
        "model_file": os.path.basename(model_path),
        "model_file_size": os.path.getsize(model_path),
        "config": {
            "architecture": str(r.fields["general.architecture"].contents()),
            "num_layers": int(r.fields["llama.block_count"].contents()),
            "hidden_size": int(r.fields["llama.embedding_length"].contents()),
            "intermediate_size": int(r.fields["llama.feed_forward_length"].contents()),
            "num_heads": heads, "num_kv_heads": kv_heads,
            "vocab_size": len(r.fields["tokenizer.ggml.tokens"].data),
            "max_position_embeddings": int(r.fields["llama.context_length"].contents()),
            "rope_theta": float(r.fields["llama.rope.freq_base"].contents()),
            "norm_eps": float(r.fields["llama.attention.layer_norm_rms_epsilon"].contents()),
            "tie_word_embeddings": "output.weight" not in by_name,
            "tensor_count": len(r.tensors),
        },
        "note": "values[i][j] = HF-layout tensor[rows[i], j], decoded by gguf.quants.dequantize; "
                "q/k rows un-permuted with the inverse of convert_hf_to_gguf.py LlamaModel.permute",
        "tensors": entries,
    }
    with open(os.path.join(OUT, "smollm2_values.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--only", choices=["tiny_llama", "llama3_rope_band", "quant_blocks", "smollm2_values"],
                    help="write one of the fixtures only")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if args.only in (None, "tiny_llama"):
        write_tiny_llama()
    if args.only in (None, "llama3_rope_band"):
        write_llama3_rope_gguf()
    if args.only in (None, "quant_blocks"):
        write_quant_blocks()
    if args.only not in (None, "smollm2_values"):
        return
    if os.path.exists(args.model):
        write_smollm2_values(args.model)
    else:
        print(f"note: {args.model} not found, smollm2_values.json not written", file=sys.stderr)


if __name__ == "__main__":
    main()
