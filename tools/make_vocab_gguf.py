#!/usr/bin/env python3
"""Copies the metadata (tokenizer, chat template, hyper-parameters) of a GGUF file into a
tensor-less GGUF, small enough to carry to the GPU machine, where transformers loads the
tokenizer from it (the oracle of tests/data/tokenizer/smollm2_oracle.json).
    python3 tools/make_vocab_gguf.py models/SmolLM2-135M-Instruct.Q4_1.gguf OUT.gguf
Needs PyPI gguf (tools/setup.sh installs it)."""
import sys

import gguf

def main(src, dst):
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(key, field.contents(), vtype, sub_type=sub)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
