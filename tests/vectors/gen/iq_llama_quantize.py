# Writes tests/vectors/iq_llama_quantize.json: what `llama-quantize --pure`
# writes for IQ4_NL, IQ4_XS and MXFP4_MOE from the synthetic F32 Llama of
# ../shared/fixtures/reference/quant (n_embd 256, n_ff 512, 2 layers), as
# read by gguf-py: each tensor's type and the SHA-256 of its bytes, every
# metadata key with its type, general.file_type, the whole file's SHA-256,
# and llama.cpp's greedy ids from each file (node-llama-cpp, through
# llama_iq4xs.mjs). tests/conformance/gguf_iq_quant_test.ts writes the same
# source with modelhost and compares.
#
# Run: LLAMA_QUANTIZE=/path/llama-quantize (its libraries on LD_LIBRARY_PATH)
#      NODE_PATH=/path/node_modules (node-llama-cpp 3.22)
#      /work/refpy/bin/python tests/vectors/gen/iq_llama_quantize.py
import hashlib, json, os, subprocess, tempfile
import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SRC = os.path.join(ROOT, "..", "shared", "fixtures", "reference", "quant", "synthetic-llama-f32.gguf")
EXE = os.environ["LLAMA_QUANTIZE"]
out = {"source": "reference/quant/synthetic-llama-f32.gguf", "files": {}}
with tempfile.TemporaryDirectory() as tmp:
    for ftype in ["IQ4_NL", "IQ4_XS", "MXFP4_MOE"]:
        path = os.path.join(tmp, f"{ftype}.gguf")
        log = subprocess.run([EXE, "--pure", SRC, path, ftype, "1"], capture_output=True, text=True, check=True)
        version = next((l for l in (log.stdout + log.stderr).splitlines() if l.startswith("version:")), "?")
        r = gguf.GGUFReader(path)
        tensors = {t.name: {"type": t.tensor_type.name, "sha256": hashlib.sha256(bytes(t.data.tobytes())).hexdigest()}
                   for t in r.tensors}
        keys = {name: f.types[0].name for name, f in r.fields.items() if not name.startswith("GGUF.")}
        with open(path, "rb") as f:
            whole = hashlib.sha256(f.read()).hexdigest()
        greedy = json.loads(subprocess.run(["node", os.path.join(HERE, "llama_iq4xs.mjs"), path],
                                           capture_output=True, text=True, check=True).stdout)
        out["files"][ftype] = {
            "greedy": greedy["cases"],
            "greedy_by": greedy["library"],
            "llama_quantize": version,
            "file_type": int(r.fields["general.file_type"].parts[-1][0]),
            "keys": keys,
            "tensors": tensors,
            "sha256": whole,
        }
        print(ftype, version, len(tensors), "tensors")
with open(os.path.join(os.path.dirname(HERE), "iq_llama_quantize.json"), "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
