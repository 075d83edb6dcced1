"""Writes a MiniLM-shaped random BERT (all-MiniLM-L6-v2's shape: 384 wide,
6 layers, 12 heads, 1536 inner, 30522 ids, 512 positions) for
bench/embed_compare.ts: a Hugging Face folder with sentence-transformers'
mean pooling + Normalize, and the same weights exported by torch.onnx to
onnx/model.onnx (last_hidden_state), the layout transformers.js loads.

Usage: /work/refpy/bin/python bench/encoder_model.py OUT_DIR
(torch 2.13, transformers 5.18, sentence-transformers, tokenizers)
"""

import json
import os
import sys

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, decoders
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast


def main(out):
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    cfg = BertConfig(
        vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
        intermediate_size=1536, max_position_embeddings=512, type_vocab_size=2,
    )
    torch.manual_seed(0)
    m = BertModel(cfg, add_pooling_layer=False).eval()
    m.save_pretrained(out, safe_serialization=True)
    # a WordPiece vocabulary of 30522 entries (ids only matter for the bench)
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])}
    for i in range(len(vocab), cfg.vocab_size):
        vocab[f"w{i}"] = i
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]", model_max_length=512,
    ).save_pretrained(out)
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ], f)
    with open(os.path.join(out, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True}, f)
    ids = torch.randint(5, cfg.vocab_size, (2, 16))
    mask = torch.ones_like(ids)
    types = torch.zeros_like(ids)

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state

    dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
           "token_type_ids": {0: "batch", 1: "seq"}}
    torch.onnx.export(
        Wrap(m), (ids, mask, types), os.path.join(out, "onnx", "model.onnx"),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state"], dynamic_axes=dyn, opset_version=17, dynamo=False,
    )
    print("wrote", out)


if __name__ == "__main__":
    main(sys.argv[1])
