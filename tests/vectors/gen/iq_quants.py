# Writes tests/vectors/iq_quants.gguf and iq_quants.json: every ggml block
# type that modelhost reads only through this file's checks (the IQ, TQ, FP4,
# Q1_0/Q2_0 types), quantized and dequantized by ggml itself (iq_quants.c,
# linked against the libggml-base of a llama.cpp build), with the
# dequantized values also computed by gguf-py's NumPy readers as a second,
# independent reader.
#
# The GGUF holds `src` (4 × 512 F32 input rows), `imatrix` (512 F32 weights),
# `<TYPE>` (ggml_quantize_chunk of src; the imatrix is passed to the types that
# require one), `<TYPE>.imat` (IQ4_NL/IQ4_XS/MXFP4/IQ3_S/IQ3_XXS/IQ2_S with
# the imatrix) and
# `<TYPE>.ref` (the type's quantize_row_*_ref). The JSON holds, per type, the
# SHA-256 of ggml's dequantized F32 bytes, sampled values, and whether
# gguf-py's dequantization equals ggml's bit for bit.
#
# Dot products (iq_dots.c, also linked against libggml-cpu): for IQ4_NL,
# IQ4_XS, MXFP4, IQ3_S and IQ2_XS, `dot.x` (512 F32 activations),
# `dot.<TYPE>.xq` (x quantized to the type's activation blocks, Q8_0 or Q8_K,
# by ggml's CPU backend) and, in the JSON, ggml's vec_dot of each row of
# `<TYPE>` with them.
#
# Run (llama.cpp checked out at LLAMA, ggml-base built in BUILD):
#   cmake -S LLAMA -B BUILD -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF && cmake --build BUILD --target ggml-base -j2
#   PYTHONPATH=LLAMA/gguf-py /work/refpy/bin/python tests/vectors/gen/iq_quants.py LLAMA BUILD
import hashlib, json, os, subprocess, sys, tempfile
import numpy as np
import gguf
from gguf import quants

LLAMA, BUILD = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.dirname(HERE)
ROWS, COLS = 4, 512
TYPES = ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M",
         "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4", "Q1_0", "Q2_0"]

rng = np.random.default_rng(24)
x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
x[1] *= 1e-3
x[1, rng.integers(0, COLS, 6)] = rng.standard_normal(6) * 0.05  # outliers
x[2] = rng.standard_t(3, COLS)
x[2, 64:96] = 0  # a zero block (not the first of its row)
x[2, 160:192] = 1e-20  # below ggml's GROUP_MAX_EPS
x[3] = rng.integers(-3, 4, COLS) * 0.5  # ties
x = x.astype(np.float32)
imatrix = rng.uniform(0.1, 10, COLS).astype(np.float32)
xact = (rng.standard_normal(COLS) * 2).astype(np.float32)
DOT_TYPES = ["IQ4_NL", "IQ4_XS", "MXFP4", "IQ3_S", "IQ2_XS"]

with tempfile.TemporaryDirectory() as tmp:
    exe = os.path.join(tmp, "iq_quants")
    subprocess.run(["cc", "-O2", os.path.join(HERE, "iq_quants.c"), "-I", os.path.join(LLAMA, "ggml/include"),
                    "-L", os.path.join(BUILD, "bin"), "-lggml-base", "-o", exe], check=True)
    x.tofile(os.path.join(tmp, "src.f32"))
    imatrix.tofile(os.path.join(tmp, "imatrix.f32"))
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "bin"))
    subprocess.run([exe, tmp, str(COLS)] + [t.lower() for t in TYPES], check=True, env=env)
    dexe = os.path.join(tmp, "iq_dots")
    subprocess.run(["cc", "-O2", os.path.join(HERE, "iq_dots.c"), "-I", os.path.join(LLAMA, "ggml/include"),
                    "-L", os.path.join(BUILD, "bin"), "-lggml-base", "-lggml-cpu", "-o", dexe], check=True)
    xact.tofile(os.path.join(tmp, "x.f32"))
    vt = dict(l.split() for l in subprocess.run([dexe, tmp, str(COLS)] + [t.lower() for t in DOT_TYPES], check=True,
                                                env=env, capture_output=True, text=True).stdout.splitlines())
    commit = subprocess.run(["git", "-C", LLAMA, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()

    w = gguf.GGUFWriter(os.path.join(OUT, "iq_quants.gguf"), "llama")
    w.add_string("test.llama_cpp_commit", commit)
    w.add_tensor("src", x)
    w.add_tensor("imatrix", imatrix)
    info = {"llama_cpp_commit": commit, "rows": ROWS, "cols": COLS, "types": {}}

    def read(name):
        return np.fromfile(os.path.join(tmp, name), dtype=np.uint8)

    for t in TYPES:
        qt = gguf.GGMLQuantizationType[t]
        q = read(t.lower() + ".q")
        deq = np.fromfile(os.path.join(tmp, t.lower() + ".deq"), dtype=np.float32)
        w.add_tensor(t, q.reshape(ROWS, -1), raw_dtype=qt)
        for variant in ("imat", "ref"):
            p = os.path.join(tmp, f"{t.lower()}.{variant}.q")
            if os.path.exists(p):
                w.add_tensor(f"{t}.{variant}", read(f"{t.lower()}.{variant}.q").reshape(ROWS, -1), raw_dtype=qt)
        try:
            py = quants.dequantize(q, qt).reshape(-1).astype(np.float32)
            same = bool(np.array_equal(py.view(np.uint32), deq.view(np.uint32)))
            ggufpy = "equal" if same else f"differs at {int(np.sum(py.view(np.uint32) != deq.view(np.uint32)))} values"
        except NotImplementedError:
            ggufpy = "no reader"
        idx = [0, 1, 17, 255, 300, 511, 600, 1100, 1500, 2047]
        info["types"][t] = {
            "deq_sha256": hashlib.sha256(deq.tobytes()).hexdigest(),
            "samples": [[i, float(deq[i])] for i in idx],
            "ggufpy": ggufpy,
            "variants": [v for v in ("imat", "ref") if os.path.exists(os.path.join(tmp, f"{t.lower()}.{v}.q"))],
        }
        print(t, q.size, "bytes; gguf-py:", ggufpy)
    w.add_tensor("dot.x", xact)
    info["dots"] = {}
    for t in DOT_TYPES:
        assert np.array_equal(np.fromfile(os.path.join(tmp, t.lower() + ".w"), dtype=np.uint8), read(t.lower() + ".q"))
        xq = np.fromfile(os.path.join(tmp, t.lower() + ".xq"), dtype=np.uint8)
        act = gguf.GGMLQuantizationType[vt[t.lower()].upper()]
        w.add_tensor(f"dot.{t}.xq", xq.reshape(1, -1), raw_dtype=act)
        dots = np.fromfile(os.path.join(tmp, t.lower() + ".dot"), dtype=np.float32)
        info["dots"][t] = {"activations": act.name, "dots": [float(v) for v in dots]}
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

with open(os.path.join(OUT, "iq_quants.json"), "w") as f:
    json.dump(info, f, indent=1)
    f.write("\n")
