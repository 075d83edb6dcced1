"""GGUF files of the tiny test encoders written by llama.cpp's own converter
(convert_hf_to_gguf.py and its gguf-py), for
tests/models/encoder_llama_cpp_test.ts: we must read the layout llama.cpp's
converter writes (its tensor names, `tokenizer.ggml.*` arrays, pooling type).

Two things the tiny checkpoints need that real ones do not:
- the converter names a tokenizer by hashing its output on a fixed text and
  refuses unknown hashes; the tiny vocabularies are unknown, so
  `get_vocab_base_pre` is replaced by the name the real family gets
  ("jina-v2-en" for BERT WordPiece, which llama.cpp runs as its default
  WordPiece pre-tokenizer, "modern-bert" for ModernBERT);
- NomicBertModel accepts only nomic's released position settings
  (n_positions 8192 with max_trained_positions 2048), so nomic's folder is
  copied with n_positions 8192 (a rotary model: no position table changes)
  and without the default id2label / label2id that save_pretrained wrote;
- transformers 5's AutoConfig answers an unknown `model_type` (nomic_bert)
  with a generic config holding default sizes (hidden_size 768, 12 layers),
  which the converter takes over nomic's n_embd / n_layer; AutoConfig is
  made to fail for nomic, so the converter reads config.json itself, as it
  does where AutoConfig refuses the folder (transformers 4).

Run from the repository root with the Python that has torch, transformers
and sentencepiece, and a llama.cpp source tree:
  LLAMA_CPP_SRC=/path/to/llama.cpp /work/refpy/bin/python \
      tests/vectors/gen/encoders_llama_convert.py
Writes tests/vectors/encoders_llama_convert/{bert-mean,nomic-bert-mean,
modernbert-mean,xlm-roberta-unigram}.gguf (F16 weights, as `--outtype f16`).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(os.environ.get("LLAMA_CPP_SRC", "llama.cpp"))
OUT = Path("tests/vectors/encoders_llama_convert")
PRE = {"bert-mean": "jina-v2-en", "nomic-bert-mean": "jina-v2-en",
       "modernbert-mean": "modern-bert",
       # XLM-R's SentencePiece vocabulary is written as "t5" with the
       # pre-tokenizer "default" without the hash (the override is unused)
       "xlm-roberta-unigram": "default"}

RUNNER = r"""
import sys
sys.argv = [sys.argv[0]] + sys.argv[2:]
pre = __import__("os").environ["PRE_NAME"]
sys.path.insert(0, __import__("os").environ["LLAMA_CPP_SRC"])
import convert_hf_to_gguf as c
from conversion.base import TextModel
TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
if __import__("os").environ.get("NO_AUTOCONFIG"):
    import transformers
    def refuse(*a, **k):
        raise ValueError("AutoConfig refused (nomic_bert)")
    transformers.AutoConfig.from_pretrained = refuse
c.main()
"""


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "-C", str(SRC), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    for name, pre in PRE.items():
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / name
            shutil.copytree(Path("tests/vectors/encoders") / name, folder)
            if name.startswith("nomic"):
                cfg = json.loads((folder / "config.json").read_text())
                cfg["n_positions"] = 8192
                # transformers' default labels, which nomic's released
                # config.json lacks (read raw, their string keys break the
                # converter's check for them)
                cfg.pop("id2label", None)
                cfg.pop("label2id", None)
                (folder / "config.json").write_text(json.dumps(cfg))
            runner = Path(tmp) / "run.py"
            runner.write_text(RUNNER)
            env = dict(os.environ, PRE_NAME=pre, LLAMA_CPP_SRC=str(SRC))
            if name.startswith("nomic"):
                env["NO_AUTOCONFIG"] = "1"
            subprocess.run([sys.executable, str(runner), "-", str(folder),
                            "--outtype", "f16", "--outfile",
                            str(OUT / f"{name}.gguf")], env=env, check=True)
    (OUT / "SOURCE.txt").write_text(
        f"convert_hf_to_gguf.py of llama.cpp {commit}\n")


if __name__ == "__main__":
    main()
