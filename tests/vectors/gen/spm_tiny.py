# Writes tests/vectors/spm_tiny.json: a tiny SentencePiece BPE model trained
# here (byte fallback on, vocabulary 320, Llama's settings: identity
# normalization, extra white space kept, digits split) on a fixed corpus, its pieces /
# scores / types in GGUF token_type numbering, and SentencePiece's own
# encodings of test texts (including characters the model has never seen,
# so byte fallback is exercised). The model is trained in a temp dir and not
# kept; the JSON is the reference.
# Run: /usr/bin/python3 tests/vectors/gen/spm_tiny.py
import json, os, tempfile
import sentencepiece as spm

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/vectors

CORPUS = [
    "Once upon a time, there was a little girl named Lily.",
    "She loved to play outside in the park with her friends.",
    "One day, she saw a big, red ball under the old tree.",
    "The sun was shining and the birds were singing happily.",
    "Lily's mom said: let's go home, it is getting late!",
    "They walked together along the river, talking and laughing.",
    "In the morning, the cat jumped onto the table and ate the fish.",
    "Numbers like 12, 345 and 6789 appear here and there.",
    "A quick brown fox jumps over the lazy dog; the dog sleeps.",
    "Happy children played games, sang songs, and ate cake.",
]

CASES = [
    "Once upon a time",
    "the little girl played in the park",
    " leading space",
    "two  spaces and   three",
    "Hello, World!",
    "newline\nand\ttab",
    "café über naïve",
    "日本語のテキスト",
    "emoji 🦙 and 🚀",
    "",
    "a",
    "12345 67",
    "zzzz qqq xyzzy",
    "Lily's mom said: let's go home, it is getting late!",
]


def main():
    with tempfile.TemporaryDirectory() as d:
        corpus = os.path.join(d, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            for _ in range(20):
                for line in CORPUS:
                    f.write(line + "\n")
        prefix = os.path.join(d, "tiny")
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=prefix, model_type="bpe", vocab_size=320,
            byte_fallback=True, character_coverage=1.0, add_dummy_prefix=True,
            # as Llama's tokenizer.model: no normalization, spaces kept as they are
            normalization_rule_name="identity", remove_extra_whitespaces=False,
            allow_whitespace_only_pieces=True, split_digits=True,
            bos_id=1, eos_id=2, unk_id=0, pad_id=-1, num_threads=1,
            minloglevel=2,
        )
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        n = sp.get_piece_size()
        pieces = [sp.id_to_piece(i) for i in range(n)]
        scores = [sp.get_score(i) for i in range(n)]
        # GGUF token_type numbering: 1 normal, 2 unknown, 3 control, 6 byte
        types = []
        for i in range(n):
            if sp.is_unknown(i):
                types.append(2)
            elif sp.is_control(i):
                types.append(3)
            elif sp.is_byte(i):
                types.append(6)
            else:
                types.append(1)
        cases = [{"text": t, "ids": sp.encode(t)} for t in CASES]
        decoded = [sp.decode(c["ids"]) for c in cases]
    out = {
        "source": "sentencepiece %s, BPE, vocab 320, byte_fallback, trained by tests/vectors/gen/spm_tiny.py" % spm.__version__,
        "tokens": pieces,
        "scores": scores,
        "token_type": types,
        "cases": cases,
        "decoded": decoded,
    }
    with open(os.path.join(HERE, "spm_tiny.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
