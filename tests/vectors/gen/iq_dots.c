// ggml's CPU dot products of quantized weight rows with quantized
// activations, for tests/vectors/gen/iq_quants.py. Reads DIR/src.f32
// (rows x cols), DIR/imatrix.f32, DIR/x.f32 (cols); for each TYPE writes
// DIR/<type>.w (ggml_quantize_chunk of src), DIR/<type>.xq (x quantized by the
// CPU backend's from_float of the type's vec_dot_type) and DIR/<type>.dot
// (vec_dot of each row with xq, F32).
// Build: cc -O2 iq_dots.c -I LLAMA/ggml/include -L BUILD/bin -lggml-base -lggml-cpu
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-cpu.h"

static void *slurp(const char *dir, const char *name, size_t *n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
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
    ggml_cpu_init();
    const char *dir = argv[1];
    const int64_t cols = atoll(argv[2]);
    size_t nw, ni, nx;
    float *w = slurp(dir, "src.f32", &nw);
    float *im = slurp(dir, "imatrix.f32", &ni);
    float *x = slurp(dir, "x.f32", &nx);
    const int64_t rows = nw / 4 / cols;
    void *q = malloc(nw + 4096), *xq = malloc(nx * 2 + 4096);
    float *dots = malloc(rows * 4);
    for (int a = 3; a < argc; a++) {
        enum ggml_type t = GGML_TYPE_COUNT;
        for (int k = 0; k < GGML_TYPE_COUNT; k++) {
            const char *tn = ggml_type_name((enum ggml_type)k);
            if (tn && strcasecmp(tn, argv[a]) == 0) t = (enum ggml_type)k;
        }
        if (t == GGML_TYPE_COUNT) { fprintf(stderr, "unknown type %s\n", argv[a]); return 1; }
        const struct ggml_type_traits_cpu *tc = ggml_get_type_traits_cpu(t);
        const float *iw = ggml_quantize_requires_imatrix(t) ? im : NULL;
        const size_t sz = ggml_quantize_chunk(t, w, q, 0, rows, cols, iw);
        const size_t rs = sz / rows;
        const enum ggml_type vt = tc->vec_dot_type;
        ggml_get_type_traits_cpu(vt)->from_float(x, xq, cols);
        const size_t xs = ggml_row_size(vt, cols);
        for (int64_t r = 0; r < rows; r++) {
            tc->vec_dot(cols, &dots[r], 0, (const char *)q + r * rs, 0, xq, 0, 1);
        }
        spit(dir, argv[a], "w", q, sz);
        spit(dir, argv[a], "xq", xq, xs);
        spit(dir, argv[a], "dot", dots, rows * 4);
        printf("%s %s\n", argv[a], ggml_type_name(vt));
    }
    return 0;
}
