/* elementwise.h: what the CPU kernels of the elementwise families (unary,
 * activation, binary, cast) share: the narrow float types (float16,
 * bfloat16, float8...) converted to float a block at a time, so that one
 * float kernel serves them all and rounds once per element; a flat map over
 * [0, n) split across threads; and numpy broadcasting of up to 3 inputs into
 * an output, run as row functions over collapsed dims. Each element is
 * computed the same way whatever the thread count and wherever a chunk
 * starts. Static inline: include it in the kernel files only. */
#ifndef BD_CPU_ELEMENTWISE_H
#define BD_CPU_ELEMENTWISE_H

#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"
#include "util/dtype.h"

/* Element functions built for x86-64-v3 (AVX2 and FMA) as well as for the
 * baseline, picked at load time by the CPU (GCC's function multiversioning).
 * Within one build every element of a loop is computed by the same
 * statements, so results do not depend on the thread count; the two clones
 * may differ in the last bit where the v3 one fuses a multiply-add. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__) /* their ifunc resolvers run before the sanitizer runtime is up */
#define BD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define BD_CLONES
#endif

/* Elements per thread below which splitting does not pay for a thread. */
#define BD_EW_MIN_CHUNK (1 << 15)
/* Elements of a narrow type converted to float at a time. */
#define BD_EW_BLOCK 512

/* 1 for the dtypes the kernels compute in float (float16 and the narrow floats). */
static inline int bd_ew_narrow(int dt) { return dt == BRAID_DTYPE_FLOAT16 || bd_dtype_is_narrow_float(dt); }

/* n elements of narrow dtype dt at src (from element 0) to float. */
static inline void bd_ew_to_f32(int dt, const void *src, float *dst, int64_t n)
{
    if (dt == BRAID_DTYPE_FLOAT16) {
        const uint16_t *h = src;
        for (int64_t i = 0; i < n; i++) dst[i] = bd_half_to_float_hd(h[i]);
    } else if (dt == BRAID_DTYPE_BFLOAT16) {
        const uint16_t *h = src;
        for (int64_t i = 0; i < n; i++) dst[i] = bd_bf16_to_float(h[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = bd_narrow_to_float(dt, src, i);
    }
}

/* n floats to narrow dtype dt, each rounded once (to nearest even). */
static inline void bd_ew_from_f32(int dt, const float *src, void *dst, int64_t n)
{
    if (dt == BRAID_DTYPE_FLOAT16) {
        uint16_t *h = dst;
        for (int64_t i = 0; i < n; i++) h[i] = bd_float_to_half(src[i]);
    } else if (dt == BRAID_DTYPE_BFLOAT16) {
        uint16_t *h = dst;
        for (int64_t i = 0; i < n; i++) h[i] = bd_float_to_bf16(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) bd_float_to_narrow(dt, dst, i, src[i]);
    }
}

/* ---- flat maps: o[i] = f(x[i]) ------------------------------------------------ */

/* n elements from x to o; ctx is the op's constants. */
typedef void (*bd_ew_fn)(const void *x, void *o, int64_t n, const void *ctx);

typedef struct bd_ew_map {
    bd_ew_fn fn;          /* over native elements, or float for narrow types */
    const void *ctx;
    int in_dt, out_dt;    /* the tensors' dtypes */
    const char *x;
    char *o;
} bd_ew_map;

static inline void bd_ew_map_range(void *vm, int64_t begin, int64_t end)
{
    const bd_ew_map *m = vm;
    size_t is = bd_dtype_size(m->in_dt), os = bd_dtype_size(m->out_dt);
    int nin = bd_ew_narrow(m->in_dt), nout = bd_ew_narrow(m->out_dt);
    if (!nin && !nout) {
        m->fn(m->x + (size_t)begin * is, m->o + (size_t)begin * os, end - begin, m->ctx);
        return;
    }
    float xb[BD_EW_BLOCK], ob[BD_EW_BLOCK];
    for (int64_t off = begin; off < end; off += BD_EW_BLOCK) {
        int64_t c = BD_MIN(end - off, (int64_t)BD_EW_BLOCK);
        const void *x = m->x + (size_t)off * is;
        void *o = m->o + (size_t)off * os;
        if (nin) bd_ew_to_f32(m->in_dt, x, xb, c);
        m->fn(nin ? (const void *)xb : x, nout ? (void *)ob : o, c, m->ctx);
        if (nout) bd_ew_from_f32(m->out_dt, ob, o, c);
    }
}

/* Runs m over n elements on up to `threads` threads. */
static inline void bd_ew_map_run(bd_ew_map *m, int64_t n, int threads)
{
    if (n > 0) bd_parallel_for(threads, n, BD_EW_MIN_CHUNK, bd_ew_map_range, m);
}

/* ---- broadcasting: out[...] = f(in0[...], in1[...], in2[...]) -------------------- */

/* A row: o[0..n) = f(p[0][i * s[0]], p[1][i * s[1]], ...) with each s in {0, 1}. */
typedef void (*bd_row_fn)(const void *const *p, const int64_t *s, void *o, int64_t n, const void *ctx);

#define BD_EW_MAX_IN 3

/* The broadcast seen as collapsed dims. */
typedef struct bd_bcast {
    bd_row_fn fn;
    const void *ctx;
    int n_in, r;
    int64_t dims[BD_MAX_RANK], st[BD_EW_MAX_IN][BD_MAX_RANK]; /* st: element strides per input */
    int64_t inner[BD_EW_MAX_IN];                              /* strides of the innermost dim: 0 or 1 */
    size_t esz[BD_EW_MAX_IN], osz;
    const char *in[BD_EW_MAX_IN];
    char *out;
} bd_bcast;

/* Output elements [begin, end): a partial first row, whole rows, a partial last row. */
static inline void bd_bcast_range(void *vb, int64_t begin, int64_t end)
{
    const bd_bcast *b = vb;
    int64_t n = b->dims[b->r - 1], row = begin / n, col = begin % n, idx[BD_MAX_RANK] = {0};
    const char *p[BD_EW_MAX_IN];
    for (int i = 0; i < b->n_in; i++) p[i] = b->in[i] + (size_t)(col * b->inner[i]) * b->esz[i];
    for (int d = b->r - 2; d >= 0; d--) { /* row -> the outer dims' indices */
        idx[d] = row % b->dims[d];
        row /= b->dims[d];
        for (int i = 0; i < b->n_in; i++) p[i] += (ptrdiff_t)(idx[d] * b->st[i][d]) * (ptrdiff_t)b->esz[i];
    }
    char *o = b->out + (size_t)begin * b->osz;
    for (int64_t pos = begin; pos < end;) {
        int64_t len = BD_MIN(n - col, end - pos);
        const void *pv[BD_EW_MAX_IN];
        for (int i = 0; i < b->n_in; i++) pv[i] = p[i];
        b->fn(pv, b->inner, o, len, b->ctx);
        o += (size_t)len * b->osz;
        pos += len;
        for (int i = 0; i < b->n_in; i++) p[i] -= (ptrdiff_t)(col * b->inner[i]) * (ptrdiff_t)b->esz[i];
        col = 0;
        for (int d = b->r - 2; d >= 0; d--) { /* odometer over the outer dims */
            for (int i = 0; i < b->n_in; i++) p[i] += (ptrdiff_t)(b->st[i][d] * (int64_t)b->esz[i]);
            if (++idx[d] < b->dims[d]) break;
            for (int i = 0; i < b->n_in; i++) p[i] -= (ptrdiff_t)(b->st[i][d] * b->dims[d] * (int64_t)b->esz[i]);
            idx[d] = 0;
        }
    }
}

/* Runs fn over every element of out, n_in inputs broadcast into it (numpy
 * rules, right-aligned), on up to `threads` threads. */
static inline void bd_bcast_run(bd_row_fn fn, const void *ctx, int n_in, const bd_tensor *const *in,
                                bd_tensor *out, int threads)
{
    int64_t total = bd_numel(out);
    if (total <= 0) return;
    bd_bcast b = {.fn = fn, .ctx = ctx, .n_in = n_in, .osz = bd_dtype_size(out->dtype), .out = out->data};
    int64_t full[BD_EW_MAX_IN][BD_MAX_RANK];
    for (int i = 0; i < n_in; i++) {
        bd_broadcast_strides(in[i], out, full[i]);
        b.esz[i] = bd_dtype_size(in[i]->dtype);
        b.in[i] = in[i]->data;
    }
    /* Collapse: drop dims of size 1, merge a dim into its outer neighbour when
     * every input walks both as one (contiguous, or broadcast in both). */
    for (int d = 0; d < out->rank; d++) {
        if (out->dims[d] == 1) continue;
        int merge = b.r > 0;
        for (int i = 0; merge && i < n_in; i++)
            if (b.st[i][b.r - 1] != full[i][d] * out->dims[d]) merge = 0;
        if (merge) {
            b.dims[b.r - 1] *= out->dims[d];
            for (int i = 0; i < n_in; i++) b.st[i][b.r - 1] = full[i][d];
        } else {
            b.dims[b.r] = out->dims[d];
            for (int i = 0; i < n_in; i++) b.st[i][b.r] = full[i][d];
            b.r++;
        }
    }
    if (b.r == 0) { /* every dim is 1: one element */
        b.dims[0] = 1;
        for (int i = 0; i < n_in; i++) b.st[i][0] = 1;
        b.r = 1;
    }
    for (int i = 0; i < n_in; i++) b.inner[i] = b.st[i][b.r - 1];
    bd_parallel_for(threads, total, BD_EW_MIN_CHUNK, bd_bcast_range, &b);
}

/* A row over narrow inputs or output: the row converted to float a block at a
 * time, the float row function run on it, the result rounded once. */
typedef struct bd_row_narrow {
    bd_row_fn fn;      /* the float (or native) row function */
    const void *ctx;
    int n_in;
    int dt[BD_EW_MAX_IN], out_dt; /* storage dtypes */
} bd_row_narrow;

static inline void bd_row_narrow_fn(const void *const *p, const int64_t *s, void *o, int64_t n, const void *vc)
{
    const bd_row_narrow *c = vc;
    float buf[BD_EW_MAX_IN][BD_EW_BLOCK], ob[BD_EW_BLOCK];
    int nout = bd_ew_narrow(c->out_dt);
    size_t os = bd_dtype_size(c->out_dt);
    for (int64_t off = 0; off < n; off += BD_EW_BLOCK) {
        int64_t len = BD_MIN(n - off, (int64_t)BD_EW_BLOCK);
        const void *q[BD_EW_MAX_IN];
        for (int i = 0; i < c->n_in; i++) {
            size_t es = bd_dtype_size(c->dt[i]);
            const char *src = (const char *)p[i] + (size_t)(off * s[i]) * es;
            if (bd_ew_narrow(c->dt[i])) {
                bd_ew_to_f32(c->dt[i], src, buf[i], s[i] ? len : 1);
                q[i] = buf[i];
            } else {
                q[i] = src;
            }
        }
        void *dst = (char *)o + (size_t)off * os;
        c->fn(q, s, nout ? (void *)ob : dst, len, c->ctx);
        if (nout) bd_ew_from_f32(c->out_dt, ob, dst, len);
    }
}

#endif /* BD_CPU_ELEMENTWISE_H */
