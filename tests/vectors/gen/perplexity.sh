#!/bin/sh
# llama-perplexity's numbers on tests/vectors/perplexity/stories.txt with a
# context of 128: perplexity of stories260K (F32) and of the synthetic gqa4
# Llama (F16, tests/vectors/gen/synthetic_llama.ts), and KL divergence of
# stories260K-Q4_0 from stories260K and of the synthetic model's Q4_K_M (made
# by llama-quantize) from its F16 base; plus the sha256 of the tokens
# llama.cpp evaluated. Writes tests/vectors/perplexity/llama_perplexity.json.
#
#   LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin sh tests/vectors/gen/perplexity.sh
#
# LLAMA_CPP_BIN needs llama-perplexity and llama-quantize (and the CPU
# backend libraries beside them; llama-perplexity linked with a main that
# drains llama.cpp's asynchronous logger before exit, see DEVELOPERS.md, or
# the summary can be lost); also deno, python3 and ../shared/fixtures.
set -eu
BIN=${LLAMA_CPP_BIN:?set LLAMA_CPP_BIN to llama.cpp build/bin}
FIX=${MODELHOST_FIXTURES:-../shared/fixtures}
TEXT=tests/vectors/perplexity/stories.txt
T=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
deno run -A tests/vectors/gen/synthetic_llama.ts "$T/syn-gqa4.gguf" gqa4 >/dev/null
"$BIN/llama-quantize" "$T/syn-gqa4.gguf" "$T/syn-gqa4-Q4_K_M.gguf" Q4_K_M 1 >/dev/null 2>&1
ppl() { # model name
  "$BIN/llama-perplexity" -m "$1" -f "$TEXT" -c 128 --chunks 20 -t 1 --ppl-output-type 1 \
    --kl-divergence-base "$T/$2.kld" > "$T/$2.ppl.log" 2>&1
}
kld() { # model base name [extra flags]
  "$BIN/llama-perplexity" -m "$1" -f "$TEXT" -c 128 --chunks 20 -t 1 \
    --kl-divergence-base "$T/$2.kld" --kl-divergence ${4:-} > "$T/$3.kld.log" 2>&1
}
ppl "$FIX/gguf/stories260K.gguf" stories260K
ppl "$T/syn-gqa4.gguf" syn-gqa4
kld "$FIX/reference/llama-logits/stories260K-Q4_0.gguf" stories260K stories260K-Q4_0
kld "$T/syn-gqa4-Q4_K_M.gguf" syn-gqa4 syn-gqa4-Q4_K_M
# the same without the CPU backend's repacked Q4_K kernels (Q4_K_8x8 on AVX2,
# used by default there): llama.cpp's KL divergence moves by ~0.3 % between
# its two paths (docs/cli.md, "Perplexity")
kld "$T/syn-gqa4-Q4_K_M.gguf" syn-gqa4 syn-gqa4-Q4_K_M-no-repack --no-repack
python3 - "$T" > tests/vectors/perplexity/llama_perplexity.json <<'PYEOF'
import hashlib, json, re, struct, sys
t = sys.argv[1]
out = {"generator": "tests/vectors/gen/perplexity.sh", "text": "tests/vectors/perplexity/stories.txt", "ctx": 128, "chunks": 20,
       "perplexity": {}, "kl_divergence": {}}
for m in ["stories260K", "syn-gqa4"]:
    log = open(f"{t}/{m}.ppl.log", encoding="utf-8").read()
    rows = re.findall(r"^\s*\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", log, re.M)
    final = re.search(r"Final estimate: PPL = ([\d.]+) \+/- ([\d.]+)", log)
    base = open(f"{t}/{m}.kld", "rb").read()
    n_ctx, n_vocab, n_chunk = struct.unpack("<iii", base[8:20])
    out["perplexity"][m] = {
        "ppl": float(final.group(1)), "uncertainty": float(final.group(2)),
        "mean_nll": float(rows[-1][1]), "per_chunk_ppl": [float(r[0]) for r in rows],
        "chunks": n_chunk, "vocab": n_vocab,
        "tokens_sha256": hashlib.sha256(base[20:20 + 4 * n_ctx * n_chunk]).hexdigest(),
    }
for m in ["stories260K-Q4_0", "syn-gqa4-Q4_K_M", "syn-gqa4-Q4_K_M-no-repack"]:
    log = open(f"{t}/{m}.kld.log", encoding="utf-8").read()
    g = lambda pat: float(re.search(pat, log).group(1))
    out["kl_divergence"][m] = {
        "ppl": g(r"Mean PPL\(Q\)\s+:\s+([\d.]+)"),
        "ppl_base": g(r"Mean PPL\(base\)\s+:\s+([\d.]+)"),
        "ln_ppl_ratio": g(r"Mean ln\(PPL\(Q\)/PPL\(base\)\)\s+:\s+(-?[\d.]+)"),
        "kld": g(r"Mean    KLD:\s+([\d.]+)"),
        "rms_delta_p_percent": g(r"RMS Δp\s+:\s+([\d.]+)"),
        "same_top_percent": g(r"Same top p:\s+([\d.]+)"),
    }
json.dump(out, sys.stdout, indent=1)
print()
PYEOF
echo "wrote tests/vectors/perplexity/llama_perplexity.json"
