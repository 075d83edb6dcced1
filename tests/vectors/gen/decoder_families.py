#!/usr/bin/env python3
"""Tiny checkpoints of the decoder families beyond Llama, written by
transformers' own save_pretrained, and transformers' float32 logits (eager attention).

For every case below: a model class of transformers is built from a small
config with seeded random weights (norm weights and biases perturbed away
from their init, so a wrong offset or a dropped bias shows), saved with
save_pretrained (config.json, model.safetensors, generation_config.json)
into tests/vectors/families/<case>/ together with a tiny SentencePiece-style
BPE tokenizer.json made with the tokenizers library. transformers then runs
the saved folder (reloaded with from_pretrained) on a fixed prompt: the
logits at every position and 32 greedy tokens (argmax, no stop token) are
written to tests/vectors/decoder_families.json.

Run: /work/refpy/bin/python tests/vectors/gen/decoder_families.py
(transformers 5.18, torch 2.13 CPU, tokenizers 0.23)
"""

import json
import os
import shutil

import torch
import transformers as T
from tokenizers import Tokenizer, decoders, models, normalizers

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/vectors
OUT = os.path.join(HERE, "families")
PROMPT = [1, 7, 12, 30, 4, 19, 25, 9, 33, 14, 3, 28]
GREEDY = 32
TEXT = "the cat"  # the served prompt: <s> + its tokens, 8 greedy tokens


def tokenizer_json():
    """A tiny byte-fallback BPE (Llama's SentencePiece style): 42 tokens."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "\u2581": 3}
    for c in "abcdefghijklmnopqrstuvwxyz.,":
        vocab[c] = len(vocab)
    merges = [("\u2581", "t"), ("t", "h"), ("h", "e"), ("\u2581", "a"), ("i", "n"),
              ("\u2581t", "he"), ("a", "n"), ("e", "r"), ("o", "n")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    vocab["<0x0A>"] = len(vocab)  # llama.cpp looks up the newline byte token
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True,
                               fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"),
                                           normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    from tokenizers import AddedToken
    tok.add_special_tokens([AddedToken("<unk>", special=True), AddedToken("<s>", special=True),
                            AddedToken("</s>", special=True)])
    return tok, len(vocab)


TOK, VOCAB = tokenizer_json()
COMMON = {"vocab_size": VOCAB, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
          "max_position_embeddings": 128}

CASES = [
    # gemma: GeGLU (gelu tanh), (1 + w) RMSNorm, embeddings scaled by sqrt(d), always tied
    ("gemma-gqa-headdim", T.GemmaConfig, T.GemmaForCausalLM,
     dict(hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, head_dim=12, rms_norm_eps=1e-6)),
    ("gemma-mha-odd", T.GemmaConfig, T.GemmaForCausalLM,
     dict(hidden_size=24, intermediate_size=37, num_hidden_layers=2, num_attention_heads=3,
          num_key_value_heads=3, head_dim=8, rms_norm_eps=1e-5,
          rope_parameters={"rope_type": "default", "rope_theta": 5000.0})),
    # gemma2: sandwich norms, soft-capping, alternating sliding/global, query_pre_attn_scalar
    ("gemma2-gqa-window", T.Gemma2Config, T.Gemma2ForCausalLM,
     dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16, sliding_window=4,
          attn_logit_softcapping=1.5, final_logit_softcapping=2.5)),
    ("gemma2-mha-scalar", T.Gemma2Config, T.Gemma2ForCausalLM,
     dict(hidden_size=24, intermediate_size=30, num_hidden_layers=3, num_attention_heads=2,
          num_key_value_heads=2, head_dim=10, query_pre_attn_scalar=24, sliding_window=5,
          attn_logit_softcapping=3.0, final_logit_softcapping=4.0)),
    # gemma3 text: q/k norm, local/global rope bases, sliding pattern
    ("gemma3-gqa", T.Gemma3TextConfig, T.Gemma3ForCausalLM,
     dict(hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8, sliding_window=4)),
    ("gemma3-six-layers-scaled", T.Gemma3TextConfig, T.Gemma3ForCausalLM,
     dict(hidden_size=16, intermediate_size=24, num_hidden_layers=6, num_attention_heads=2,
          num_key_value_heads=1, head_dim=12, query_pre_attn_scalar=20, sliding_window=3,
          rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                           "full_attention": {"rope_type": "linear", "factor": 4.0,
                                              "rope_theta": 1000000.0}})),
    # phi3: fused qkv and gate_up, RMSNorm, SwiGLU
    ("phi3-gqa", T.Phi3Config, T.Phi3ForCausalLM,
     dict(hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-5)),
    ("phi3-mha-partial-tied", T.Phi3Config, T.Phi3ForCausalLM,
     dict(hidden_size=24, intermediate_size=36, num_hidden_layers=2, num_attention_heads=2,
          num_key_value_heads=2, tie_word_embeddings=True,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                           "partial_rotary_factor": 0.5})),
    ("phi3-longrope", T.Phi3Config, T.Phi3ForCausalLM,
     dict(hidden_size=32, intermediate_size=44, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=4, tie_word_embeddings=False, max_position_embeddings=1024,
          original_max_position_embeddings=256,
          rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                           "short_factor": [1.0, 1.4, 2.3, 3.9],
                           "long_factor": [1.1, 2.5, 6.0, 11.0],
                           "original_max_position_embeddings": 256})),
    # phi (phi-1/1.5/2): partial rotary, parallel attention + MLP, LayerNorm, GELU, biases
    ("phi-partial", T.PhiConfig, T.PhiForCausalLM,
     dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=4, partial_rotary_factor=0.5,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                           "partial_rotary_factor": 0.5})),
    ("phi-gqa-odd-rotary", T.PhiConfig, T.PhiForCausalLM,
     dict(hidden_size=40, intermediate_size=36, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, partial_rotary_factor=0.4,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                           "partial_rotary_factor": 0.4})),
    # gpt2: learned positions, LayerNorm, Conv1D weights, fused c_attn
    ("gpt2-small", T.GPT2Config, T.GPT2LMHeadModel,
     dict(n_embd=32, n_layer=2, n_head=4, n_positions=64)),
    ("gpt2-odd-inner", T.GPT2Config, T.GPT2LMHeadModel,
     dict(n_embd=24, n_layer=3, n_head=3, n_inner=50, n_positions=48)),
    # stablelm: partial rotary, LayerNorm, SwiGLU
    ("stablelm-gqa", T.StableLmConfig, T.StableLmForCausalLM,
     dict(hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, partial_rotary_factor=0.25, use_qkv_bias=True,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                           "partial_rotary_factor": 0.25})),
    ("stablelm-mha-tied", T.StableLmConfig, T.StableLmForCausalLM,
     dict(hidden_size=24, intermediate_size=30, num_hidden_layers=2, num_attention_heads=3,
          num_key_value_heads=3, partial_rotary_factor=0.5, tie_word_embeddings=True,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                           "partial_rotary_factor": 0.5})),
    # starcoder2: LayerNorm, biases, GELU (tanh) MLP
    ("starcoder2-gqa", T.Starcoder2Config, T.Starcoder2ForCausalLM,
     dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, tie_word_embeddings=True)),
    ("starcoder2-mha-untied-window", T.Starcoder2Config, T.Starcoder2ForCausalLM,
     dict(hidden_size=24, intermediate_size=40, num_hidden_layers=2, num_attention_heads=2,
          num_key_value_heads=2, tie_word_embeddings=False, sliding_window=5)),
    # gemma3 (multimodal): the language model of Gemma3ForConditionalGeneration
    # (config text_config, tensors language_model.model.*), with a tiny SigLIP tower
    ("gemma3-multimodal-text", lambda **kw: T.Gemma3Config(
        text_config=T.Gemma3TextConfig(**kw),
        vision_config=T.SiglipVisionConfig(hidden_size=16, intermediate_size=24,
                                           num_hidden_layers=1, num_attention_heads=2,
                                           image_size=28, patch_size=14),
        mm_tokens_per_image=1, image_token_index=41, boi_token_index=40, eoi_token_index=39),
     T.Gemma3ForConditionalGeneration,
     dict(hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8, sliding_window=4)),
]


def build(name, cfg_cls, model_cls, kw, seed):
    torch.manual_seed(seed)
    cfg = cfg_cls(**{**COMMON, **kw})
    cfg.torch_dtype = torch.float32
    model = model_cls(cfg).float().eval()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dim() == 1:  # norm weights and biases: away from 0 / 1
                p.add_(0.3 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.35 if "emb" in pname or "wte" in pname or "wpe" in pname else 0.25)
    return model


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    cases = []
    for i, (name, cfg_cls, model_cls, kw) in enumerate(CASES):
        model = build(name, cfg_cls, model_cls, kw, 1000 + i)
        folder = os.path.join(OUT, name)
        model.save_pretrained(folder)
        TOK.save(os.path.join(folder, "tokenizer.json"))
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                       "add_bos_token": True, "tokenizer_class": "PreTrainedTokenizerFast"}, f)
        # the reference runs the folder as a user would load it, with the
        # eager attention: transformers 5 defaults to SDPA, which silently
        # drops Gemma 2's attention soft-capping
        ref = model_cls.from_pretrained(folder, dtype=torch.float32,
                                        attn_implementation="eager").eval()
        with torch.no_grad():
            ids = torch.tensor([PROMPT])
            logits = ref(ids).logits[0].float()
            seq = list(PROMPT)
            for _ in range(GREEDY):
                out = ref(torch.tensor([seq])).logits[0, -1]
                seq.append(int(torch.argmax(out)))
            text_ids = [1] + TOK.encode(TEXT, add_special_tokens=False).ids
            tseq = list(text_ids)
            for _ in range(8):
                out = ref(torch.tensor([tseq])).logits[0, -1]
                tseq.append(int(torch.argmax(out)))
        cases.append({
            "name": name,
            "model_type": model.config.model_type,
            "folder": f"tests/vectors/families/{name}",
            "prompt": PROMPT,
            "vocab": VOCAB,
            "logits": [float(x) for x in logits.flatten().tolist()],
            "greedy": seq[len(PROMPT):],
            "text": TEXT,
            "text_ids": text_ids,
            "text_greedy": tseq[len(text_ids):],
        })
        print(name, model.config.model_type, sum(p.numel() for p in model.parameters()))
    with open(os.path.join(HERE, "decoder_families.json"), "w") as f:
        json.dump({"generator": "tests/vectors/gen/decoder_families.py",
                   "transformers": T.__version__, "torch": torch.__version__,
                   "cases": cases}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
