#!/bin/sh
# llama-quantize's outputs for every preset on the synthetic Llamas
# (synthetic_llama.ts) and the fixtures' models: sha256 of each whole file
# plus its per-tensor types (read by gguf-py), in tests/vectors/gguf_presets.json.
#
#   LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin sh tests/vectors/gen/gguf_presets.sh
#
# Needs deno, /work/refpy/bin/python (gguf-py) and ../shared/fixtures.
# LLAMA_CPP_DESC names the llama.cpp build in the output. The committed
# vectors: llama.cpp de3ff815 (the source node-llama-cpp 3.22.1 ships as its
# v0.5.0 bundle), tools/quantize compiled with g++ -O2 against that
# release's prebuilt CPU libraries (see DEVELOPERS.md).
set -eu
BIN=${LLAMA_CPP_BIN:?set LLAMA_CPP_BIN to llama.cpp build/bin}
PY=${REFPY:-/work/refpy/bin/python}
FIX=${MODELHOST_FIXTURES:-../shared/fixtures}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
deno run -A tests/vectors/gen/synthetic_llama.ts "$T/syn-gqa4.gguf" gqa4 >/dev/null
deno run -A tests/vectors/gen/synthetic_llama.ts "$T/syn-mha.gguf" mha >/dev/null
cp "$FIX/gguf/stories260K.gguf" "$T/stories260K.gguf"
cp "$FIX/gguf/llama-2-tiny-random.gguf" "$T/llama-2-tiny-random.gguf"

# case id | flags | type
CASES='Q2_K||Q2_K
Q3_K_S||Q3_K_S
Q3_K_M||Q3_K_M
Q3_K_L||Q3_K_L
Q4_K_S||Q4_K_S
Q4_K_M||Q4_K_M
Q5_K_S||Q5_K_S
Q5_K_M||Q5_K_M
Q6_K||Q6_K
Q8_0||Q8_0
Q4_0||Q4_0
Q5_1||Q5_1
IQ4_NL||IQ4_NL
IQ4_XS||IQ4_XS
Q4_K-pure|--pure|Q4_K
Q4_K_M-types|--output-tensor-type q8_0 --token-embedding-type q5_0|Q4_K_M
Q5_K_M-leave-output|--leave-output-tensor|Q5_K_M'

: > "$T/list"
for m in syn-gqa4 syn-mha stories260K llama-2-tiny-random; do
  echo "$CASES" | while IFS='|' read -r id flags type; do
    # shellcheck disable=SC2086
    if "$BIN/llama-quantize" $flags "$T/$m.gguf" "$T/$m.$id.gguf" "$type" 1 \
      >"$T/$m.$id.log" 2>&1; then
      echo "$m|$id|$flags|$type|$T/$m.$id.gguf" >> "$T/list"
    else
      echo "$m|$id|$flags|$type|FAILED" >> "$T/list"
    fi
  done
done

"$PY" - "$T" > tests/vectors/gguf_presets.json <<'PYEOF'
import hashlib, json, subprocess, sys
from gguf import GGUFReader
t = sys.argv[1]
def sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()
out = {"generator": "tests/vectors/gen/gguf_presets.sh",
       "llama_cpp": __import__("os").environ.get("LLAMA_CPP_DESC", "unknown build"),
       "inputs": {}, "cases": []}
for m in ["syn-gqa4", "syn-mha", "stories260K", "llama-2-tiny-random"]:
    out["inputs"][m] = sha(f"{t}/{m}.gguf")
for line in open(f"{t}/list"):
    m, cid, flags, typ, path = line.rstrip("\n").split("|")
    case = {"model": m, "id": cid, "flags": flags.split() if flags else [], "type": typ}
    if path == "FAILED":
        case["failed"] = True
    else:
        r = GGUFReader(path)
        case["sha256"] = sha(path)
        case["bytes"] = __import__("os").path.getsize(path)
        case["tensors"] = [[x.name, x.tensor_type.name] for x in r.tensors]
    out["cases"].append(case)
w = sys.stdout.write
w('{\n "generator": %s,\n "llama_cpp": %s,\n "inputs": %s,\n "cases": [\n' % (
    json.dumps(out["generator"]), json.dumps(out["llama_cpp"]), json.dumps(out["inputs"])))
w(",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in out["cases"]))
w("\n ]\n}\n")
PYEOF
echo "wrote tests/vectors/gguf_presets.json"
