# Writes tests/vectors/llama_iq4xs.gguf and llama_iq4xs.json: a synthetic
# Llama of real widths (dim 256, 4 heads / 2 KV heads of 64, FFN 512, one
# layer, stories260K's 512-token vocabulary) whose 2-D weights
# ggml quantized to IQ4_XS (ggml_quantize_chunk through iq_quants.c, linked
# against a llama.cpp build's libggml-base), and llama.cpp's greedy ids for a
# prompt, through node-llama-cpp (llama_iq4xs.mjs).
#
# Run (LLAMA, BUILD as for iq_quants.py; node-llama-cpp on NODE_PATH):
#   PYTHONPATH=LLAMA/gguf-py NODE_PATH=/path/node_modules \
#     /work/refpy/bin/python tests/vectors/gen/llama_iq4xs.py LLAMA BUILD
import json, os, subprocess, sys, tempfile
import numpy as np
import gguf

LLAMA, BUILD = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(OUT))
STORIES = os.path.join(ROOT, "..", "shared", "fixtures", "gguf", "stories260K.gguf")
DIM, FFN, HEADS, KV, LAYERS, VOCAB = 256, 512, 4, 2, 1, 512
HD = DIM // HEADS

rng = np.random.default_rng(2424)
def mat(rows, cols, std):
    return (rng.standard_normal((rows, cols)) * std).astype(np.float32)

weights = {"token_embd.weight": mat(VOCAB, DIM, 1.0)}
for l in range(LAYERS):
    p = f"blk.{l}."
    weights[p + "attn_q.weight"] = mat(DIM, DIM, 0.15)
    weights[p + "attn_k.weight"] = mat(KV * HD, DIM, 0.15)
    weights[p + "attn_v.weight"] = mat(KV * HD, DIM, 0.15)
    weights[p + "attn_output.weight"] = mat(DIM, DIM, 0.1)
    weights[p + "ffn_gate.weight"] = mat(FFN, DIM, 0.1)
    weights[p + "ffn_up.weight"] = mat(FFN, DIM, 0.1)
    weights[p + "ffn_down.weight"] = mat(DIM, FFN, 0.1)
    weights[p + "attn_norm.weight"] = (1 + 0.1 * rng.standard_normal(DIM)).astype(np.float32)
    weights[p + "ffn_norm.weight"] = (1 + 0.1 * rng.standard_normal(DIM)).astype(np.float32)
weights["output_norm.weight"] = (1 + 0.1 * rng.standard_normal(DIM)).astype(np.float32)
weights["output.weight"] = mat(VOCAB, DIM, 1.0)

src = gguf.GGUFReader(STORIES)
def field(name):
    return src.fields[name]

with tempfile.TemporaryDirectory() as tmp:
    exe = os.path.join(tmp, "iq_quants")
    subprocess.run(["cc", "-O2", os.path.join(HERE, "iq_quants.c"), "-I", os.path.join(LLAMA, "ggml/include"),
                    "-L", os.path.join(BUILD, "bin"), "-lggml-base", "-o", exe], check=True)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "bin"))

    def iq4xs(w):
        w.tofile(os.path.join(tmp, "src.f32"))
        np.ones(w.shape[1], np.float32).tofile(os.path.join(tmp, "imatrix.f32"))
        subprocess.run([exe, tmp, str(w.shape[1]), "iq4_xs"], check=True, env=env)
        return np.fromfile(os.path.join(tmp, "iq4_xs.q"), dtype=np.uint8).reshape(w.shape[0], -1)

    path = os.path.join(OUT, "llama_iq4xs.gguf")
    wr = gguf.GGUFWriter(path, "llama")
    wr.add_name("synthetic-llama-iq4xs")
    wr.add_context_length(256)
    wr.add_embedding_length(DIM)
    wr.add_block_count(LAYERS)
    wr.add_feed_forward_length(FFN)
    wr.add_head_count(HEADS)
    wr.add_head_count_kv(KV)
    wr.add_layer_norm_rms_eps(1e-5)
    wr.add_rope_dimension_count(HD)
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_IQ4_XS)
    wr.add_quantization_version(gguf.GGML_QUANT_VERSION)
    wr.add_tokenizer_model("llama")
    tokens = [bytes(field("tokenizer.ggml.tokens").parts[i]).decode("utf-8") for i in field("tokenizer.ggml.tokens").data]
    wr.add_token_list(tokens)
    wr.add_token_scores([float(field("tokenizer.ggml.scores").parts[i][0]) for i in field("tokenizer.ggml.scores").data])
    wr.add_token_types([int(field("tokenizer.ggml.token_type").parts[i][0]) for i in field("tokenizer.ggml.token_type").data])
    wr.add_bos_token_id(1)
    wr.add_eos_token_id(2)
    wr.add_unk_token_id(0)
    for name, w in weights.items():
        if w.ndim == 2:
            wr.add_tensor(name, iq4xs(w), raw_dtype=gguf.GGMLQuantizationType.IQ4_XS)
        else:
            wr.add_tensor(name, w)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()

res = subprocess.run(["node", os.path.join(HERE, "llama_iq4xs.mjs"), path], check=True, capture_output=True, text=True)
info = json.loads(res.stdout)
commit = subprocess.run(["git", "-C", LLAMA, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
info["quantized_by"] = f"ggml_quantize_chunk (IQ4_XS) at llama.cpp {commit}"
with open(os.path.join(OUT, "llama_iq4xs.json"), "w") as f:
    json.dump(info, f, indent=1)
    f.write("\n")
print(info)
