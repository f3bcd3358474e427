#!/usr/bin/env python3
"""Expected logit error of dak's GPU engine on the HF parity fixtures, by emulation.

The GPU engine (src/gpu/gpu_engine.h) rounds to bf16 at fixed points: weights, norm outputs
(GEMM inputs), every GEMM output, q/k after RoPE and v (the KV cache), the attention output and
the SiLU-gate product; the residual stream, softmax and all accumulations stay fp32 or wider.
This script replays the fixtures' forward pass in float64 numpy with exactly those roundings
(bf16 round-to-nearest-even) and prints, per fixture, the worst |emulated - HF| relative to the
row's max |logit|, the RMS ratio, and the teacher-forced greedy mismatches with their margins.
With --exact (no roundings) the same code reproduces HF's logits to ~1e-6, which checks the
emulated semantics. tests/gpu/test_gpu_engine.cc takes its tolerance table from this output.

Usage: python3 tests/gpu/bf16_error_model.py [--exact]   (numpy only; ~10 s)
"""
import json
import os
import struct
import sys

import numpy as np

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'hf_parity')


def bf16(x):
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def load_safetensors(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for k, v in header.items():
        if k == '__metadata__':
            continue
        a, b = v['data_offsets']
        out[k] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(v['shape'])
    return out


def inv_freq(c, d):
    f = 1.0 / c.get('rope_theta', 10000.0) ** (np.arange(0, d, 2) / d)
    rs = c.get('rope_scaling') or {}
    kind = rs.get('rope_type', rs.get('type'))
    if kind == 'linear':
        f = f / rs['factor']
    elif kind == 'llama3':
        fac, lo, hi, old = rs['factor'], rs['low_freq_factor'], rs['high_freq_factor'], rs['original_max_position_embeddings']
        wl = 2 * np.pi / f
        fl = np.where(wl > old / lo, f / fac, f)
        smooth = (old / wl - lo) / (hi - lo)
        medium = ~(wl < old / hi) & ~(wl > old / lo)
        f = np.where(medium, (1 - smooth) * fl / fac + smooth * fl, fl)
    return f.astype(np.float32)


def forward(folder, ids, exact):
    c = json.load(open(os.path.join(folder, 'config.json')))
    w = load_safetensors(os.path.join(folder, 'model.safetensors'))
    rnd = (lambda x: np.asarray(x, np.float32)) if exact else bf16
    opt = c['model_type'] == 'opt'
    H, hd = c['num_attention_heads'], c['hidden_size']
    Hkv = H if opt else c.get('num_key_value_heads', H)
    D = c.get('head_dim', hd // H)
    T = len(ids)
    pre = 'model.decoder.' if opt else 'model.'
    eps = 1e-5 if opt else c['rms_norm_eps']
    pre_ln = (not opt) or c['do_layer_norm_before']
    window = c.get('sliding_window') if c['model_type'] == 'mistral' else None

    def W(name):
        return rnd(w[name]) if name in w else None

    def linear(x, name, bias=True):
        y = rnd(x).astype(np.float64) @ W(name + '.weight').astype(np.float64).T
        b = W(name + '.bias') if bias else None
        return rnd((y if b is None else y + b).astype(np.float32))

    def norm(x, name):  # fp32 statistics on the fp32 residual; returns fp32
        x = x.astype(np.float64)
        if opt:
            m = x.mean(-1, keepdims=True)
            y = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * W(name + '.weight') + W(name + '.bias')
        else:
            y = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * W(name + '.weight')
        return y.astype(np.float32)

    pos = np.arange(T)
    if opt:
        e = W(pre + 'embed_tokens.weight')[ids]
        if c['word_embed_proj_dim'] != hd:
            e = linear(e, pre + 'project_in', bias=False)
        x = (e + W(pre + 'embed_positions.weight')[pos + 2]).astype(np.float32)
    else:
        x = W(pre + 'embed_tokens.weight')[ids].astype(np.float32)
        ang = (pos[:, None].astype(np.float32) * inv_freq(c, D)[None, :]).astype(np.float64)
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def rope(z):
        z1, z2 = z[..., :D // 2], z[..., D // 2:]
        return rnd(np.concatenate([z1 * cos - z2 * sin, z2 * cos + z1 * sin], -1).astype(np.float32))

    G = H // Hkv
    mask = np.tril(np.ones((T, T), bool))
    if window:
        mask &= np.arange(T)[None, :] > np.arange(T)[:, None] - window
    for layer in range(c['num_hidden_layers']):
        p = pre + f'layers.{layer}.'
        n1, n2 = ('self_attn_layer_norm', 'final_layer_norm') if opt else ('input_layernorm', 'post_attention_layernorm')
        h = norm(x, p + n1) if pre_ln else x
        q = linear(h, p + 'self_attn.q_proj').reshape(T, H, D).astype(np.float64)
        k = linear(h, p + 'self_attn.k_proj').reshape(T, Hkv, D).astype(np.float64)
        v = linear(h, p + 'self_attn.v_proj').reshape(T, Hkv, D).astype(np.float64)
        if not opt:
            q, k = rope(q).astype(np.float64), rope(k).astype(np.float64)
        a = np.zeros((T, H, D))
        for head in range(H):
            s = np.where(mask, q[:, head] @ k[:, head // G].T / np.sqrt(D), -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            a[:, head] = (s / s.sum(-1, keepdims=True)) @ v[:, head // G]
        x = (x + linear(a.reshape(T, H * D), p + ('self_attn.out_proj' if opt else 'self_attn.o_proj'))).astype(np.float32)
        if not pre_ln:
            x = norm(x, p + n1)
        h = norm(x, p + n2) if pre_ln else x
        if opt:
            y = linear(np.maximum(linear(h, p + 'fc1'), 0), p + 'fc2')
        else:
            g = linear(h, p + 'mlp.gate_proj').astype(np.float64)
            y = linear(g / (1 + np.exp(-g)) * linear(h, p + 'mlp.up_proj'), p + 'mlp.down_proj')
        x = (x + y).astype(np.float32)
        if not pre_ln:
            x = norm(x, p + n2)
    h = norm(x, pre + 'final_layer_norm' if opt else 'model.norm') if pre_ln else x
    if opt and c['word_embed_proj_dim'] != hd:
        h = linear(h, pre + 'project_out', bias=False)
    tied = c.get('tie_word_embeddings', opt)
    lm = W(pre + 'embed_tokens.weight') if tied else W('lm_head.weight')
    return rnd(h).astype(np.float64) @ lm.astype(np.float64).T


def main():
    exact = '--exact' in sys.argv
    for name in sorted(os.listdir(FIXTURES)):
        folder = os.path.join(FIXTURES, name)
        e = json.load(open(os.path.join(folder, 'expected.json')))
        worst_row, worst_rms = 0.0, 0.0
        for s in e['sequences']:
            ref = np.array(s['logits'], np.float64)
            got = forward(folder, np.array(s['input_ids']), exact)
            err = np.abs(got - ref)
            worst_row = max(worst_row, (err / np.abs(ref).max(-1, keepdims=True)).max())
            worst_rms = max(worst_rms, np.sqrt((err ** 2).mean() / (ref ** 2).mean()))
        flips = []
        for b, g in enumerate(e['greedy']):
            got = forward(folder, np.array(g['prompt_ids'] + g['generated_ids']), exact)
            P = len(g['prompt_ids'])
            for i, want in enumerate(g['generated_ids']):
                am = int(np.argmax(got[P - 1 + i]))
                if am != want:
                    flips.append((b, i, am, want, round(g['margins'][i], 4)))
        print(f'{name:18s} max|err|/max|row| {worst_row:.4f}  rms ratio {worst_rms:.4f}  '
              f'greedy flips (seq, step, got, want, margin) {flips}')


if __name__ == '__main__':
    main()
