#!/usr/bin/env python3
"""Writes the safetensors test fixtures of dak into tests/data/safetensors/ using only json,
struct and numpy (no torch, no safetensors package), following the format spec
(huggingface/safetensors README "Format"): u64 little-endian header size, JSON header
{name: {dtype, shape, data_offsets}} + "__metadata__", then the data section.

A tiny llama (2 layers, hidden 16, 2 heads, 1 kv head, head_dim 8, ffn 32, vocab 16,
tied embeddings) saved twice:
  tiny_llama_sharded/  config.json, model.safetensors.index.json and two shards
                       (layer 0 + embeddings in shard 1, the rest in shard 2);
  tiny_llama_single/   config.json and one model.safetensors (tensor order shuffled, a gap
                       between two tensors' data);
with BF16, F16 and F32 tensors. expected.json lists every tensor (name, dtype, shape, shard,
offset into expected.f32) and expected.f32 the fp32 values numpy decodes from the stored
bits (bf16: bits << 16; f16: numpy float16 -> float32), little-endian, concatenated.

Usage: python3 tools/make_safetensors_fixtures.py   (fixed seed: output is reproducible)
"""
import json
import os
import struct

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "safetensors")

VOCAB, HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN = 16, 16, 2, 2, 1, 8, 32

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "vocab_size": VOCAB,
    "hidden_size": HIDDEN,
    "intermediate_size": FFN,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": HEADS,
    "num_key_value_heads": KV_HEADS,
    "head_dim": HEAD_DIM,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": True,
    "attention_bias": False,
    "mlp_bias": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "torch_dtype": "bfloat16",
}


def tensor_specs():
    """(name, shape, dtype, shard) of every tensor, shard 1 or 2."""
    specs = [("model.embed_tokens.weight", (VOCAB, HIDDEN), "BF16", 1)]
    dtypes = ["BF16", "F16", "F32"]
    for l in range(LAYERS):
        p = f"model.layers.{l}."
        shard = 1 if l == 0 else 2
        layer = [
            ("input_layernorm.weight", (HIDDEN,)),
            ("self_attn.q_proj.weight", (HEADS * HEAD_DIM, HIDDEN)),
            ("self_attn.k_proj.weight", (KV_HEADS * HEAD_DIM, HIDDEN)),
            ("self_attn.v_proj.weight", (KV_HEADS * HEAD_DIM, HIDDEN)),
            ("self_attn.o_proj.weight", (HIDDEN, HEADS * HEAD_DIM)),
            ("post_attention_layernorm.weight", (HIDDEN,)),
            ("mlp.gate_proj.weight", (FFN, HIDDEN)),
            ("mlp.up_proj.weight", (FFN, HIDDEN)),
            ("mlp.down_proj.weight", (HIDDEN, FFN)),
        ]
        for i, (n, shape) in enumerate(layer):
            specs.append((p + n, shape, dtypes[(i + l) % 3], shard))
    specs.append(("model.norm.weight", (HIDDEN,), "F32", 2))
    return specs


def encode(values: np.ndarray, dtype: str) -> tuple[bytes, np.ndarray]:
    """Stored bytes and the fp32 values they decode to."""
    if dtype == "F32":
        v = values.astype("<f4")
        return v.tobytes(), v.astype(np.float32)
    if dtype == "F16":
        v = values.astype("<f2")
        return v.tobytes(), v.astype(np.float32)
    # BF16: round to nearest even on the fp32 bits (finite values only here).
    bits = values.astype(np.float32).view(np.uint32)
    bf = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16).astype("<u2")
    return bf.tobytes(), (bf.astype(np.uint32) << 16).view(np.float32)


def write_file(path: str, entries: list, metadata: dict | None, gap_after: str | None = None):
    """entries: (name, dtype, shape, bytes) in data order."""
    header, data, pos = {}, bytearray(), 0
    for name, dtype, shape, raw in entries:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [pos, pos + len(raw)]}
        data += raw
        pos += len(raw)
        if name == gap_after:
            data += b"\xAB" * 6
            pos += 6
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # the reference writer pads the header to 8 bytes with spaces
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        f.write(data)


def main():
    rng = np.random.default_rng(7)
    specs = tensor_specs()
    stored, expected, index = {}, [], []
    offset = 0
    for name, shape, dtype, shard in specs:
        vals = (rng.standard_normal(shape) * 0.3).astype(np.float32)
        if name.endswith("norm.weight"):
            vals += np.float32(1.0)
        raw, dec = encode(vals, dtype)
        stored[name] = (dtype, shape, raw, shard)
        expected.append(dec.reshape(-1))
        n = int(np.prod(shape))
        index.append({"name": name, "dtype": dtype.lower(), "shape": list(shape),
                      "shard": f"model-0000{shard}-of-00002.safetensors",
                      "offset_floats": offset, "count": n})
        offset += n

    sharded = os.path.join(OUT, "tiny_llama_sharded")
    single = os.path.join(OUT, "tiny_llama_single")
    for d in (sharded, single):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(CONFIG, f, indent=2)
            f.write("\n")

    weight_map = {}
    for shard in (1, 2):
        fname = f"model-0000{shard}-of-00002.safetensors"
        entries = [(n, dt, sh, raw) for n, (dt, sh, raw, s) in stored.items() if s == shard]
        write_file(os.path.join(sharded, fname), entries, {"format": "pt"})
        weight_map.update({n: fname for n, *_ in entries})
    total = sum(len(raw) for _, _, raw, _ in stored.values())
    with open(os.path.join(sharded, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")

    shuffled = list(stored.items())
    np.random.default_rng(3).shuffle(shuffled)
    entries = [(n, dt, sh, raw) for n, (dt, sh, raw, _) in shuffled]
    write_file(os.path.join(single, "model.safetensors"), entries, None, gap_after=entries[2][0])

    np.concatenate(expected).astype("<f4").tofile(os.path.join(OUT, "expected.f32"))
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump({"generator": "tools/make_safetensors_fixtures.py", "numpy_version": np.__version__,
                   "values_file": "expected.f32", "config": CONFIG, "tensors": index}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
