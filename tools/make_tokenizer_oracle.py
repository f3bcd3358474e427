#!/usr/bin/env python3
"""Tokenizer oracle: transformers' tokenizer loaded from a GGUF file encodes and decodes the
strings of tests/data/tokenizer/tricky_strings.json; also saves the tokenizer as tokenizer.json.
Runs where transformers + gguf exist (the GPU machine; gguf carried as a wheel):
    python3 tools/make_tokenizer_oracle.py VOCAB.gguf STRINGS.json OUT_DIR
Writes OUT_DIR/smollm2_oracle.json and OUT_DIR/smollm2/{tokenizer.json, tokenizer_config.json, ...}."""
import json
import os
import sys

import transformers
from transformers import AutoTokenizer

def main(gguf_path, strings_path, out_dir):
    strings = json.load(open(strings_path, encoding="utf-8"))["strings"]
    tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(gguf_path)),
                                        gguf_file=os.path.basename(gguf_path))
    ids = [tok.encode(s, add_special_tokens=False) for s in strings]
    decoded = [tok.decode(i) for i in ids]
    chat = tok.apply_chat_template([{"role": "user", "content": "What is 2+2?"}], tokenize=False,
                                   add_generation_prompt=True) if tok.chat_template else None
    out = {"source": os.path.basename(gguf_path), "transformers_version": transformers.__version__,
           "tokenizer_class": type(tok).__name__, "strings": strings, "ids": ids, "decoded": decoded,
           "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id,
           "chat_example": {"messages": [{"role": "user", "content": "What is 2+2?"}], "rendered": chat}}
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "smollm2_oracle.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    tok.save_pretrained(os.path.join(out_dir, "smollm2"))
    print("tokenizer oracle:", type(tok).__name__, "strings", len(strings), "bos", tok.bos_token_id,
          "eos", tok.eos_token_id)

if __name__ == "__main__":
    main(*sys.argv[1:4])
