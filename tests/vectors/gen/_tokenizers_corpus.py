"""The texts every tokenizer vector is made from (shared by the generators).

TEST_TEXTS are encoded one by one; TRAIN_TEXT is what the tiny vocabularies
are trained on. Both are our own text, written for these tests.
"""

TRAIN_TEXT = """
The quick brown fox jumps over the lazy dog. A tokenizer cuts text into
pieces that a model can count; the pieces are learned from text like this.
Models read numbers such as 3.14159, 2024-01-01 and 1,000,000 as well as
words. We're testing contractions: I'm, you'll, they've, don't, she'd.
Spaces  matter,   and so do tabs\tand new lines.

def add(a, b):
    # return the sum of two numbers
    return a + b

for (let i = 0; i < n; i++) { total += values[i] * 2; }
if x <= y and y >= z: print("ok")  # comment

Il était une fois un café où l'on parlait français, español y português.
Große Straßen führen über Brücken. Ångström, naïve, résumé, coöperate.
東京は日本の首都です。中文的分词很有意思。漢字とひらがなとカタカナ。
한국어 문장도 잘 나뉘어야 합니다. مرحبا بالعالم، هذا نص عربي. שלום עולם, זה טקסט בעברית.
Привет, мир! Это русский текст. Γειά σου κόσμε, ΟΔΥΣΣΕΥΣ.
Emoji: 👍 🎉 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ — and full-width ＡＢＣ１２３！
""" * 3

TEST_TEXTS = [
    "Hello world! How are you?",
    "",
    " ",
    "   leading and trailing spaces   ",
    "a  b   c\t\td\n\n\ne     f",
    "line one\nline two\r\nline three\n",
    "def f(x):\n    return x**2  # square\n\tif (a<=b) { c = a->d; }",
    "I'm sure you'll see they've WE'RE don't",
    "3.14159 1,000,000 2024-01-01 12345678901234567890",
    "東京は日本の首都です。中文字符测试，한국어 텍스트",
    "مرحبا بالعالم و abc 123",
    "שלום עולם",
    "👨‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 👍🏽 thumbs, ❤️",
    "ＡＢＣ１２３！？　ｆｕｌｌ　ｗｉｄｔｈ",
    "Café naïve résumé Ångström ÉCOLE",
    "Cafe\u0301 decomposed and precomposed Caf\u00e9",
    "ΣΊΣΥΦΟΣ ΟΔΥΣΣΕΥΣ σίσυφος",
    "İstanbul ıI straße",
    "Z\u0324\u0354\u0367\u0311a\u0320l\u0359go text",
    "𝕳𝖊𝖑𝖑𝖔 𝟙𝟚𝟛 ﬁne ﬂow ½ ² Ⅻ",
    "control\u0000chars\u0007and\u200bzero\ufeffwidth\u00a0nbsp",
    "a" * 300,
    "ab" * 60,
    "!!!!!!!!?????...,,,,",
    "1234567890" * 8,
    "\n" * 12,
    " " * 40 + "x",
    "x" + "\t" * 9,
    "hello<s>world</s> <|endoftext|> [CLS] [MASK] <mask>",
    "special <s> tokens </s>at edges<s>",
    "new<|im_start|>user\nhi<|im_end|>\n",
    "  [MASK]  spaced mask  ",
    "word_piece hyphen-ated under_score",
    "UPPER lower MiXeD CamelCase snake_case",
    "email@example.com http://example.org/path?q=1&r=2",
    "\u2581already\u2581escaped \u2581\u2581 pieces",
    "Tab\tand\u3000ideographic space\u2003em space",
    "⁉ ‼ ‽ … — – ‘quotes’ “double” «guillemets»",
]
