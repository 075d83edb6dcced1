"""Tiny random encoder models and their sentence-transformers embeddings.

Run from the repository root with /work/refpy/bin/python (transformers 5.18,
sentence-transformers, tokenizers 0.23, torch 2.13). For each case it trains a
tiny tokenizer on a fixed corpus, builds a randomly initialized encoder
(seeded), saves it with `save_pretrained` inside sentence-transformers' folder
layout (modules.json, 1_Pooling/config.json, 2_Normalize, prompts in
config_sentence_transformers.json) under tests/vectors/encoders/<case>/, and
writes the embeddings sentence-transformers computes for a batch of texts of
different lengths (so rows are padded) to tests/vectors/encoders/<case>/expected.json.
The cross-encoder case stores transformers' ...ForSequenceClassification
logits for text pairs.
"""

import json
import os
import shutil

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    BertModel,
    ModernBertConfig,
    ModernBertModel,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2Model,
    RobertaConfig,
    RobertaForSequenceClassification,
    RobertaModel,
    XLMRobertaConfig,
    XLMRobertaModel,
)
from sentence_transformers import SentenceTransformer, models as st_models

OUT = os.path.join(os.path.dirname(__file__), "..", "encoders")

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings map text to vectors for search and retrieval.",
    "A small model can still say something useful about a sentence.",
    "Paris is the capital of France; Berlin is the capital of Germany.",
    "How many tokens does this sentence have?",
    "Sentence transformers pool token vectors into one vector.",
    "unaffable unbelievable tokenization WordPiece subwords",
    "Cats and dogs are pets. Horses live on farms.",
    "query: what is the weather like today",
    "passage: the weather today is sunny and warm",
]

TEXTS = [
    "hello world",
    "The quick brown fox jumps over the lazy dog near the river bank at dawn.",
    "Paris is the capital of France.",
    "vectors",
    "Sentence transformers pool token vectors into one vector for search.",
    "Cats and dogs are pets; unbelievable tokenization!",
]

PAIRS = [
    ["what is the capital of France?", "Paris is the capital of France."],
    ["what is the capital of France?", "Cats and dogs are pets."],
    ["lazy dog", "The quick brown fox jumps over the lazy dog."],
    ["hello", "vectors for search and retrieval"],
]


def wordpiece_tokenizer(lowercase=True):
    # the vocabulary is built here, not trained (the WordPiece trainer's
    # ties make it differ from run to run): specials, every character of
    # the corpus alone and as a continuation, a few suffixes, then the
    # corpus words seen more than once or longer than six characters
    norm = normalizers.BertNormalizer(lowercase=lowercase)
    pre = pre_tokenizers.BertPreTokenizer()
    words = {}
    for line in CORPUS:
        for w, _ in pre.pre_tokenize_str(norm.normalize_str(line)):
            words[w] = words.get(w, 0) + 1
    chars = sorted({c for w in words for c in w})
    vocab_list = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
    vocab_list += ["##s", "##ing", "##ed", "##tion", "##ly", "##er", "##able"]
    vocab_list += sorted(w for w, n in words.items() if len(w) > 1 and (n > 1 or len(w) > 6))
    vocab = {}
    for t in vocab_list:
        vocab.setdefault(t, len(vocab))
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = norm
    tok.pre_tokenizer = pre
    tok.decoder = decoders.WordPiece()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
    )


def bpe_tokenizer(bos, eos, pad, unk, mask, roberta_post):
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = [bos, pad, eos, unk, mask] if roberta_post else [unk, bos, eos, pad, mask]
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS, trainer)
    b, e = tok.token_to_id(bos), tok.token_to_id(eos)
    if roberta_post:
        tok.post_processor = processors.RobertaProcessing((eos, e), (bos, b), trim_offsets=True, add_prefix_space=False)
    else:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A {eos}",
            pair=f"{bos} $A {eos} $B:1 {eos}:1",
            special_tokens=[(bos, b), (eos, e)],
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        unk_token=unk,
        mask_token=mask,
        cls_token=bos,
        sep_token=eos,
        model_max_length=64,
    )


def init_(model, seed):
    # transformers' default init (std 0.02) leaves activations tiny; wider
    # random weights make the test sensitive to every part of the forward
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and ("LayerNorm" in name or "norm" in name) and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / (p.shape[-1] ** 0.5))


def save_st(case, hf_model, tokenizer, pooling, normalize, prompts=None, texts=TEXTS, prompt_name=None):
    d = os.path.join(OUT, case)
    shutil.rmtree(d, ignore_errors=True)
    tmp = d + ".hf"
    shutil.rmtree(tmp, ignore_errors=True)
    hf_model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    word = st_models.Transformer(tmp, max_seq_length=tokenizer.model_max_length)
    dim = hf_model.config.hidden_size
    pool = st_models.Pooling(dim, pooling_mode=pooling)
    mods = [word, pool] + ([st_models.Normalize()] if normalize else [])
    st = SentenceTransformer(modules=mods, prompts=prompts or {}, device="cpu")
    st.save(d)
    shutil.rmtree(tmp)
    # keep the committed folder small: only what loading needs
    for junk in ["README.md", "special_tokens_map.json", "vocab.txt", "merges.txt", "vocab.json"]:
        p = os.path.join(d, junk)
        if os.path.exists(p):
            os.remove(p)
    st = SentenceTransformer(d, device="cpu")
    emb = st.encode(texts, batch_size=len(texts), convert_to_numpy=True, prompt_name=prompt_name)
    enc = st.tokenizer([(st.prompts.get(prompt_name, "") if prompt_name else "") + t for t in texts])
    out = {
        "texts": texts,
        "prompt_name": prompt_name,
        "ids": enc["input_ids"],
        "pooling": pooling,
        "normalize": normalize,
        "embeddings": [[float(x) for x in row] for row in emb],
    }
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(out, f)
    print(case, emb.shape)


def bert_case():
    tok = wordpiece_tokenizer()
    cfg = BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, type_vocab_size=2,
    )
    torch.manual_seed(1)
    m = BertModel(cfg, add_pooling_layer=False)
    init_(m, 1)
    save_st("bert-mean", m, tok, "mean", True)
    torch.manual_seed(2)
    m = BertModel(cfg, add_pooling_layer=False)
    init_(m, 2)
    save_st(
        "bert-cls", m, tok, "cls", True,
        prompts={"query": "query: ", "passage": "passage: "}, prompt_name="query",
    )
    torch.manual_seed(3)
    m = BertModel(cfg, add_pooling_layer=False)
    init_(m, 3)
    save_st("bert-max", m, tok, "max", False)


def roberta_case():
    tok = bpe_tokenizer("<s>", "</s>", "<pad>", "<unk>", "<mask>", True)
    cfg = RobertaConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=66, type_vocab_size=1,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(4)
    m = RobertaModel(cfg, add_pooling_layer=False)
    init_(m, 4)
    save_st("roberta-mean", m, tok, "mean", True)
    xcfg = XLMRobertaConfig(**{k: v for k, v in cfg.to_dict().items() if k not in ("model_type", "architectures")})
    torch.manual_seed(5)
    m = XLMRobertaModel(xcfg, add_pooling_layer=False)
    init_(m, 5)
    save_st("xlm-roberta-cls", m, tok, "cls", True)


def modernbert_case():
    tok = bpe_tokenizer("[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]", False)
    cfg = ModernBertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
        intermediate_size=48, max_position_embeddings=64, global_attn_every_n_layers=2,
        local_attention=8, global_rope_theta=160000.0, local_rope_theta=10000.0,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        cls_token_id=tok.cls_token_id, sep_token_id=tok.sep_token_id,
    )
    cfg._attn_implementation = "eager"
    torch.manual_seed(6)
    m = ModernBertModel(cfg)
    init_(m, 6)
    save_st("modernbert-mean", m, tok, "mean", True)


def decoder_case():
    # a decoder embedding model (gte-Qwen2 / Qwen3-Embedding style): the
    # tokenizer appends <|endoftext|>, sentence-transformers pools the last token
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS, trainer)
    eot = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A <|endoftext|>", special_tokens=[("<|endoftext|>", eot)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>", model_max_length=128,
    )
    cfg = Qwen2Config(
        vocab_size=len(fast), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=64, max_position_embeddings=128,
        tie_word_embeddings=True, rope_theta=10000.0, rms_norm_eps=1e-6,
        bos_token_id=eot, eos_token_id=eot, pad_token_id=eot,
    )
    torch.manual_seed(9)
    m = Qwen2Model(cfg)
    init_(m, 9)
    save_st(
        "qwen2-last", m, fast, "lasttoken", True,
        prompts={"query": "Instruct: find the passage\nQuery: "}, prompt_name="query",
    )


def cross_encoder_case():
    tok = wordpiece_tokenizer()
    cfg = BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, type_vocab_size=2, num_labels=1,
    )
    torch.manual_seed(7)
    m = BertForSequenceClassification(cfg)
    init_(m, 7)
    m.eval()
    d = os.path.join(OUT, "bert-reranker")
    shutil.rmtree(d, ignore_errors=True)
    m.save_pretrained(d, safe_serialization=True)
    tok.save_pretrained(d)
    for junk in ["special_tokens_map.json", "vocab.txt"]:
        p = os.path.join(d, junk)
        if os.path.exists(p):
            os.remove(p)
    enc = tok([p[0] for p in PAIRS], [p[1] for p in PAIRS], padding=True, return_tensors="pt", return_token_type_ids=True)
    assert int(enc["token_type_ids"].max()) == 1  # BERT pairs: second segment is type 1
    with torch.no_grad():
        logits = m(**enc).logits[:, 0]
    out = {
        "pairs": PAIRS,
        "ids": [[int(x) for x, a in zip(r, am) if a] for r, am in zip(enc["input_ids"], enc["attention_mask"])],
        "scores": [float(x) for x in logits],
    }
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(out, f)
    print("bert-reranker", out["scores"])


def roberta_cross_encoder_case():
    tok = bpe_tokenizer("<s>", "</s>", "<pad>", "<unk>", "<mask>", True)
    cfg = RobertaConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=66, type_vocab_size=1, num_labels=1,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(10)
    m = RobertaForSequenceClassification(cfg)
    init_(m, 10)
    m.eval()
    d = os.path.join(OUT, "roberta-reranker")
    shutil.rmtree(d, ignore_errors=True)
    m.save_pretrained(d, safe_serialization=True)
    tok.save_pretrained(d)
    for junk in ["special_tokens_map.json", "vocab.json", "merges.txt"]:
        p = os.path.join(d, junk)
        if os.path.exists(p):
            os.remove(p)
    enc = tok([p[0] for p in PAIRS], [p[1] for p in PAIRS], padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = m(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits[:, 0]
    out = {
        "pairs": PAIRS,
        "ids": [[int(x) for x, a in zip(r, am) if a] for r, am in zip(enc["input_ids"], enc["attention_mask"])],
        "scores": [float(x) for x in logits],
    }
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(out, f)
    print("roberta-reranker", out["scores"])


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    bert_case()
    roberta_case()
    modernbert_case()
    decoder_case()
    cross_encoder_case()
    roberta_cross_encoder_case()
