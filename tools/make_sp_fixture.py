#!/usr/bin/env python3
"""Makes the SentencePiece test fixtures of tests/data/tokenizer/.

Trains a tiny SentencePiece BPE model (vocab 400, byte fallback, identity normalization and
no removal of extra whitespace, like Llama's tokenizer.model) on the text below, then writes:
  tiny_sp.model        the model (a few KB)
  tiny_sp.gguf         the same vocabulary as GGUF tokenizer metadata (tokenizer.ggml.model
                       "llama": tokens, scores, token types, BOS/EOS, add_space_prefix), no tensors
  tiny_sp_oracle.json  {"strings": tricky_strings.json's list, "ids": python sentencepiece
                       encode(s) (no BOS/EOS), "decoded": decode(ids), "versions": {...}}

Needs: python sentencepiece, gguf (tools/setup.sh installs both). Deterministic for a given
sentencepiece version (one thread, fixed seed). Usage: python3 tools/make_sp_fixture.py
"""
import io
import json
import pathlib

import gguf
import sentencepiece as spm

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "tokenizer"

# A few KB of varied English with some punctuation, digits and accented words, written for
# this fixture. Characters it lacks (CJK, emoji, ...) fall back to byte pieces.
TEXT = """
The tokenizer splits text into pieces and maps each piece to an integer id. A model reads
those ids, predicts the next one, and the tokenizer turns the answer back into text.
Small models are quick to train, so this one learns its vocabulary from a short story.

Once upon a time, in a quiet town by the river, there lived a baker named Clara. Every
morning she rose at five o'clock, lit the oven and kneaded the dough for the day's bread.
Her neighbours said the smell of fresh loaves was the best alarm clock in the world.
One winter the river froze, and the mill that ground her flour stopped turning. Clara did
not give up: she walked twelve miles to the next village, bought three sacks of flour and
carried them home on a borrowed sled. The town ate bread that week, and the week after.

Numbers appear everywhere: 1, 2, 3, 10, 42, 100, 2024, 3.14159, 1,000,000 and 0.5 percent.
Dates look like 2026-11-29 and times like 23:59:59. Prices are $9.99 or 12.50 EUR.
Code looks different: def square(x): return x * x  # comment
    for i in range(10):
        print(i, square(i))
if (a < b && b > c) { return a + b; } else { return -1; }

People ask questions. How are you? I'm fine, thanks! Don't worry, we'll see. They've left;
she'll call later, and he'd like tea. You're welcome. It's a nice day, isn't it?
Café, naïve, résumé and coöperate keep their accents. Ünïcödé is fun.
Some text is written in CAPS, some in MiXeD case, and some in lower case.
Tabs	separate	columns, and newlines separate lines.
Email me at someone@example.com or visit https://example.com/path?query=1&other=2#top.

The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.
How vexingly quick daft zebras jump! Sphinx of black quartz, judge my vow.
A journey of a thousand miles begins with a single step. Knowledge is power.
Time flies like an arrow; fruit flies like a banana. All that glitters is not gold.
The early bird catches the worm, but the second mouse gets the cheese.
"""


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([line for line in TEXT.splitlines() if line.strip()]),
        model_writer=model,
        model_type="bpe",
        vocab_size=400,
        byte_fallback=True,
        character_coverage=1.0,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=True,
        split_digits=True,
        num_threads=1,
        seed_sentencepiece_size=100000,
        bos_id=1,
        eos_id=2,
        unk_id=0,
        pad_id=-1,
        minloglevel=2,
    )
    model_bytes = model.getvalue()
    (OUT / "tiny_sp.model").write_bytes(model_bytes)

    sp = spm.SentencePieceProcessor(model_proto=model_bytes)
    strings = json.loads((OUT / "tricky_strings.json").read_text(encoding="utf-8"))["strings"]
    ids = [sp.encode(s) for s in strings]
    oracle = {
        "strings": strings,
        "ids": ids,
        "decoded": [sp.decode(i) for i in ids],
        "bos_id": sp.bos_id(),
        "eos_id": sp.eos_id(),
        "versions": {"sentencepiece": spm.__version__},
    }
    # One list per line keeps the file short and diffs readable.
    lines = ",\n".join(f" {json.dumps(k)}: " + (
        "[\n" + ",\n".join("  " + json.dumps(x, ensure_ascii=False) for x in v) + "\n ]"
        if isinstance(v, list) else json.dumps(v)) for k, v in oracle.items())
    (OUT / "tiny_sp_oracle.json").write_text("{\n" + lines + "\n}\n", encoding="utf-8")

    # Same vocabulary as GGUF metadata, the way llama.cpp's convert_hf_to_gguf.py writes a
    # SentencePiece vocabulary (token types: 1 normal, 2 unknown, 3 control, 6 byte).
    n = sp.get_piece_size()
    tokens, scores, types = [], [], []
    for i in range(n):
        tokens.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else 1)
    w = gguf.GGUFWriter(str(OUT / "tiny_sp.gguf"), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(sp.bos_id())
    w.add_eos_token_id(sp.eos_id())
    w.add_unk_token_id(sp.unk_id())
    w.add_add_bos_token(True)
    w.add_add_space_prefix(True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {OUT}/tiny_sp.model ({len(model_bytes)} bytes), tiny_sp.gguf, tiny_sp_oracle.json "
          f"(sentencepiece {spm.__version__}, {n} pieces)")


if __name__ == "__main__":
    main()
