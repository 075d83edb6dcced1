"""Builds tokenizer.json files of every kind and records what the Python
`tokenizers` library makes of the shared corpus with each one.

Run with the reference venv (tokenizers, transformers, sentencepiece):

    /work/refpy/bin/python tests/vectors/gen/tokenizers_hf.py

Writes tests/vectors/tokenizers/<name>.json: the tokenizer.json object and,
per corpus text, the ids of `encode(text)` (added tokens parsed, special
tokens added), the ids with `encode_special_tokens = True` and no special
tokens added, and `decode(ids)` with and without `skip_special_tokens`.
Vocabularies are trained here on our own text, so every file is small; the
SentencePiece-converted ones go through transformers' converters, as a
released model's tokenizer.json does.

The `tokenizers` trainers break ties between equal counts in an order that
changes from run to run, so a rerun can write a different (equally valid)
vocabulary for a few files; each file holds its own tokenizer.json with the
expectations computed on it, so any run's output is a valid vector.
"""

import json
import os
import sys
import tempfile
import types

import sentencepiece as spm
import tokenizers
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models,
                        normalizers, pre_tokenizers, processors, trainers)
import transformers.convert_slow_tokenizer as conv

sys.path.insert(0, os.path.dirname(__file__))
from _tokenizers_corpus import TEST_TEXTS, TRAIN_TEXT  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "tokenizers")
TRAIN_LINES = [l for l in TRAIN_TEXT.split("\n") if l.strip()]
TMP = tempfile.mkdtemp()

LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
GPT4O = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
CLIP = r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""

# Added tokens exercising every flag (applied to most pipelines).
ADDED = [
    AddedToken("<|endoftext|>", special=True),
    AddedToken("<s>", special=True, rstrip=True),
    AddedToken("</s>", special=True, lstrip=True),
    AddedToken("[MASK]", special=True, lstrip=True, rstrip=True),
    AddedToken("[CLS]", special=True, normalized=True),
    AddedToken("<|im_start|>", special=True),
    AddedToken("<|im_end|>", special=True),
    AddedToken("<mask>", special=False, single_word=True),
    AddedToken("hyphen", special=False, normalized=True),
    AddedToken("under", special=False, single_word=True),
    AddedToken("\u2581\u2581", special=False, normalized=True),
    AddedToken("zero", special=False, normalized=False),
]


def train(tok, trainer, lines=None):
    tok.train_from_iterator(lines if lines is not None else TRAIN_LINES + TEST_TEXTS, trainer)
    return tok


def with_added(tok):
    tok.add_tokens(ADDED)
    return tok


def wordlevel(normalizer=None, pre=None, decoder=None, post=None, added=True):
    """A word-level model whose vocabulary is every piece of the corpus, so
    ids show exactly what the normalizer and pre-tokenizer produced."""
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    if normalizer is not None:
        tok.normalizer = normalizer
    if pre is not None:
        tok.pre_tokenizer = pre
    train(tok, trainers.WordLevelTrainer(vocab_size=100000, min_frequency=1,
                                         special_tokens=["[UNK]"], show_progress=False),
          TEST_TEXTS)
    if decoder is not None:
        tok.decoder = decoder
    if post is not None:
        tok.post_processor = post
    return with_added(tok) if added else tok


def bytelevel_bpe(vocab=420, **model_kw):
    tok = Tokenizer(models.BPE(**model_kw))
    return tok


# ------------------------------------------------------------- sentencepiece

SPM_RULES = os.path.join(TMP, "rules.tsv")


def write_rules():
    rows = []
    for c in range(0xFF01, 0xFF5F):  # full-width ASCII
        rows.append((f"{c:X}", f"{c - 0xFEE0:X}"))
    rows += [
        ("3000", "20"),  # ideographic space
        ("FB01", "66 69"), ("FB02", "66 6C"),  # ligatures
        ("65 301", "E9"), ("41 30A", "C5"),  # compositions (two code points)
        ("BD", "31 2044 32"), ("B2", "32"),
        ("1D573", "48"), ("1D58A", "65"), ("1D591", "6C"), ("1D594", "6F"),
        ("D A", "A"),  # CR LF -> LF (a multi-code-point grapheme)
        ("2003", "20"), ("A0", "20"),
        ("2160", "49"), ("216B", "58 49 49"),
    ]
    with open(SPM_RULES, "w") as f:
        for a, b in rows:
            f.write(f"{a}\t{b}\n")


def train_spm(name, model_type, vocab, **kw):
    corpus = os.path.join(TMP, "spm_corpus.txt")
    with open(corpus, "w") as f:
        f.write("\n".join(TRAIN_LINES + [t for t in TEST_TEXTS if "\n" not in t]))
    prefix = os.path.join(TMP, name)
    args = dict(input=corpus, model_prefix=prefix, vocab_size=vocab,
                model_type=model_type, character_coverage=0.98,
                normalization_rule_tsv=SPM_RULES, hard_vocab_limit=False,
                minloglevel=2)
    args.update(kw)
    spm.SentencePieceTrainer.train(**args)
    return prefix + ".model"


def spm_original(model_file, **kw):
    sp = spm.SentencePieceProcessor(model_file=model_file)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    o = types.SimpleNamespace(vocab_file=model_file, **kw)
    ids = {p: i for i, p in enumerate(pieces)}
    o.convert_tokens_to_ids = lambda t: ids[t]
    o.convert_ids_to_tokens = lambda i: pieces[i]
    return o


def fix_ids(o, tok):
    """Point the fake original tokenizer's id lookups at the converted vocabulary."""
    o.convert_tokens_to_ids = tok.token_to_id


def converted(cls, model_file, **kw):
    o = spm_original(model_file, **kw)
    c = cls(o)
    tok = c.tokenizer(c.proto)
    fix_ids(o, tok)
    return c.converted()


class Extractor:
    """What transformers' SentencePiece extractor did before v5: merges
    ordered by the score of the piece they make."""

    def __init__(self, model_file):
        self.model_file = model_file

    def extract(self, vocab_scores):
        from transformers.tokenization_utils_base import generate_merges
        vocab = {w: i for i, (w, _) in enumerate(vocab_scores)}
        return vocab, generate_merges(vocab, vocab_scores)


class Llama(conv.LlamaConverter):
    SpmExtractor = Extractor


class Gemma(conv.GemmaConverter):
    SpmExtractor = Extractor


class ByteFallbackSpm(conv.SpmConverter):
    handle_byte_fallback = True

    def decoder(self, replacement, add_prefix_space):
        return decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                  decoders.Fuse(), decoders.Strip(" ", 1, 0)])


# ------------------------------------------------------------------ pipelines

def p_bpe_gpt2():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    train(tok, trainers.BpeTrainer(vocab_size=420, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                   show_progress=False, special_tokens=["<|endoftext|>"]))
    return with_added(tok)


def p_bpe_llama3():
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"]
    train(tok, trainers.BpeTrainer(vocab_size=420, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                   show_progress=False, special_tokens=specials))
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                      special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])])
    return with_added(tok)


def p_bpe_qwen2():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    train(tok, trainers.BpeTrainer(vocab_size=420, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                   show_progress=False, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"]))
    return with_added(tok)


def p_bpe_gpt4o():
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(GPT4O), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    train(tok, trainers.BpeTrainer(vocab_size=420, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                   show_progress=False))
    return with_added(tok)


def p_bpe_roberta():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    train(tok, trainers.BpeTrainer(vocab_size=420, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                   show_progress=False, special_tokens=["<s>", "<pad>", "</s>", "<unk>"]))
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    return tok


def p_bpe_clip():
    tok = Tokenizer(models.BPE(continuing_subword_prefix="", end_of_word_suffix="</w>", unk_token="<|endoftext|>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(CLIP), "removed", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    train(tok, trainers.BpeTrainer(vocab_size=520, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                   end_of_word_suffix="</w>", show_progress=False,
                                   special_tokens=["<|startoftext|>", "<|endoftext|>"]))
    tok.post_processor = processors.RobertaProcessing(("<|endoftext|>", tok.token_to_id("<|endoftext|>")),
                                                      ("<|startoftext|>", tok.token_to_id("<|startoftext|>")),
                                                      add_prefix_space=False, trim_offsets=False)
    return tok


def p_bpe_suffix_bpedecoder():
    tok = Tokenizer(models.BPE(end_of_word_suffix="</w>", unk_token="[UNK]", fuse_unk=True))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    train(tok, trainers.BpeTrainer(vocab_size=300, end_of_word_suffix="</w>", show_progress=False,
                                   special_tokens=["[UNK]"], limit_alphabet=60), TRAIN_LINES)
    return with_added(tok)


def p_bpe_prefix_wordpiece():
    tok = Tokenizer(models.BPE(continuing_subword_prefix="##", unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    train(tok, trainers.BpeTrainer(vocab_size=320, continuing_subword_prefix="##", show_progress=False,
                                   special_tokens=["[UNK]"], limit_alphabet=70), TRAIN_LINES)
    return with_added(tok)


def p_bpe_spm_legacy():
    m = train_spm("spm_bpe_bf", "bpe", 900, byte_fallback=True)
    tok = converted(Llama, m, legacy=True, add_prefix_space=True)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    return tok


def p_bpe_spm_metaspace():
    m = train_spm("spm_bpe_bf", "bpe", 900, byte_fallback=True)
    tok = converted(Llama, m, legacy=False, add_prefix_space=True)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B", special_tokens=[("<s>", 1), ("</s>", 2)])
    return tok


def p_bpe_gemma():
    m = train_spm("spm_gemma", "bpe", 900, byte_fallback=True, split_digits=True,
                  allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
                  user_defined_symbols=["\u2581\u2581", "\u2581\u2581\u2581", "\u2581\u2581\u2581\u2581", "\t\t",
                                        "<start_of_turn>", "<end_of_turn>"],
                  pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", bos_piece="<bos>", eos_piece="</eos>",
                  unk_piece="<unk>", add_dummy_prefix=False)
    tok = converted(Gemma, m, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>")
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A <bos> $B", special_tokens=[("<bos>", 2)])
    return tok


def p_wordpiece_bert():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    train(tok, trainers.WordPieceTrainer(vocab_size=420, show_progress=False,
                                         special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]")))
    return with_added(tok)


def p_wordpiece_cased():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=12))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation("contiguous"),
                                                 pre_tokenizers.Digits(individual_digits=True)])
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    train(tok, trainers.WordPieceTrainer(vocab_size=420, show_progress=False,
                                         special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return with_added(tok)


def p_unigram_t5():
    m = train_spm("spm_uni", "unigram", 640)
    return converted(conv.T5Converter, m, _extra_ids=3)


def p_unigram_xlmr():
    m = train_spm("spm_uni", "unigram", 640)
    return converted(conv.XLMRobertaConverter, m)


def p_unigram_albert():
    m = train_spm("spm_uni_albert", "unigram", 640, control_symbols=["[CLS]", "[SEP]", "[MASK]"])
    return converted(conv.AlbertConverter, m, keep_accents=False, do_lower_case=True)


def p_unigram_bytefallback():
    m = train_spm("spm_uni_bf", "unigram", 900, byte_fallback=True)
    tok = converted(ByteFallbackSpm, m)
    return with_added(tok)


def p_unigram_trained():
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    train(tok, trainers.UnigramTrainer(vocab_size=300, special_tokens=["<unk>", "<pad>"], unk_token="<unk>",
                                       show_progress=False))
    return with_added(tok)


def p_wordlevel():
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase(), normalizers.Strip()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    train(tok, trainers.WordLevelTrainer(vocab_size=200, special_tokens=["[UNK]"], show_progress=False), TRAIN_LINES)
    return with_added(tok)


def charsmap():
    m = train_spm("spm_uni", "unigram", 640)
    o = spm_original(m)
    return conv.SpmConverter(o).proto.normalizer_spec.precompiled_charsmap


BEHAVIORS = ["isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous"]
WS = pre_tokenizers.WhitespaceSplit()
LINES = pre_tokenizers.Split("\n", "isolated")


def component_pipelines():
    P = {}
    for n in ["NFC", "NFD", "NFKC", "NFKD"]:
        P[f"n_{n.lower()}"] = lambda n=n: wordlevel(getattr(normalizers, n)(), WS)
    P["n_lowercase"] = lambda: wordlevel(normalizers.Lowercase(), WS)
    P["n_strip"] = lambda: wordlevel(normalizers.Strip(), LINES)
    P["n_strip_left"] = lambda: wordlevel(normalizers.Strip(left=True, right=False), LINES)
    P["n_strip_right"] = lambda: wordlevel(normalizers.Strip(left=False, right=True), LINES)
    P["n_strip_accents"] = lambda: wordlevel(normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents()]), WS)
    P["n_strip_accents_nfkc"] = lambda: wordlevel(normalizers.Sequence([normalizers.NFKC(), normalizers.StripAccents()]), WS)
    P["n_replace"] = lambda: wordlevel(normalizers.Sequence([
        normalizers.Replace("a", "4"), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Replace(Regex(r"[0-9]"), "#"),
        normalizers.Replace(Regex(r"(?i)the|é"), "")]), WS)
    P["n_prepend"] = lambda: wordlevel(normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]),
                                       pre_tokenizers.Split("\u2581", "merged_with_next"))
    P["n_bert"] = lambda: wordlevel(normalizers.BertNormalizer(), WS)
    P["n_bert_cased"] = lambda: wordlevel(normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=True,
                                                                     strip_accents=True, lowercase=False), WS)
    P["n_bert_noclean"] = lambda: wordlevel(normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False,
                                                                       strip_accents=None, lowercase=False), LINES)
    P["n_precompiled"] = lambda: wordlevel(normalizers.Precompiled(charsmap()), LINES)
    P["n_precompiled_seq"] = lambda: wordlevel(normalizers.Sequence([normalizers.Precompiled(charsmap()),
                                                                     normalizers.Replace(Regex(" {2,}"), " "),
                                                                     normalizers.Strip(left=False, right=True)]), WS)
    P["p_whitespace"] = lambda: wordlevel(None, pre_tokenizers.Whitespace())
    P["p_whitespace_split"] = lambda: wordlevel(None, pre_tokenizers.WhitespaceSplit())
    for b in BEHAVIORS:
        P[f"p_punctuation_{b}"] = lambda b=b: wordlevel(None, pre_tokenizers.Punctuation(b))
        for inv in [False, True]:
            suffix = "_invert" if inv else ""
            P[f"p_split_{b}{suffix}"] = lambda b=b, inv=inv: wordlevel(
                None, pre_tokenizers.Split(Regex(r"\p{P}+|\s"), b, invert=inv))
    P["p_split_string"] = lambda: wordlevel(None, pre_tokenizers.Split(" ", "merged_with_previous"))
    P["p_split_lookahead"] = lambda: wordlevel(None, pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"(?=\d{3})"), "merged_with_next"), pre_tokenizers.Split(Regex(r"(?=[A-Z])|x*"), "isolated")]))
    P["p_split_anchors"] = lambda: wordlevel(None, pre_tokenizers.Split(Regex(r"^\s+|\s+$|.\n"), "isolated"))
    P["p_digits"] = lambda: wordlevel(None, pre_tokenizers.Digits(individual_digits=False))
    P["p_digits_individual"] = lambda: wordlevel(None, pre_tokenizers.Digits(individual_digits=True))
    P["p_bert"] = lambda: wordlevel(None, pre_tokenizers.BertPreTokenizer())
    P["p_char_delimiter"] = lambda: wordlevel(None, pre_tokenizers.CharDelimiterSplit("-"))
    P["p_bytelevel_prefix"] = lambda: wordlevel(None, pre_tokenizers.ByteLevel(add_prefix_space=True), decoders.ByteLevel())
    P["p_bytelevel_noregex"] = lambda: wordlevel(None, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
                                                 decoders.ByteLevel())
    for scheme in ["always", "first", "never"]:
        for split in [True, False]:
            P[f"p_metaspace_{scheme}{'' if split else '_nosplit'}"] = lambda scheme=scheme, split=split: wordlevel(
                None, pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme=scheme, split=split),
                decoders.Metaspace(replacement="\u2581", prepend_scheme=scheme, split=split))
    P["p_sequence"] = lambda: wordlevel(None, pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.Punctuation()]))
    P["d_strip"] = lambda: wordlevel(None, pre_tokenizers.Metaspace(), decoders.Sequence([
        decoders.Strip("\u2581", 1, 0), decoders.Replace("\u2581", "_")]))
    P["d_strip_right"] = lambda: wordlevel(None, WS, decoders.Strip("s", 0, 1))
    P["d_replace_fuse_strip"] = lambda: wordlevel(None, pre_tokenizers.Metaspace(), decoders.Sequence([
        decoders.Replace("\u2581", " "), decoders.Fuse(), decoders.Strip(" ", 1, 0)]))
    P["d_replace_regex"] = lambda: wordlevel(None, WS, decoders.Replace(Regex("[aeiou]+"), "<v>"))
    P["d_none"] = lambda: wordlevel(normalizers.Lowercase(), WS, None)
    P["d_wordpiece_cleanup"] = lambda: wordlevel(None, pre_tokenizers.BertPreTokenizer(), decoders.WordPiece(cleanup=True))
    P["post_template"] = lambda: template_multi()
    return P


def template_multi():
    tok = wordlevel(None, WS)
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=True),
        processors.TemplateProcessing(single="[CLS] $A <end>", pair="[CLS] $A <end> $B:1 <end>:1",
                                      special_tokens=[("[CLS]", tok.token_to_id("[CLS]")),
                                                      {"id": "<end>", "ids": [eos, bos], "tokens": ["</s>", "<s>"]}])])
    return tok


PIPELINES = {
    "bpe_gpt2": p_bpe_gpt2,
    "bpe_llama3": p_bpe_llama3,
    "bpe_qwen2": p_bpe_qwen2,
    "bpe_gpt4o": p_bpe_gpt4o,
    "bpe_roberta": p_bpe_roberta,
    "bpe_clip": p_bpe_clip,
    "bpe_suffix": p_bpe_suffix_bpedecoder,
    "bpe_prefix": p_bpe_prefix_wordpiece,
    "bpe_spm_legacy": p_bpe_spm_legacy,
    "bpe_spm_metaspace": p_bpe_spm_metaspace,
    "bpe_gemma": p_bpe_gemma,
    "wordpiece_bert": p_wordpiece_bert,
    "wordpiece_cased": p_wordpiece_cased,
    "unigram_t5": p_unigram_t5,
    "unigram_xlmr": p_unigram_xlmr,
    "unigram_albert": p_unigram_albert,
    "unigram_bytefallback": p_unigram_bytefallback,
    "unigram_trained": p_unigram_trained,
    "wordlevel": p_wordlevel,
}
PIPELINES.update(component_pipelines())


def record(name, tok):
    tok.no_truncation()
    tok.no_padding()
    enc, enc_split, dec, dec_skip = [], [], [], []
    for text in TEST_TEXTS:
        tok.encode_special_tokens = False
        ids = tok.encode(text).ids
        tok.encode_special_tokens = True
        ids2 = tok.encode(text, add_special_tokens=False).ids
        tok.encode_special_tokens = False
        enc.append(ids)
        enc_split.append(ids2 if ids2 != ids else None)
        d = tok.decode(ids, skip_special_tokens=False)
        ds = tok.decode(ids, skip_special_tokens=True)
        dec.append(d)
        dec_skip.append(ds if ds != d else None)
    return {
        "name": name,
        "generator": f"tests/vectors/gen/tokenizers_hf.py (tokenizers {tokenizers.__version__})",
        "tokenizer": json.loads(tok.to_str()),
        "encode": enc,
        "encode_split_special": enc_split,
        "decode": dec,
        "decode_skip_special": dec_skip,
    }


def main():
    write_rules()
    os.makedirs(OUT, exist_ok=True)
    only = sys.argv[1:]
    with open(os.path.join(OUT, "corpus.json"), "w") as f:
        json.dump({"texts": TEST_TEXTS}, f, ensure_ascii=False, indent=0)
    for name, build in PIPELINES.items():
        if only and name not in only:
            continue
        data = record(name, build())
        with open(os.path.join(OUT, f"{name}.json"), "w") as f:
            json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
        print(name, os.path.getsize(os.path.join(OUT, f"{name}.json")))


if __name__ == "__main__":
    main()
