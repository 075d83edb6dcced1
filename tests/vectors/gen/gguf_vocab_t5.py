"""Writes vocab-only GGUF files with a SentencePiece Unigram vocabulary
(`tokenizer.ggml.model = "t5"`, what llama.cpp calls UGM), trained here
with the `sentencepiece` library on our own text, the way
convert_hf_to_gguf.py writes T5 vocabularies (pieces, scores, types, the
precompiled charsmap, add_space_prefix, remove_extra_whitespaces).

    /work/refpy/bin/python tests/vectors/gen/gguf_vocab_t5.py
    node tests/vectors/gen/gguf_vocab_llamacpp.mjs   # llama.cpp's ids (node-llama-cpp)

Writes tests/vectors/gguf_vocab/t5-*.gguf and t5-*.spm.json (SentencePiece's
own ids for the shared corpus, for comparison).
"""

import json
import os
import sys
import tempfile

import gguf
import sentencepiece as spm

sys.path.insert(0, os.path.dirname(__file__))
from _tokenizers_corpus import TEST_TEXTS, TRAIN_TEXT  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "gguf_vocab")
TMP = tempfile.mkdtemp()

RULES = [
    *[(f"{c:X}", f"{c - 0xFEE0:X}") for c in range(0xFF01, 0xFF5F)],
    ("3000", "20"), ("FB01", "66 69"), ("65 301", "E9"), ("D A", "A"), ("A0", "20"), ("2003", "20"),
]


def train(name, **kw):
    corpus = os.path.join(TMP, "corpus.txt")
    with open(corpus, "w") as f:
        f.write(TRAIN_TEXT + "\n".join(t for t in TEST_TEXTS if "\n" not in t))
    rules = os.path.join(TMP, "rules.tsv")
    with open(rules, "w") as f:
        f.writelines(f"{a}\t{b}\n" for a, b in RULES)
    prefix = os.path.join(TMP, name)
    args = dict(input=corpus, model_prefix=prefix, vocab_size=600, model_type="unigram", hard_vocab_limit=False,
                character_coverage=0.98, normalization_rule_tsv=rules, minloglevel=2,
                pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    args.update(kw)
    spm.SentencePieceTrainer.train(**args)
    return prefix + ".model"


def write(name, model_file):
    sp = spm.SentencePieceProcessor(model_file=model_file)
    from sentencepiece import sentencepiece_model_pb2 as pb
    proto = pb.ModelProto()
    with open(model_file, "rb") as f:
        proto.ParseFromString(f.read())
    tokens, scores, types = [], [], []
    for p in proto.pieces:
        tokens.append(p.piece.encode("utf-8"))
        scores.append(p.score)
        # SentencePiece types: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte
        types.append(p.type)
    path = os.path.join(OUT, f"{name}.gguf")
    w = gguf.GGUFWriter(path, "t5")
    w.add_name(name)
    w.add_context_length(512)
    w.add_embedding_length(64)
    w.add_feed_forward_length(128)
    w.add_block_count(1)
    w.add_head_count(2)
    w.add_key_length(32)
    w.add_value_length(32)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_relative_attn_buckets_count(32)
    w.add_decoder_start_token_id(0)
    w.add_tokenizer_model("t5")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_add_space_prefix(proto.normalizer_spec.add_dummy_prefix)
    w.add_remove_extra_whitespaces(proto.normalizer_spec.remove_extra_whitespaces)
    w.add_precompiled_charsmap(proto.normalizer_spec.precompiled_charsmap)
    w.add_pad_token_id(0)
    w.add_eos_token_id(1)
    w.add_unk_token_id(2)
    w.add_add_bos_token(False)
    w.add_add_eos_token(True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ids = [sp.encode(t) for t in TEST_TEXTS]
    with open(os.path.join(OUT, f"{name}.spm.json"), "w") as f:
        json.dump({"generator": f"tests/vectors/gen/gguf_vocab_t5.py (sentencepiece {spm.__version__})",
                   "encode": ids}, f, separators=(",", ":"))
    print(name, os.path.getsize(path))


def main():
    os.makedirs(OUT, exist_ok=True)
    write("t5-unigram", train("a"))
    write("t5-userdefined", train("b", user_defined_symbols=["<tag>", "\u2581\u2581", "@@"],
                                   control_symbols=["<ctl>"]))
    write("t5-noextra", train("c", remove_extra_whitespaces=False))


if __name__ == "__main__":
    main()
