// Greedy decoding with llama.cpp's library, printing token ids: the check
// that `deno task bench:compare` runs our decode and llama.cpp's on the same
// model. Usage: llama_cpp_greedy MODEL.gguf N ID0 ID1 ... (prompt ids, BOS
// included) — prints N generated ids on one line. Build (see DEVELOPERS.md):
//   g++ -O2 -std=c++17 bench/llama_cpp_greedy.cpp -I$LLAMA/include \
//     -I$LLAMA/ggml/include -L$LLAMA/build/bin -lllama -lggml -lggml-base \
//     -Wl,-rpath,$LLAMA/build/bin -o $LLAMA/build/bin/llama-cpp-greedy
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

static llama_token argmax(const float * logits, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (logits[i] > logits[best]) best = i;
    }
    return best;
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.gguf N ID0 [ID1 ...]\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) return 1;
    const int steps = atoi(argv[2]);
    std::vector<llama_token> prompt;
    for (int i = 3; i < argc; i++) prompt.push_back(atoi(argv[i]));
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = prompt.size() + steps + 8;
    cp.n_batch = cp.n_ctx;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    if (llama_decode(ctx, llama_batch_get_one(prompt.data(), prompt.size()))) return 1;
    llama_token t = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
    for (int i = 0; i < steps; i++) {
        printf(i ? " %d" : "%d", t);
        if (i + 1 == steps) break;
        if (llama_decode(ctx, llama_batch_get_one(&t, 1))) return 1;
        t = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
    }
    printf("\n");
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
