// Quantizes and dequantizes with ggml itself, for tests/vectors/gen/iq_quants.py.
// Reads  DIR/src.f32 (rows × cols F32) and DIR/imatrix.f32 (cols F32);
// writes DIR/<type>.q (ggml_quantize_chunk, imatrix passed where ggml needs one),
//        DIR/<type>.deq (ggml's to_float of those bytes),
//        DIR/IQ4_NL.imat.q, IQ4_XS.imat.q, MXFP4.imat.q, IQ3_S.imat.q,
//        IQ3_XXS.imat.q, IQ2_S.imat.q, IQ1_M.imat.q (with the imatrix),
//        DIR/<type>.ref.q (the type's from_float_ref, the _ref row quantizer).
// Build: cc -O2 iq_quants.c -I LLAMA/ggml/include -L BUILD/bin -lggml-base
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"

static void *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END); *n = ftell(f); fseek(f, 0, SEEK_SET);
    void *p = malloc(*n);
    if (fread(p, 1, *n, f) != *n) { perror(path); exit(1); }
    fclose(f);
    return p;
}

static void spit(const char *dir, const char *name, const char *ext, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) { perror(path); exit(1); }
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s DIR COLS TYPE...\n", argv[0]); return 2; }
    const char *dir = argv[1];
    const int64_t cols = atoll(argv[2]);
    char path[1024];
    size_t nx, ni;
    snprintf(path, sizeof path, "%s/src.f32", dir);
    float *x = slurp(path, &nx);
    snprintf(path, sizeof path, "%s/imatrix.f32", dir);
    float *im = slurp(path, &ni);
    const int64_t n = nx / 4, rows = n / cols;
    void *q = malloc(n * 4 + 4096);
    float *y = malloc(n * 4);
    for (int a = 3; a < argc; a++) {
        const char *name = argv[a];
        enum ggml_type t = GGML_TYPE_COUNT;
        for (int k = 0; k < GGML_TYPE_COUNT; k++) {
            const char *tn = ggml_type_name((enum ggml_type)k);
            if (tn && strcasecmp(tn, name) == 0) t = (enum ggml_type)k;
        }
        if (t == GGML_TYPE_COUNT) { fprintf(stderr, "unknown type %s\n", name); return 1; }
        const struct ggml_type_traits *tr = ggml_get_type_traits(t);
        const float *w = ggml_quantize_requires_imatrix(t) ? im : NULL;
        size_t sz = ggml_quantize_chunk(t, x, q, 0, rows, cols, w);
        spit(dir, name, "q", q, sz);
        tr->to_float(q, y, n);
        spit(dir, name, "deq", y, n * 4);
        if (!strcmp(name, "iq4_nl") || !strcmp(name, "iq4_xs") || !strcmp(name, "mxfp4") ||
            !strcmp(name, "iq3_s") || !strcmp(name, "iq3_xxs") || !strcmp(name, "iq2_s") ||
            !strcmp(name, "iq1_m")) {
            sz = ggml_quantize_chunk(t, x, q, 0, rows, cols, im);
            spit(dir, name, "imat.q", q, sz);
        }
        if (tr->from_float_ref) {
            memset(q, 0, sz);
            tr->from_float_ref(x, q, n);
            spit(dir, name, "ref.q", q, sz);
        }
    }
    return 0;
}
