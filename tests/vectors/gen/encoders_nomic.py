"""A tiny random nomic-bert encoder and its embeddings from nomic's own code.

transformers has no nomic_bert; its modeling code ships with the checkpoints
(trust_remote_code). This script runs that code: `modeling_hf_nomic_bert.py`
and `configuration_hf_nomic_bert.py` from github.com/nomic-ai/contrastors
(src/contrastors/models/huggingface/, commit 613ddfd), copied into a package
folder named by NOMIC_SRC, with einops on the path:

  NOMIC_SRC=/tmp/nomic PYTHONPATH=/path/to/einops-0.8.2-py3-none-any.whl:/tmp \
    /work/refpy/bin/python tests/vectors/gen/encoders_nomic.py

(NOMIC_SRC's basename is imported as the package; it holds the two files and
an empty __init__.py). transformers 5 dropped `get_extended_attention_mask`,
which that code calls; the shim below is transformers 4's definition (the
additive mask: 0 for kept keys, the dtype's minimum for padding).

Writes tests/vectors/encoders/nomic-bert-mean/: config.json (model_type
nomic_bert), model.safetensors, tokenizer.json, sentence-transformers'
modules.json + mean pooling + Normalize, and expected.json with the
embeddings of a padded batch: masked mean of last_hidden_state over each
row's tokens, then L2 normalization (what that pipeline computes).
"""

import importlib
import json
import os
import shutil
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(__file__))
from encoders import OUT, TEXTS, init_, wordpiece_tokenizer  # noqa: E402

src = os.environ["NOMIC_SRC"]
pkg = os.path.basename(src.rstrip("/"))
sys.path.insert(0, os.path.dirname(src.rstrip("/")))
modeling = importlib.import_module(f"{pkg}.modeling_hf_nomic_bert")
configuration = importlib.import_module(f"{pkg}.configuration_hf_nomic_bert")


def extended_mask(self, mask, shape, dtype=torch.float32):
    e = mask[:, None, None, :].to(dtype)
    return (1.0 - e) * torch.finfo(dtype).min


modeling.NomicBertModel.get_extended_attention_mask = extended_mask


def main():
    tok = wordpiece_tokenizer()
    cfg = configuration.NomicBertConfig(
        vocab_size=len(tok), n_embd=32, n_layer=2, n_head=4, n_inner=256, n_positions=64,
        rotary_emb_fraction=1.0, rotary_emb_base=1000, activation_function="swiglu",
        qkv_proj_bias=False, mlp_fc1_bias=False, mlp_fc2_bias=False, prenorm=False,
        causal=False, type_vocab_size=2, use_flash_attn=False, fused_bias_fc=False,
        fused_dropout_add_ln=False, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0,
        summary_first_dropout=0.0, layer_norm_epsilon=1e-12, pad_token_id=0,
        bos_token_id=None, eos_token_id=None,
    )
    torch.manual_seed(8)
    m = modeling.NomicBertModel(cfg, add_pooling_layer=False).eval()
    init_(m, 8)
    d = os.path.join(OUT, "nomic-bert-mean")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "1_Pooling"))
    os.makedirs(os.path.join(d, "2_Normalize"))
    conf = cfg.to_dict()
    conf["model_type"] = "nomic_bert"
    conf["architectures"] = ["NomicBertModel"]
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(conf, f, indent=2, sort_keys=True)
    save_file({k: v.contiguous() for k, v in m.state_dict().items()}, os.path.join(d, "model.safetensors"))
    tok.save_pretrained(d)
    for junk in ["special_tokens_map.json", "vocab.txt"]:
        p = os.path.join(d, junk)
        if os.path.exists(p):
            os.remove(p)
    with open(os.path.join(d, "modules.json"), "w") as f:
        json.dump([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ], f, indent=2)
    with open(os.path.join(d, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}, f, indent=2)
    with open(os.path.join(d, "2_Normalize", "config.json"), "w") as f:
        json.dump({}, f)
    enc = tok(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = m(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])[0]
    mask = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
    mean = (h * mask).sum(1) / mask.sum(1)
    emb = torch.nn.functional.normalize(mean, dim=-1)
    out = {
        "texts": TEXTS,
        "prompt_name": None,
        "ids": [[int(x) for x, a in zip(r, am) if a] for r, am in zip(enc["input_ids"], enc["attention_mask"])],
        "pooling": "mean",
        "normalize": True,
        "embeddings": [[float(x) for x in row] for row in emb],
    }
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(out, f)
    print("nomic-bert-mean", tuple(emb.shape))


if __name__ == "__main__":
    main()
