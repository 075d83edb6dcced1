"""Renders every chat template in tests/vectors/chat_templates/ with
transformers' `apply_chat_template` over a set of conversations, and writes
tests/vectors/chat_templates.json: for each case the template, the
special tokens, the call's arguments, and the exact text (or the error the
template raised).

    /work/refpy/bin/python tests/vectors/gen/chat_templates.py

The templates are our own text, written in the shapes released models use
(Llama 2, Llama 3.1 with tools, Qwen 2.5 ChatML with its default system
prompt, Qwen3 with thinking, Mistral v1 / v3 with tools / Tekken, Gemma 2
and 3, Phi-3 and Phi-4, DeepSeek R1, Granite 3, SmolLM3, a harmony-style
gpt-oss template, Zephyr). `strftime_now` is pinned to 2025-03-07 14:05:09
so dates are reproducible.
"""

import copy
import datetime as real_datetime
import json
import os

import transformers
import transformers.utils.chat_template_utils as ctu
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast

HERE = os.path.dirname(__file__)
TEMPLATES = os.path.join(HERE, "..", "chat_templates")
OUT = os.path.join(HERE, "..", "chat_templates.json")
NOW = real_datetime.datetime(2025, 3, 7, 14, 5, 9)


class FixedDatetime(real_datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return NOW


ctu.datetime = FixedDatetime

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather at a place.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City and country, e.g. “Paris, FR”"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                "days": {"type": "integer", "description": "How many days ahead"},
                "hours": {"type": "array", "items": {"type": "number"}},
            },
            "required": ["location"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Searches the web.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
CALL = {"id": "call12345", "type": "function",
        "function": {"name": "get_weather", "arguments": {"location": "Paris, FR", "unit": "celsius"}}}

CONVERSATIONS = {
    "user": [{"role": "user", "content": "Hello!"}],
    "system_user": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2?"},
    ],
    "multi": [
        {"role": "system", "content": "You answer in French."},
        {"role": "user", "content": "  Hi there  "},
        {"role": "assistant", "content": "Bonjour ! Comment puis-je aider ?"},
        {"role": "user", "content": "Tell me a joke about \"quotes\" & <tags>."},
    ],
    "no_system": [
        {"role": "user", "content": "One"},
        {"role": "assistant", "content": "Two"},
        {"role": "user", "content": "Three\nlines\n"},
    ],
    "unicode": [
        {"role": "user", "content": "東京 👨‍👩‍👧 naïve — ＡＢＣ\ttab"},
        {"role": "assistant", "content": "مرحبا 🎉"},
        {"role": "user", "content": "ok"},
    ],
    "tools": [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "{\"temperature\": 22.5, \"sky\": \"clear\"}"},
        {"role": "assistant", "content": "It is 22.5 °C and clear."},
        {"role": "user", "content": "And tomorrow?"},
    ],
    "tools_pending": [
        {"role": "system", "content": "Use tools when useful."},
        {"role": "user", "content": "Weather in Oslo?"},
    ],
    "thinking": [
        {"role": "user", "content": "Is 7 prime?"},
        {"role": "assistant", "content": "<think>\nDivisors of 7: 1 and 7.\n</think>\n\nYes, 7 is prime.",
         "reasoning_content": None},
        {"role": "user", "content": "And 9?"},
    ],
    "thinking_fields": [
        {"role": "user", "content": "Is 7 prime?"},
        {"role": "assistant", "content": "Yes.", "reasoning_content": "Only 1 and 7 divide it.",
         "thinking": "Only 1 and 7 divide it."},
    ],
    "parts": [
        {"role": "system", "content": [{"type": "text", "text": "Describe images."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " What is this? "}]},
    ],
}

# template -> (special tokens, list of (conversation, extra call arguments))
BASIC = ["user", "system_user", "multi", "no_system", "unicode"]
NO_SYSTEM = ["user", "no_system", "unicode", "system_user"]
PLAN = {
    "llama2": ({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}, [(c, {}) for c in BASIC]),
    "llama31_tools": ({"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
                      [(c, {}) for c in BASIC] + [("tools", {"tools": [WEATHER]}),
                                                  ("tools_pending", {"tools": [WEATHER, SEARCH]}),
                                                  ("tools", {"tools": [WEATHER], "tools_in_user_message": False}),
                                                  ("user", {"date_string": "01 Jan 2030"})]),
    "chatml_qwen25": ({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
                      [(c, {}) for c in BASIC] + [("tools", {"tools": [WEATHER]}),
                                                  ("tools_pending", {"tools": [WEATHER, SEARCH]})]),
    "qwen3_thinking": ({"eos_token": "<|im_end|>"},
                       [(c, {}) for c in BASIC] + [("thinking", {}), ("thinking", {"enable_thinking": False}),
                                                   ("thinking_fields", {}), ("user", {"enable_thinking": False}),
                                                   ("tools", {"tools": [WEATHER]})]),
    "mistral_v1": ({"bos_token": "<s>", "eos_token": "</s>"}, [(c, {}) for c in NO_SYSTEM]),
    "mistral_v3_tools": ({"bos_token": "<s>", "eos_token": "</s>"},
                         [(c, {}) for c in BASIC] + [("tools", {"tools": [WEATHER, SEARCH]})]),
    "mistral_tekken": ({"bos_token": "<s>", "eos_token": "</s>"}, [(c, {}) for c in BASIC]),
    "gemma2": ({"bos_token": "<bos>", "eos_token": "<eos>"}, [(c, {}) for c in NO_SYSTEM]),
    "gemma3": ({"bos_token": "<bos>", "eos_token": "<eos>"}, [(c, {}) for c in BASIC] + [("parts", {})]),
    "phi3": ({"bos_token": "<s>", "eos_token": "<|endoftext|>"}, [(c, {}) for c in BASIC]),
    "phi4": ({"eos_token": "<|im_end|>"}, [(c, {}) for c in BASIC]),
    "deepseek_r1": ({"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
                    [(c, {}) for c in BASIC] + [("thinking", {})]),
    "granite3": ({"eos_token": "<|end_of_text|>"},
                 [(c, {}) for c in BASIC] + [("tools_pending", {"tools": [WEATHER]}),
                                             ("user", {"documents": [{"title": "A", "text": "Oslo is cold."},
                                                                     {"title": "B", "text": "Paris is mild."}]}),
                                             ("user", {"tools": [SEARCH], "documents": [{"title": "A", "text": "x"}],
                                                       "controls": {"citations": True, "length": "short"}})]),
    "smollm3": ({"eos_token": "<|im_end|>"},
                [(c, {}) for c in BASIC] + [("user", {"enable_thinking": False}),
                                            ("tools_pending", {"tools": [WEATHER]}),
                                            ("user", {"python_tools": ["def f(x: int) -> int: ..."]})]),
    "gpt_oss": ({"eos_token": "<|return|>"},
                [(c, {}) for c in BASIC] + [("tools", {"tools": [WEATHER, SEARCH]}),
                                            ("thinking_fields", {"reasoning_effort": "high"}),
                                            ("tools_pending", {"tools": [WEATHER], "model_identity": "You are Fox."})]),
    "zephyr": ({"bos_token": "<s>", "eos_token": "</s>"}, [(c, {}) for c in BASIC]),
    "python_printing": ({"eos_token": "</s>"}, [("tools", {}), ("user", {"tools": [SEARCH]})]),
}


def tokenizer(special):
    vocab = {"<unk>": 0}
    for v in special.values():
        vocab.setdefault(v, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, **special)


def main():
    cases = []
    for name, (special, runs) in PLAN.items():
        with open(os.path.join(TEMPLATES, f"{name}.jinja")) as f:
            source = f.read()
        tok = tokenizer(special)
        passed = {k: v for k, v in tok.special_tokens_map.items() if isinstance(v, str)}
        for conv, extra in runs:
            for gen in [True, False]:
                messages = copy.deepcopy(CONVERSATIONS[conv])
                case = {"template": name, "conversation": conv, "special_tokens": passed,
                        "add_generation_prompt": gen, "arguments": extra}
                try:
                    case["text"] = tok.apply_chat_template(messages, chat_template=source, tokenize=False,
                                                           add_generation_prompt=gen, **copy.deepcopy(extra))
                except Exception as e:  # the template's raise_exception, or a Jinja error
                    case["error"] = f"{type(e).__name__}: {e}"
                cases.append(case)
    with open(OUT, "w") as f:
        json.dump({
            "generator": f"tests/vectors/gen/chat_templates.py (transformers {transformers.__version__})",
            "now": NOW.isoformat(),
            "conversations": CONVERSATIONS,
            "cases": cases,
        }, f, ensure_ascii=False, indent=1)
    ok = sum(1 for c in cases if "text" in c)
    print(f"{len(cases)} cases, {ok} rendered, {len(cases) - ok} raised")
    for c in cases:
        if "error" in c:
            print(" ", c["template"], c["conversation"], c["error"][:100])


if __name__ == "__main__":
    main()
