"""Checks our conversions with transformers itself: every checkpoint of
tests/vectors/families/ goes HF folder -> our GGUF -> our HF folder
(io convertHfToGguf, convertGgufToHf, run through deno), transformers loads
that folder and its float32 logits must equal the committed ones.

    /work/refpy/bin/python tests/vectors/gen/model_families_back.py

Writes nothing to the repository; prints each case's relative difference and
exits 1 when one is above 1e-6.
"""

import base64
import json
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers

SCRIPT = """
import { convertGgufToHf, convertHfToGguf } from "./io/transformer.ts";
const [dir, ...names] = Deno.args;
for (const n of names) {
  await convertHfToGguf(`tests/vectors/families/${n}`, `${dir}/${n}.gguf`);
  await convertGgufToHf(`${dir}/${n}.gguf`, `${dir}/${n}`);
}
"""


def main():
    v = json.load(open("tests/vectors/model_families.json"))
    names = [c["name"] for c in v["cases"]]
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        with open("_model_families_back.ts", "w") as f:
            f.write(SCRIPT)
        try:
            subprocess.run(
                ["deno", "run", "-A", "_model_families_back.ts", tmp, *names],
                check=True,
            )
        finally:
            import os
            os.remove("_model_families_back.ts")
        for c in v["cases"]:
            m = transformers.AutoModelForCausalLM.from_pretrained(
                f"{tmp}/{c['name']}", dtype=torch.float32).eval()
            with torch.no_grad():
                got = m(torch.tensor([v["prompt"]])).logits[0].numpy()
            ref = np.frombuffer(base64.b64decode(c["logits"]), dtype="<f4")
            r = float(np.abs(got - ref.reshape(got.shape)).max() / np.abs(ref).max())
            worst = max(worst, r)
            print(c["name"], type(m).__name__, r)
    sys.exit(1 if worst > 1e-6 else 0)


if __name__ == "__main__":
    main()
