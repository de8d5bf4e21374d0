/* test_pool_nhwc.c: the NHWC pools (poolnhwc.c) against pool.c's NCHW
 * kernels on the same data transposed: MaxPool and AveragePool over many
 * window shapes (kernel, stride, pads, asymmetric pads, dilations,
 * ceil_mode, auto_pad, count_include_pad), channel counts that fill the
 * vector lanes and leave tails (1, 3, 16, 17, 64, 100), batch 2, a 1x1
 * plane, the global pools, NaN inputs; 1 and 3 threads; at each vector
 * level (AVX-512, AVX2, plain loops). Every case must
 * give pool.c's bits exactly: the NHWC kernels fold the taps in the same
 * order. MaxPool with Indices is refused. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "ops/pool.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static int g_layout;
static void set_layout(bd_node *n)
{
    if (n->params) ((bd_pool_params *)n->params)->layout = g_layout;
}

/* optest.h's run() with the pool's layout set after parsing, on `threads`. */
static braid_status run_layout(bd_node *n, int layout, bd_tensor *in, bd_tensor *out, int threads, bd_err *e)
{
    g_layout = layout;
    g_threads = threads;
    g_after_parse = set_layout;
    return run(n, in, out, e);
}

/* x (N, C, H, W) as (N, H, W, C), malloc'ed. */
static float *to_nhwc(const float *x, int64_t N, int64_t C, int64_t H, int64_t W)
{
    float *y = malloc(sizeof *y * (size_t)(N * C * H * W + 1));
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) y[((n * H + h) * W + w) * C + c] = x[((n * C + c) * H + h) * W + w];
    return y;
}

static int same_bits(const float *a, const float *b, int64_t n)
{
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

typedef struct pool_case {
    const char *name;
    int op;
    int64_t k[2], s[2], d[2], pads[4];
    int ceil, cip;
    const char *auto_pad;
} pool_case;

/* One case: NCHW (threads 1) against NHWC (threads 1 and 3), bitwise. */
static void check_case(const pool_case *pc, int64_t N, int64_t C, int64_t H, int64_t W, int nan)
{
    unsigned seed = (unsigned)(N * 7 + C * 131 + H * 17 + W * 3 + pc->op);
    int64_t nx = N * C * H * W;
    float *x = randn(nx, &seed);
    for (int64_t i = 0; nan && i < nx; i += 5) x[i] = NAN; /* NaN in first and later taps */
    float *xh = to_nhwc(x, N, C, H, W);
    tnode t;
    int global = pc->op == BD_OP_GlobalAveragePool || pc->op == BD_OP_GlobalMaxPool;
    tnode_init(&t, pc->op, 19, 1, 1);
    if (!global) {
        attr_ints(&t, "kernel_shape", 2, pc->k);
        attr_ints(&t, "strides", 2, pc->s);
        attr_ints(&t, "dilations", 2, pc->d);
        if (pc->auto_pad) attr_str(&t, "auto_pad", pc->auto_pad);
        else attr_ints(&t, "pads", 4, pc->pads);
        attr_int(&t, "ceil_mode", pc->ceil);
        if (pc->op == BD_OP_AveragePool) attr_int(&t, "count_include_pad", pc->cip);
    }
    bd_err e = {0};
    bd_tensor in_c[1] = {tensor(F32, 4, (int64_t[]){N, C, H, W}, x)};
    bd_tensor in_h[1] = {tensor(F32, 4, (int64_t[]){N, H, W, C}, xh)};
    bd_tensor oc[1] = {0}, o1[1] = {0}, o3[1] = {0};
    int ok = run_layout(&t.n, BD_LAYOUT_NCHW, in_c, oc, 1, &e) == BRAID_OK;
    bd_free(t.n.params);
    t.n.params = NULL;
    ok = ok && run_layout(&t.n, BD_LAYOUT_NHWC, in_h, o1, 1, &e) == BRAID_OK;
    bd_free(t.n.params);
    t.n.params = NULL;
    ok = ok && run_layout(&t.n, BD_LAYOUT_NHWC, in_h, o3, 3, &e) == BRAID_OK;
    bd_free(t.n.params);
    t.n.params = NULL;
    if (!ok) fprintf(stderr, "%s: %s\n", pc->name, e.msg);
    CHECK(ok);
    if (ok) {
        int64_t OH = oc[0].dims[2], OW = oc[0].dims[3], no = N * C * OH * OW;
        CHECK(o1[0].rank == 4 && o1[0].dims[0] == N && o1[0].dims[1] == OH && o1[0].dims[2] == OW &&
              o1[0].dims[3] == C);
        float *ref = to_nhwc(oc[0].data, N, C, OH, OW);
        int same = same_bits(o1[0].data, ref, no);
        if (!same) {
            const float *y = o1[0].data;
            for (int64_t i = 0; i < no; i++)
                if (memcmp(&y[i], &ref[i], sizeof *y)) {
                    fprintf(stderr, "%s N%lld C%lld %lldx%lld nan %d: at %lld %.9g vs %.9g\n", pc->name, (long long)N,
                            (long long)C, (long long)H, (long long)W, nan, (long long)i, y[i], ref[i]);
                    break;
                }
        }
        CHECK(same);
        CHECK(same_bits(o1[0].data, o3[0].data, no));
        free(ref);
    }
    free(oc[0].data);
    free(o1[0].data);
    free(o3[0].data);
    free(x);
    free(xh);
}

static const pool_case cases[] = {
    {"max 2x2 s2", BD_OP_MaxPool, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, 0, 0, NULL},
    {"max 3x3 s1 p1", BD_OP_MaxPool, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 0, 0, NULL},
    {"max 3x3 s2 p1", BD_OP_MaxPool, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 0, NULL},
    {"max 5x5 p2", BD_OP_MaxPool, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 0, 0, NULL},
    {"max 3x3 s2 ceil", BD_OP_MaxPool, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, 1, 0, NULL},
    {"max 3x2 dil 2x3", BD_OP_MaxPool, {3, 2}, {1, 2}, {2, 3}, {2, 1, 1, 3}, 0, 0, NULL},
    {"max asym pads", BD_OP_MaxPool, {2, 3}, {2, 1}, {1, 1}, {0, 2, 1, 0}, 1, 0, NULL},
    {"max same_upper", BD_OP_MaxPool, {3, 3}, {2, 2}, {1, 1}, {0}, 0, 0, "SAME_UPPER"},
    {"max same_lower", BD_OP_MaxPool, {4, 4}, {3, 3}, {1, 1}, {0}, 0, 0, "SAME_LOWER"},
    {"max pad past input", BD_OP_MaxPool, {2, 2}, {3, 3}, {1, 1}, {3, 3, 3, 3}, 0, 0, NULL},
    {"avg 2x2 s2", BD_OP_AveragePool, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, 0, 0, NULL},
    {"avg 3x3 s1 p1", BD_OP_AveragePool, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 0, 0, NULL},
    {"avg 3x3 s1 p1 cip", BD_OP_AveragePool, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 0, 1, NULL},
    {"avg 3x3 s2 p1 ceil cip", BD_OP_AveragePool, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 1, 1, NULL},
    {"avg 5x5 p2", BD_OP_AveragePool, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 0, 0, NULL},
    {"avg dil asym", BD_OP_AveragePool, {3, 2}, {2, 1}, {2, 2}, {1, 0, 2, 1}, 1, 1, NULL},
    {"avg same_upper", BD_OP_AveragePool, {3, 3}, {2, 2}, {1, 1}, {0}, 0, 0, "SAME_UPPER"},
    {"avg same_lower cip", BD_OP_AveragePool, {2, 2}, {1, 1}, {1, 1}, {0}, 0, 1, "SAME_LOWER"},
    {"global avg", BD_OP_GlobalAveragePool, {0}, {0}, {0}, {0}, 0, 0, NULL},
    {"global max", BD_OP_GlobalMaxPool, {0}, {0}, {0}, {0}, 0, 0, NULL},
};

static void test_cases(void)
{
    static const int64_t chans[] = {1, 3, 16, 17, 64, 100};
    static const int64_t planes[][2] = {{13, 11}, {16, 16}, {1, 1}, {7, 30}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (size_t ci = 0; ci < sizeof chans / sizeof *chans; ci++)
            for (size_t pi = 0; pi < sizeof planes / sizeof *planes; pi++) {
                int64_t N = (ci + pi) % 2 ? 2 : 1;
                check_case(&cases[c], N, chans[ci], planes[pi][0], planes[pi][1], 0);
            }
    /* NaN: kept where pool.c keeps it (a window's first tap), skipped elsewhere */
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        check_case(&cases[c], 2, 17, 9, 10, 1);
        check_case(&cases[c], 1, 64, 12, 12, 1);
    }
    /* a larger plane, with the per-row work split over threads */
    check_case(&cases[0], 2, 64, 40, 38, 0);
    check_case(&cases[13], 2, 100, 33, 35, 0);
    check_case(&cases[18], 3, 300, 20, 19, 0);
}

/* MaxPool with Indices never runs NHWC: a status, not a wrong answer. */
static void test_indices_refused(void)
{
    tnode t;
    tnode_init(&t, BD_OP_MaxPool, 12, 1, 2);
    attr_ints(&t, "kernel_shape", 2, (int64_t[]){2, 2});
    float x[2 * 4 * 4 * 3] = {0};
    bd_tensor in[1] = {tensor(F32, 4, (int64_t[]){2, 4, 4, 3}, x)};
    bd_tensor out[2] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run_layout(&t.n, BD_LAYOUT_NHWC, in, out, 1, &e), BRAID_ERR_INTERNAL);
    done(&t.n, out);
}

int main(void)
{
    /* each vector level: AVX-512, AVX2 and the plain loops (bd_cpu_vec_cap) */
    for (int lvl = 2; lvl >= 0; lvl--) {
        bd_cpu_vec_cap(lvl);
        test_cases();
    }
    bd_cpu_vec_cap(2);
    test_indices_refused();
    return check_done();
}
