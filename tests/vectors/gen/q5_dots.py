# Writes tests/vectors/q5_dots.json: Q5_0 weight rows quantized by ggml
# (ggml_quantize_chunk), activations quantized by ggml's CPU backend to the
# type's vec_dot_type (Q8_0 blocks) and ggml's CPU vec_dot of each row with
# them (iq_dots.c, linked against the libggml-base / libggml-cpu of a
# llama.cpp build). tests/kernels/q5_test.ts checks the scalar rule of
# kernels/quant_ref.ts and the WebAssembly kernels against these.
#
# The width is 576 (SmolLM-135M's), whose rows llama-quantize stores as Q5_0
# in a Q4_K_M file; one activation block is zero and one row holds large
# outliers, so blocks with 5th bits all set and all clear both occur.
#
# Run (llama.cpp checked out at LLAMA, ggml-base and ggml-cpu built in BUILD):
#   cmake -S LLAMA -B BUILD -DBUILD_SHARED_LIBS=ON && cmake --build BUILD --target ggml-cpu -j2
#   /work/refpy/bin/python tests/vectors/gen/q5_dots.py LLAMA BUILD
import base64, json, os, subprocess, sys, tempfile
import numpy as np

LLAMA, BUILD = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.dirname(HERE)
ROWS, COLS = 6, 576
TYPES = ["Q5_0"]

rng = np.random.default_rng(523)
w = rng.standard_normal((ROWS, COLS)).astype(np.float32) * 0.05
w[1] = rng.uniform(0, 1, COLS)  # all positive: high bits mostly set
w[2, rng.integers(0, COLS, 8)] = 3.0  # outliers
w[3] = rng.integers(-15, 16, COLS) / 15.0  # exact levels
w[4, 32:64] = 0  # a zero block
w = w.astype(np.float32)
x = (rng.standard_normal(COLS) * 2).astype(np.float32)
x[96:128] = 0  # a zero activation block
x[200] = 40.0  # an outlier
x = x.astype(np.float32)

with tempfile.TemporaryDirectory() as tmp:
    exe = os.path.join(tmp, "iq_dots")
    subprocess.run(["cc", "-O2", os.path.join(HERE, "iq_dots.c"), "-I", os.path.join(LLAMA, "ggml/include"),
                    "-L", os.path.join(BUILD, "bin"), "-lggml-base", "-lggml-cpu", "-o", exe], check=True)
    w.tofile(os.path.join(tmp, "src.f32"))
    np.ones(COLS, np.float32).tofile(os.path.join(tmp, "imatrix.f32"))
    x.tofile(os.path.join(tmp, "x.f32"))
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "bin"))
    acts = dict(l.split() for l in subprocess.run([exe, tmp, str(COLS)] + [t.lower() for t in TYPES], check=True,
                                                  env=env, capture_output=True, text=True).stdout.splitlines())
    commit = subprocess.run(["git", "-C", LLAMA, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    info = {"generator": "tests/vectors/gen/q5_dots.py", "llama_cpp_commit": commit, "rows": ROWS,
            "cols": COLS, "x": [float(v) for v in x], "types": {}}

    def read(name, dtype=np.uint8):
        return np.fromfile(os.path.join(tmp, name), dtype=dtype)

    for t in TYPES:
        info["types"][t] = {
            "activations": acts[t.lower()].upper(),
            "w": base64.b64encode(read(t.lower() + ".w").tobytes()).decode(),
            "xq": base64.b64encode(read(t.lower() + ".xq").tobytes()).decode(),
            "dots": [float(v) for v in read(t.lower() + ".dot", np.float32)],
        }

with open(os.path.join(OUT, "q5_dots.json"), "w") as f:
    json.dump(info, f, indent=1)
    f.write("\n")
