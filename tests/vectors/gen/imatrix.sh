#!/bin/sh
# llama-imatrix's importance matrices of the synthetic Llamas
# (synthetic_llama.ts) over tests/vectors/perplexity/stories.txt (context
# 128, 8 chunks), kept in tests/vectors/imatrix/ (GGUF for both, the legacy
# .dat for mha), and llama-quantize's outputs with them (sha256 and
# per-tensor types in tests/vectors/imatrix/quantize.json).
#
#   LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin sh tests/vectors/gen/imatrix.sh
#
# Paths are given to llama.cpp relative to a scratch folder, because
# llama-quantize records them in the file (quantize.imatrix.file, .dataset).
set -eu
BIN=${LLAMA_CPP_BIN:?set LLAMA_CPP_BIN to llama.cpp build/bin}
PY=${REFPY:-/work/refpy/bin/python}
REPO=$(pwd)
OUT=$REPO/tests/vectors/imatrix
mkdir -p "$OUT"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp tests/vectors/perplexity/stories.txt "$T/stories.txt"
for v in gqa4 mha; do
  deno run -A tests/vectors/gen/synthetic_llama.ts "$T/syn-$v.gguf" $v >/dev/null
done
cd "$T"
for v in gqa4 mha; do
  "$BIN/llama-imatrix" -m syn-$v.gguf -f stories.txt -c 128 --chunks 8 -t 1 \
    -o syn-$v.imatrix.gguf >/dev/null 2>&1
done
"$BIN/llama-imatrix" -m syn-mha.gguf -f stories.txt -c 128 --chunks 8 -t 1 \
  --output-format dat -o syn-mha.imatrix.dat >/dev/null 2>&1
cp syn-gqa4.imatrix.gguf syn-mha.imatrix.gguf syn-mha.imatrix.dat "$OUT/"
: > list
q() { # model imatrix type
  id="$1.$(basename "$2").$3"
  if "$BIN/llama-quantize" --imatrix "$2" "$1.gguf" "$id.gguf" "$3" 1 >"$id.log" 2>&1; then
    echo "$1|$2|$3|$id.gguf" >> list
  else
    echo "$1|$2|$3|FAILED" >> list
  fi
}
for t in Q4_K_M Q5_K_S Q4_0 Q2_K_S; do q syn-gqa4 syn-gqa4.imatrix.gguf $t; done
for t in Q5_K_M Q4_1 Q5_0 Q8_0 Q3_K_M Q2_K; do q syn-mha syn-mha.imatrix.gguf $t; done
q syn-mha syn-mha.imatrix.dat Q4_K_M
"$PY" - > "$OUT/quantize.json" <<'PYEOF'
import hashlib, json, sys
from gguf import GGUFReader
cases = []
for line in open("list"):
    m, im, t, path = line.strip().split("|")
    c = {"model": m, "imatrix": im, "type": t}
    if path == "FAILED":
        c["failed"] = True
    else:
        c["sha256"] = hashlib.sha256(open(path, "rb").read()).hexdigest()
        c["tensors"] = [[x.name, x.tensor_type.name] for x in GGUFReader(path).tensors]
    cases.append(c)
w = sys.stdout.write
w('{\n "generator": "tests/vectors/gen/imatrix.sh",\n "cases": [\n')
w(",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in cases))
w("\n ]\n}\n")
PYEOF
echo "wrote $OUT"
