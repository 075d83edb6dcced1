#!/bin/sh
# llama-quantize's IQ1/IQ2/IQ3 and TQ preset outputs on the synthetic Llamas
# (synthetic_llama.ts), without an importance matrix and with the committed
# llama-imatrix matrices of tests/vectors/imatrix/ (made by imatrix.sh):
# sha256 and per-tensor types in tests/vectors/imatrix/iq_presets.json.
# A preset llama-quantize refuses (IQ2_XS, IQ2_XXS, IQ1_S … without a
# matrix) is listed as failed.
#
#   LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin sh tests/vectors/gen/iq_presets.sh
#
# The committed vectors: llama.cpp de3ff815, llama-quantize built as for
# gguf_presets.sh. Matrix paths are given relative to a scratch folder, as
# llama-quantize records them in the file.
set -eu
BIN=${LLAMA_CPP_BIN:?set LLAMA_CPP_BIN to llama.cpp build/bin}
PY=${REFPY:-/work/refpy/bin/python}
REPO=$(pwd)
OUT=$REPO/tests/vectors/imatrix
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for v in gqa4 mha; do
  deno run -A tests/vectors/gen/synthetic_llama.ts "$T/syn-$v.gguf" $v >/dev/null
  cp "$OUT/syn-$v.imatrix.gguf" "$T/"
done
cd "$T"
: > list
q() { # model imatrix-or-- type
  id="$1.$2.$3"
  if [ "$2" = "-" ]; then set -- "$1" "" "$3"; fi
  # shellcheck disable=SC2046
  if "$BIN/llama-quantize" $([ -n "$2" ] && echo --imatrix "$2") "$1.gguf" "$id.gguf" "$3" 1 >"$id.log" 2>&1; then
    echo "$1|$2|$3|$id.gguf" >> list
  else
    echo "$1|$2|$3|FAILED" >> list
  fi
}
for m in syn-gqa4 syn-mha; do
  for t in IQ3_S IQ3_M IQ3_XS IQ3_XXS IQ2_XS; do q $m - $t; done
  for t in IQ3_S IQ3_M IQ3_XS IQ3_XXS IQ2_XS IQ2_S; do q $m $m.imatrix.gguf $t; done
  # the 1- and 2-bit mixes and the ternary types
  for t in IQ2_XXS IQ2_S IQ2_M IQ1_S IQ1_M TQ1_0 TQ2_0; do q $m - $t; done
  for t in IQ2_XXS IQ2_M IQ1_S IQ1_M TQ1_0 TQ2_0; do q $m $m.imatrix.gguf $t; done
done
"$PY" - > "$OUT/iq_presets.json" <<'PYEOF'
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
w('{\n "generator": "tests/vectors/gen/iq_presets.sh",\n "cases": [\n')
w(",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in cases))
w("\n ]\n}\n")
PYEOF
echo "wrote $OUT/iq_presets.json"
