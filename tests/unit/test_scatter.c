/* test_scatter.c: the scatter family (Scatter, ScatterElements, ScatterND,
 * TensorScatter): outputs against sequential reference loops written from the
 * spec (updates applied in row-major order, duplicates included) for every
 * reduction, on int32, float, float16 and bool, at 1 and 4 threads; negative
 * and out-of-range indices; empty updates; shape and dtype errors. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>

#include "ops/scatter.h"

static const char *const RED[] = {"none", "add", "mul", "max", "min"};

static int32_t ref_i32(int red, int32_t a, int32_t b)
{
    switch (red) {
    case 1: return (int32_t)((uint32_t)a + (uint32_t)b);
    case 2: return (int32_t)((uint32_t)a * (uint32_t)b);
    case 3: return a > b ? a : b;
    case 4: return a < b ? a : b;
    default: return b;
    }
}

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* Runs n at 4 threads, then at 1; 1 when both succeed with the same bytes.
 * The 1-thread output stays in out. */
static int run_both(bd_node *n, bd_tensor *in, bd_tensor *out, bd_err *e)
{
    bd_tensor o4[1] = {0};
    g_threads = 4;
    braid_status s4 = run(n, in, o4, e);
    bd_free(n->params);
    n->params = NULL;
    g_threads = 1;
    braid_status s1 = run(n, in, out, e);
    size_t nb = 0;
    int same = s1 == BRAID_OK && s4 == BRAID_OK && bd_tensor_nbytes(&out[0], &nb, e) == BRAID_OK &&
               memcmp(out[0].data, o4[0].data, nb) == 0;
    free(o4[0].data);
    return same;
}

/* ScatterElements on int32 data 64x300 with updates 64x200 along axis 1 (so
 * many duplicates and lines enough for several threads), and 6x5 along axis
 * 0 with negative indices, for every reduction. */
static void test_elements(void)
{
    enum { R = 64, C = 300, UC = 200 };
    int32_t *x = malloc(sizeof(int32_t) * R * C), *u = malloc(sizeof(int32_t) * R * UC), *want = malloc(sizeof(int32_t) * R * C);
    int64_t *ix = malloc(sizeof(int64_t) * R * UC);
    unsigned s = 7;
    for (int i = 0; i < R * C; i++) x[i] = (int32_t)(rnd(&s) % 2001) - 1000;
    for (int i = 0; i < R * UC; i++) u[i] = (int32_t)(rnd(&s) % 2001) - 1000, ix[i] = (int64_t)(rnd(&s) % (2 * C)) - C;
    bd_err e = {0};
    bd_tensor out[1] = {0};
    for (int red = 0; red < 5; red++) {
        memcpy(want, x, sizeof(int32_t) * R * C);
        for (int r = 0; r < R; r++)
            for (int c = 0; c < UC; c++) {
                int64_t v = ix[r * UC + c];
                int32_t *w = &want[r * C + (v < 0 ? v + C : v)];
                *w = ref_i32(red, *w, u[r * UC + c]);
            }
        bd_attr at[2] = {attr_i("axis", -1), {.name = "reduction", .type = BD_ATTR_STRING, .s = (char *)RED[red]}};
        bd_tensor in[3] = {tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){R, C}, x), tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){R, UC}, ix),
                           tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){R, UC}, u)};
        bd_node n = op_node(BD_OP_ScatterElements, 18, 3, 1, at, 2);
        CHECK(run_both(&n, in, out, &e));
        CHECK(memcmp(out[0].data, want, sizeof(int32_t) * R * C) == 0);
        done(&n, out);
    }
    /* axis 0 of 4x5 with updates 6x3 (longer along the axis, narrower across) */
    int32_t ix0[18];
    for (int i = 0; i < 18; i++) ix0[i] = (int32_t)(rnd(&s) % 8) - 4;
    for (int red = 0; red < 5; red++) {
        memcpy(want, x, sizeof(int32_t) * 20);
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < 3; c++) {
                int v = ix0[r * 3 + c];
                want[(v < 0 ? v + 4 : v) * 5 + c] = ref_i32(red, want[(v < 0 ? v + 4 : v) * 5 + c], u[r * 3 + c]);
            }
        bd_attr at = {.name = "reduction", .type = BD_ATTR_STRING, .s = (char *)RED[red]};
        bd_tensor in[3] = {tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){4, 5}, x), tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){6, 3}, ix0),
                           tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){6, 3}, u)};
        bd_node n = op_node(BD_OP_ScatterElements, 18, 3, 1, &at, 1);
        CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
        CHECK(memcmp(out[0].data, want, sizeof(int32_t) * 20) == 0);
        done(&n, out);
    }
    /* Scatter (opset 9) is ScatterElements without reduction */
    bd_tensor in[3] = {tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){4, 5}, x), tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){6, 3}, ix0),
                       tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){6, 3}, u)};
    memcpy(want, x, sizeof(int32_t) * 20);
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 3; c++) want[(ix0[r * 3 + c] < 0 ? ix0[r * 3 + c] + 4 : ix0[r * 3 + c]) * 5 + c] = u[r * 3 + c];
    bd_node n = op_node(BD_OP_Scatter, 9, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, want, sizeof(int32_t) * 20) == 0);
    done(&n, out);

    /* errors: an index out of range, updates shaped unlike the indices, a bad
     * reduction, updates of another dtype, empty updates (a plain copy) */
    ix0[7] = 4;
    n = op_node(BD_OP_ScatterElements, 13, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "index 4 (element 7 of 'indices') is out of range for axis 0 of size 4");
    done(&n, out);
    in[2].dims[1] = 2;
    n = op_node(BD_OP_ScatterElements, 13, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    in[2].dims[1] = 3;
    bd_attr bad = {.name = "reduction", .type = BD_ATTR_STRING, .s = "sum"};
    n = op_node(BD_OP_ScatterElements, 18, 3, 1, &bad, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
    in[2].dtype = BRAID_DTYPE_FLOAT;
    n = op_node(BD_OP_ScatterElements, 13, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_DTYPE);
    done(&n, out);
    in[2].dtype = BRAID_DTYPE_INT32;
    in[1].dims[0] = in[2].dims[0] = 0;
    n = op_node(BD_OP_ScatterElements, 13, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, x, sizeof(int32_t) * 20) == 0);
    done(&n, out);
    free(x), free(u), free(want), free(ix);
}

/* Float types combine as numpy does, one update at a time: float16 2048 + 1
 * rounds to 2048 (the tie goes to even), twice (np.float16(2048) +
 * np.float16(1) == 2048), where adding 2 at once would give 2050; max and
 * min propagate NaN; bool adds as or and multiplies as and. */
static void test_reduction_dtypes(void)
{
    bd_err e = {0};
    bd_tensor out[1] = {0};
    uint16_t h[] = {0x6800 /* 2048 */, 0x3c00 /* 1 */}, hu[] = {0x3c00, 0x3c00};
    int64_t ix[] = {0, 0};
    bd_attr add = {.name = "reduction", .type = BD_ATTR_STRING, .s = "add"};
    bd_tensor in[3] = {tensor(BRAID_DTYPE_FLOAT16, 1, (int64_t[]){2}, h), tensor(BRAID_DTYPE_INT64, 1, (int64_t[]){2}, ix),
                       tensor(BRAID_DTYPE_FLOAT16, 1, (int64_t[]){2}, hu)};
    bd_node n = op_node(BD_OP_ScatterElements, 18, 3, 1, &add, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint16_t *)out[0].data)[0], 0x6800);
    CHECK_EQ_INT(((uint16_t *)out[0].data)[1], 0x3c00);
    done(&n, out);

    float f[] = {1.0f, NAN}, fu[] = {NAN, 5.0f};
    int64_t fi[] = {0, 1};
    bd_attr mx = {.name = "reduction", .type = BD_ATTR_STRING, .s = "max"};
    bd_tensor fin[3] = {tensor(BRAID_DTYPE_FLOAT, 1, (int64_t[]){2}, f), tensor(BRAID_DTYPE_INT64, 1, (int64_t[]){2}, fi),
                        tensor(BRAID_DTYPE_FLOAT, 1, (int64_t[]){2}, fu)};
    n = op_node(BD_OP_ScatterElements, 18, 3, 1, &mx, 1);
    CHECK_EQ_INT(run(&n, fin, out, &e), BRAID_OK);
    CHECK(isnan(((float *)out[0].data)[0]) && isnan(((float *)out[0].data)[1]));
    done(&n, out);

    uint8_t b[] = {0, 1, 1}, bu[] = {1, 0, 1};
    int64_t bi[] = {0, 1, 2};
    bd_tensor bin[3] = {tensor(BRAID_DTYPE_BOOL, 1, (int64_t[]){3}, b), tensor(BRAID_DTYPE_INT64, 1, (int64_t[]){3}, bi),
                        tensor(BRAID_DTYPE_BOOL, 1, (int64_t[]){3}, bu)};
    n = op_node(BD_OP_ScatterElements, 18, 3, 1, &add, 1);
    CHECK_EQ_INT(run(&n, bin, out, &e), BRAID_OK);
    uint8_t want_or[] = {1, 1, 1}, want_and[] = {0, 0, 1};
    CHECK(memcmp(out[0].data, want_or, 3) == 0);
    done(&n, out);
    bd_attr mul = {.name = "reduction", .type = BD_ATTR_STRING, .s = "mul"};
    n = op_node(BD_OP_ScatterElements, 18, 3, 1, &mul, 1);
    CHECK_EQ_INT(run(&n, bin, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, want_and, 3) == 0);
    done(&n, out);

    /* a reduction over float8 is refused; a plain scatter of it moves bytes */
    bin[0].dtype = bin[2].dtype = BRAID_DTYPE_FLOAT8E5M2;
    n = op_node(BD_OP_ScatterElements, 18, 3, 1, &add, 1);
    CHECK_EQ_INT(run(&n, bin, out, &e), BRAID_ERR_UNSUPPORTED);
    done(&n, out);
    n = op_node(BD_OP_ScatterElements, 18, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, bin, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, bu, 3) == 0);
    done(&n, out);
}

/* ScatterND on float data 4x4096 with 6 row tuples (duplicates; slices long
 * enough to split over threads) and on 4x4096 with element tuples. */
static void test_nd(void)
{
    enum { R = 4, C = 4096 };
    float *x = malloc(sizeof(float) * R * C), *u = malloc(sizeof(float) * 6 * C), *want = malloc(sizeof(float) * R * C);
    unsigned s = 3;
    for (int i = 0; i < R * C; i++) x[i] = (float)((int)(rnd(&s) % 201) - 100) / 8;
    for (int i = 0; i < 6 * C; i++) u[i] = (float)((int)(rnd(&s) % 201) - 100) / 8;
    int64_t rows[] = {1, -1, 1, 0, -3, 3};
    bd_err e = {0};
    bd_tensor out[1] = {0};
    for (int red = 0; red < 5; red++) {
        memcpy(want, x, sizeof(float) * R * C);
        for (int t = 0; t < 6; t++)
            for (int c = 0; c < C; c++) {
                float *w = &want[(rows[t] < 0 ? rows[t] + R : rows[t]) * C + c], v = u[t * C + c];
                *w = red == 0 ? v : red == 1 ? *w + v : red == 2 ? *w * v : red == 3 ? (*w > v ? *w : v) : (*w < v ? *w : v);
            }
        bd_attr at = {.name = "reduction", .type = BD_ATTR_STRING, .s = (char *)RED[red]};
        bd_tensor in[3] = {tensor(BRAID_DTYPE_FLOAT, 2, (int64_t[]){R, C}, x), tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){6, 1}, rows),
                           tensor(BRAID_DTYPE_FLOAT, 2, (int64_t[]){6, C}, u)};
        bd_node n = op_node(BD_OP_ScatterND, 18, 3, 1, &at, 1);
        CHECK(run_both(&n, in, out, &e));
        CHECK(memcmp(out[0].data, want, sizeof(float) * R * C) == 0);
        done(&n, out);
    }
    /* element tuples (k = rank): 5 of them, two hitting (2, -1) */
    int32_t el[] = {2, -1, 0, 0, 3, 4095, 2, 4095, -4, 7};
    memcpy(want, x, sizeof(float) * R * C);
    want[2 * C + C - 1] = x[2 * C + C - 1] + u[0] + u[3];
    want[0] += u[1], want[3 * C + 4095] += u[2], want[7] += u[4];
    bd_attr add = {.name = "reduction", .type = BD_ATTR_STRING, .s = "add"};
    bd_tensor in[3] = {tensor(BRAID_DTYPE_FLOAT, 2, (int64_t[]){R, C}, x), tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){5, 2}, el),
                       tensor(BRAID_DTYPE_FLOAT, 1, (int64_t[]){5}, u)};
    bd_node n = op_node(BD_OP_ScatterND, 16, 3, 1, &add, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, want, sizeof(float) * R * C) == 0);
    done(&n, out);

    /* errors: an index out of range, updates of the wrong shape, k > rank */
    el[9] = 4096;
    n = op_node(BD_OP_ScatterND, 16, 3, 1, &add, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "index 4096 (tuple 4 of 'indices') is out of range for data axis 1 of size 4096");
    done(&n, out);
    in[2].dims[0] = 4;
    n = op_node(BD_OP_ScatterND, 16, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "do not fit");
    done(&n, out);
    in[1].dims[1] = 3;
    n = op_node(BD_OP_ScatterND, 16, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    free(x), free(u), free(want);
}

/* TensorScatter: cache 2x3x5x2 (batch, heads, max_seq, dim), update 2x3x2x2
 * at axis -2: linear from write_indices (1, 3), circular from (4, 0) (wraps),
 * no write_indices (from 0); a linear write past the end fails. */
static void test_tensor_scatter(void)
{
    int16_t cache[60], upd[24];
    for (int i = 0; i < 60; i++) cache[i] = (int16_t)-i;
    for (int i = 0; i < 24; i++) upd[i] = (int16_t)(100 + i);
    bd_err e = {0};
    bd_tensor out[1] = {0};
    int64_t wi_lin[] = {1, 3}, wi_circ[] = {4, 0}, *wis[] = {wi_lin, wi_circ, NULL};
    for (int m = 0; m < 3; m++) {
        int circular = m == 1;
        int16_t want[60];
        memcpy(want, cache, sizeof want);
        for (int b = 0; b < 2; b++)
            for (int hd = 0; hd < 3; hd++)
                for (int sq = 0; sq < 2; sq++)
                    for (int d = 0; d < 2; d++) {
                        int pos = (int)((wis[m] ? wis[m][b] : 0) + sq) % 5;
                        want[((b * 3 + hd) * 5 + pos) * 2 + d] = upd[((b * 3 + hd) * 2 + sq) * 2 + d];
                    }
        bd_attr at = {.name = "mode", .type = BD_ATTR_STRING, .s = circular ? "circular" : "linear"};
        bd_tensor in[3] = {tensor(BRAID_DTYPE_INT16, 4, (int64_t[]){2, 3, 5, 2}, cache),
                           tensor(BRAID_DTYPE_INT16, 4, (int64_t[]){2, 3, 2, 2}, upd), wis[m] ? ints1(wis[m], 2) : (bd_tensor){0}};
        bd_node n = op_node(BD_OP_TensorScatter, 24, wis[m] ? 3 : 2, 1, &at, 1);
        CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
        CHECK(memcmp(out[0].data, want, sizeof want) == 0);
        done(&n, out);
    }
    bd_tensor in[3] = {tensor(BRAID_DTYPE_INT16, 4, (int64_t[]){2, 3, 5, 2}, cache),
                       tensor(BRAID_DTYPE_INT16, 4, (int64_t[]){2, 3, 2, 2}, upd), ints1(wi_circ, 2)};
    bd_node n = op_node(BD_OP_TensorScatter, 24, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "write_indices[0] = 4");
    done(&n, out);
    /* an update longer than the cache, the batch axis, a bad mode */
    in[1].dims[2] = 6;
    n = op_node(BD_OP_TensorScatter, 24, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    in[1].dims[2] = 2;
    bd_attr a0 = attr_i("axis", 0);
    n = op_node(BD_OP_TensorScatter, 24, 3, 1, &a0, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
    bd_attr bm = {.name = "mode", .type = BD_ATTR_STRING, .s = "ring"};
    n = op_node(BD_OP_TensorScatter, 24, 3, 1, &bm, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
}

int main(void)
{
    test_elements();
    test_reduction_dtypes();
    test_nd();
    test_tensor_scatter();
    return check_done();
}
