"""llama.cpp's ids for every distinct `tokenizer.ggml.pre` pattern set: the
byte-level vocabulary of tests/vectors/tokenizers/bpe_gpt2.json (trained on
our text) is written as a vocab-only GGUF once per pre name (to a temporary
folder), and llama.cpp tokenizes a dozen corpus texts with each through
node-llama-cpp (gguf_vocab_llamacpp.mjs).

    NODE_PATH=/tmp/nlc/node_modules /work/refpy/bin/python tests/vectors/gen/gguf_vocab_pre.py

Writes tests/vectors/gguf_vocab/pre.llamacpp.json: { texts, vocab, ids: { pre: [[...], ...] } }.
"""

import json
import os
import subprocess
import sys
import tempfile

import gguf

sys.path.insert(0, os.path.dirname(__file__))
from _tokenizers_corpus import TEST_TEXTS  # noqa: E402

HERE = os.path.dirname(__file__)
OUT = os.path.join(HERE, "..", "gguf_vocab", "pre.llamacpp.json")
# one name per distinct pattern set in llama.cpp (aliases share a set)
PRES = ["default", "llama3", "dbrx", "deepseek-llm", "deepseek-coder", "deepseek-v3", "falcon", "starcoder",
        "gpt-2", "qwen2", "stablelm2", "chatglm-bpe", "poro-chat", "bloom", "viking", "tekken", "gpt-4o",
        "chameleon", "bailingmoe", "seed-coder", "jais-2", "spark2_5", "youtu", "qwen35",
        "granite-embed-multi-97m", "tiny_aya", "ufakzeka", "laguna", "exaone-moe", "minicpm5", "grok-2",
        "refact", "smollm", "mpt", "command-r", "exaone", "megrez", "hunyuan-dense", "llama4"]
TEXTS = [0, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 16, 17, 19, 23, 24, 32, 33, 34, 35, 37]


def main():
    src = json.load(open(os.path.join(HERE, "..", "tokenizers", "bpe_gpt2.json")))["tokenizer"]
    vocab = src["model"]["vocab"]
    added = {a["id"]: a for a in src["added_tokens"]}
    n = max(max(vocab.values()), max(added)) + 1
    tokens = [""] * n
    types = [1] * n
    for t, i in vocab.items():
        tokens[i] = t
    for i, a in added.items():
        tokens[i] = a["content"]
        types[i] = 3 if a["special"] else 4
    merges = [" ".join(m) if isinstance(m, list) else m for m in src["model"]["merges"]]
    tmp = tempfile.mkdtemp()
    for pre in PRES:
        w = gguf.GGUFWriter(os.path.join(tmp, f"{pre}.gguf"), "llama")
        w.add_context_length(256)
        w.add_embedding_length(64)
        w.add_block_count(1)
        w.add_feed_forward_length(128)
        w.add_head_count(2)
        w.add_layer_norm_rms_eps(1e-5)
        w.add_rope_dimension_count(32)
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_list([t.encode("utf-8") for t in tokens])
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(0)
        w.add_eos_token_id(0)
        w.add_add_bos_token(False)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    texts = [TEST_TEXTS[i] for i in TEXTS]
    with open(os.path.join(tmp, "texts.json"), "w") as f:
        json.dump(texts, f)
    subprocess.run(["node", os.path.join(HERE, "gguf_vocab_llamacpp.mjs"), tmp, os.path.join(tmp, "texts.json")],
                   check=True)
    ids, gen = {}, None
    for pre in PRES:
        r = json.load(open(os.path.join(tmp, f"{pre}.llamacpp.json")))
        ids[pre] = r["encode"]
        gen = r["generator"]
    with open(OUT, "w") as f:
        json.dump({"generator": f"tests/vectors/gen/gguf_vocab_pre.py via {gen}", "vocab": "tokenizers/bpe_gpt2.json",
                   "texts": TEXTS, "ids": ids}, f, separators=(",", ":"))
    print(OUT, os.path.getsize(OUT))


if __name__ == "__main__":
    main()
