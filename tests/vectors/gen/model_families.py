"""Tiny random checkpoints of the RMSNorm/SwiGLU decoder families, written by
transformers' own save_pretrained, with transformers' float32 logits at every
position of a prompt and its greedy continuation.

Run from the repository root:

    /work/refpy/bin/python tests/vectors/gen/model_families.py

Writes tests/vectors/families/<case>/ (config.json, model.safetensors,
tokenizer.json, tokenizer_config.json, generation_config.json) and
tests/vectors/model_families.json (per case: the prompt, float32 logits at
every prompt position as base64 little-endian, and transformers' 32 greedy
tokens; also the text prompt's ids, its 12 greedy tokens and their text as
the tokenizers library decodes them, for the CLI and server tests). tests/models/model_families_test.ts reads them.

Every case perturbs the norms (1 + 0.1·N(0,1)) and biases away from their
init, so a missing norm or a swapped placement changes the logits. Shapes mix
grouped-query and multi-head attention, tied and untied embeddings, head sizes
other than hidden/heads and odd MLP widths. The MoE cases keep every matrix
row a multiple of 32 so that their GGUF export can be quantized to Q8_0.
One case pads config.vocab_size past the tokenizer's vocabulary.
"""

import base64
import json
import os
import shutil

import numpy as np
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = "tests/vectors/families"
OUT = "tests/vectors/model_families.json"
PROMPT = [1, 17, 42, 99, 5, 250, 7, 64, 3, 120]
TEXT_PROMPT = "Once upon a time"
TEXT_GREEDY = 12
GREEDY = 32
VOCAB = 300

TEXT = (
    "Once upon a time there was a little model that ran in a browser. "
    "It read files, it wrote files, and it generated tokens one by one. "
    "The quick brown fox jumps over the lazy dog. 0123456789 "
) * 8


def make_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([TEXT], trainer)
    return tok


def base(kind, **kw):
    c = dict(
        vocab_size=VOCAB,
        hidden_size=24,
        intermediate_size=37,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=10,
        max_position_embeddings=256,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=None,
    )
    c.update(kw)
    return (kind, c)


CASES = {
    # qwen3: per-head q/k RMSNorm; GQA, head_dim 10 != 24/4, untied
    "qwen3_gqa": base("qwen3"),
    # MHA, tied, head_dim = hidden/heads, vocab padded past the tokenizer
    "qwen3_mha_padded": base(
        "qwen3", vocab_size=320, hidden_size=32, num_key_value_heads=4,
        head_dim=8, intermediate_size=45, tie_word_embeddings=True,
    ),
    # mixtral: softmax -> top-2 -> renormalize over 4 experts; Q8_0-friendly sizes
    "mixtral_gqa": base(
        "mixtral", hidden_size=32, head_dim=8, intermediate_size=32,
        num_local_experts=4, num_experts_per_tok=2, sliding_window=None,
    ),
    "mixtral_mha_tied": base(
        "mixtral", hidden_size=32, num_key_value_heads=4, head_dim=16,
        intermediate_size=64, num_local_experts=3, num_experts_per_tok=1,
        tie_word_embeddings=True, sliding_window=None,
    ),
    # qwen3_moe: q/k norm plus experts; norm_topk_prob true and false
    "qwen3_moe_norm": base(
        "qwen3_moe", hidden_size=32, head_dim=8, intermediate_size=64,
        moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2,
        norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
    ),
    "qwen3_moe_raw": base(
        "qwen3_moe", hidden_size=32, num_key_value_heads=4, head_dim=12,
        intermediate_size=64, moe_intermediate_size=32, num_experts=5,
        num_experts_per_tok=3, norm_topk_prob=False, decoder_sparse_step=1,
        mlp_only_layers=[], tie_word_embeddings=True,
    ),
    # smollm3: every 4th layer without RoPE (llama.cpp's fixed rule)
    "smollm3_gqa": base(
        "smollm3", num_hidden_layers=4, no_rope_layer_interval=4,
    ),
    "smollm3_mha_tied": base(
        "smollm3", num_hidden_layers=4, num_key_value_heads=4, head_dim=6,
        tie_word_embeddings=True, no_rope_layer_interval=4,
    ),
    # granite: embedding / residual / attention / logits multipliers
    "granite_gqa": base(
        "granite", embedding_multiplier=3.5, residual_multiplier=0.6,
        attention_multiplier=0.2, logits_scaling=2.5,
    ),
    "granite_mha_tied": base(
        "granite", num_key_value_heads=4, head_dim=6, tie_word_embeddings=True,
        embedding_multiplier=12.0, residual_multiplier=0.22,
        attention_multiplier=0.0078125, logits_scaling=8.0,
        attention_bias=True, mlp_bias=True,
    ),
    # olmo2: post-norms, q/k norm over the whole projection (llama.cpp's
    # olmo2 needs head_dim = hidden/heads)
    "olmo2_gqa": base("olmo2", head_dim=6),
    "olmo2_mha_tied": base(
        "olmo2", num_key_value_heads=4, head_dim=6, tie_word_embeddings=True,
        intermediate_size=41,
    ),
    # head_dim != hidden/heads: ours and transformers only (llama.cpp's olmo2
    # loader refuses it)
    "olmo2_head_dim": base("olmo2", head_dim=10),
}

CONFIGS = {
    "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM),
    "qwen3_moe": (transformers.Qwen3MoeConfig, transformers.Qwen3MoeForCausalLM),
    "mixtral": (transformers.MixtralConfig, transformers.MixtralForCausalLM),
    "smollm3": (transformers.SmolLM3Config, transformers.SmolLM3ForCausalLM),
    "granite": (transformers.GraniteConfig, transformers.GraniteForCausalLM),
    "olmo2": (transformers.Olmo2Config, transformers.Olmo2ForCausalLM),
}


def f32_b64(a):
    return base64.b64encode(np.asarray(a, dtype="<f4").tobytes()).decode()


def main():
    tok = make_tokenizer()
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    out = {
        "generator": "tests/vectors/gen/model_families.py",
        "library": f"transformers {transformers.__version__}, torch {torch.__version__}",
        "prompt": PROMPT,
        "text_prompt": TEXT_PROMPT,
        "cases": [],
    }
    for i, (name, (kind, kw)) in enumerate(CASES.items()):
        torch.manual_seed(1000 + i)
        cfg_cls, model_cls = CONFIGS[kind]
        cfg = cfg_cls(**kw)
        model = model_cls(cfg).eval()
        with torch.no_grad():
            for pname, p in model.named_parameters():
                if pname.endswith("norm.weight"):
                    p.copy_(1 + 0.1 * torch.randn_like(p))
                elif pname.endswith(".bias"):
                    p.copy_(0.1 * torch.randn_like(p))
                else:
                    p.copy_(0.3 * torch.randn_like(p) if "embed" in pname
                            else torch.randn_like(p) / p.shape[-1] ** 0.5)
        folder = os.path.join(ROOT, name)
        model.save_pretrained(folder)
        # transformers' GenerationConfig would add defaults we do not need
        tok.save(os.path.join(folder, "tokenizer.json"))
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump({
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<|endoftext|>",
                "eos_token": "<|endoftext|>",
                "model_max_length": 256,
            }, f, indent=1)
        ids = torch.tensor([PROMPT])
        with torch.no_grad():
            logits = model(ids).logits[0].float().numpy()
            gen = model.generate(
                ids, max_new_tokens=GREEDY, do_sample=False, eos_token_id=None,
                pad_token_id=0, min_new_tokens=GREEDY,
            )[0, len(PROMPT):].tolist()
        text_ids = tok.encode(TEXT_PROMPT).ids
        with torch.no_grad():
            text_gen = model.generate(
                torch.tensor([text_ids]), max_new_tokens=TEXT_GREEDY,
                do_sample=False, eos_token_id=None, pad_token_id=0,
            )[0, len(text_ids):].tolist()
        out["cases"].append({
            "name": name,
            "text_ids": text_ids,
            "text_greedy": text_gen,
            "text_greedy_text": tok.decode(
                [i for i in text_gen if i < VOCAB], skip_special_tokens=False),
            "family": kind,
            "vocab": int(cfg.vocab_size),
            "logits": f32_b64(logits),
            "greedy": gen,
        })
        print(name, logits.shape, gen[:8])
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
