"""A tiny XLM-RoBERTa encoder with a SentencePiece Unigram tokenizer, as the
real XLM-R checkpoints have (multilingual E5, BGE-M3), and its
sentence-transformers embeddings.

The tokenizer is trained here with the `sentencepiece` library (Unigram,
`nmt_nfkc` normalization, so tokenizer.json carries a precompiled charsmap)
on a small corpus with accents, CJK, emoji and full-width text, then loaded
by transformers' XLMRobertaTokenizer from `sentencepiece.bpe.model` (its
converter: fairseq's id layout <s> <pad> </s> <unk>, pieces, <mask>). The
model is a randomly initialized XLMRobertaModel (seeded). Saved like the
other cases of encoders.py (its `save_st`), under
tests/vectors/encoders/xlm-roberta-unigram/, with expected.json holding the
Hugging Face token ids and sentence-transformers' embeddings of texts with
accents, combining marks, CJK, emoji, whitespace runs and tabs.

Run from the repository root:
  /work/refpy/bin/python tests/vectors/gen/encoders_unigram.py
"""

import os
import shutil
import sys
import tempfile

import sentencepiece as spm
import torch
from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizer

sys.path.insert(0, os.path.dirname(__file__))
from encoders import CORPUS, init_, save_st  # noqa: E402

EXTRA = [
    "Café naïve résumé à São Paulo, Zürich und Köln.",
    "Ça va? Où est la bibliothèque? Él está aquí.",
    "東京は日本の首都です。北京是中国的首都。",
    "서울은 한국의 수도입니다.",
    "emoji 😀🎉 are fun 👍 and so are cats 🐈",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ text",
    "spaces   and\ttabs between words",
]

TEXTS = [
    "hello world",
    "Café naïve résumé à São Paulo",
    "Cafe\u0301 with a combining accent",
    "東京は日本の首都です。",
    "北京是中国的首都 and Paris is the capital of France.",
    "emoji 😀🎉 fun 👍",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "  leading and   inner   whitespace runs  ",
    "tabs\tand\t\tmore\ttabs",
    "unseen: Ωμέγα ∑ 🦜 ק",
]


def main() -> None:
    tmp = tempfile.mkdtemp()
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("\n".join((CORPUS + EXTRA) * 3))
    spm.SentencePieceTrainer.train(
        input=corpus,
        model_prefix=os.path.join(tmp, "sp"),
        vocab_size=300,
        hard_vocab_limit=False,
        model_type="unigram",
        character_coverage=1.0,
        normalization_rule_name="nmt_nfkc",
        num_threads=1,
        seed_sentencepiece_size=1000,
    )
    d = os.path.join(tmp, "tok")
    os.makedirs(d)
    shutil.copy(os.path.join(tmp, "sp.model"), os.path.join(d, "sentencepiece.bpe.model"))
    tok = XLMRobertaTokenizer.from_pretrained(d, model_max_length=64)
    cfg = XLMRobertaConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=66, type_vocab_size=1,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(6)
    m = XLMRobertaModel(cfg, add_pooling_layer=False)
    init_(m, 6)
    save_st("xlm-roberta-unigram", m, tok, "mean", True, texts=TEXTS)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
