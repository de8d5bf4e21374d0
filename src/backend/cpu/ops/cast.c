/* cast.c: CPU kernels of the cast op family (Cast, CastLike). Between the 11
 * native types (the floats, the integers, bool) a flat loop per pair, which
 * vectorizes; float16/bfloat16 to and from float32 through elementwise.h's
 * block conversions; every other pair element by element through
 * bd_cast_elem (src/ops/cast.h), the definition the CUDA kernels share.
 * Strings: a number is written in the shortest form that reads back as the
 * same value of its type, positional or scientific as numpy's astype(str)
 * chooses ("1.0", "0.1", "1e-05", "1.5e+16"), with "NaN", "INF" and "-INF";
 * bool as "True" / "False". A string is read as a decimal or scientific
 * number (surrounding spaces allowed; "INF", "+INF", "-INF", "NaN" in any
 * case; "True" / "False" for bool); anything else fails naming the element. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno", "fp-contract=off")
#endif

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "elementwise.h"
#include "fbuf.h"
#include "ops/cast.h"
#include "util/strpool.h"

#define NDT 14 /* the native dtypes are all below this */

/* X(C type, dtype suffix, kind, ...): kind F float, I integer, U uint64, B bool.
 * Two copies so that one can expand inside the other. */
#define CAST_A(X, ...)                                                                             \
    X(float, FLOAT, F, __VA_ARGS__) X(double, DOUBLE, F, __VA_ARGS__) X(int8_t, INT8, I, __VA_ARGS__) \
    X(int16_t, INT16, I, __VA_ARGS__) X(int32_t, INT32, I, __VA_ARGS__)                            \
    X(int64_t, INT64, I, __VA_ARGS__) X(uint8_t, UINT8, I, __VA_ARGS__)                            \
    X(uint16_t, UINT16, I, __VA_ARGS__) X(uint32_t, UINT32, I, __VA_ARGS__)                        \
    X(uint64_t, UINT64, U, __VA_ARGS__) X(uint8_t, BOOL, B, __VA_ARGS__)
#define CAST_B(X, ...)                                                                             \
    X(float, FLOAT, F, __VA_ARGS__) X(double, DOUBLE, F, __VA_ARGS__) X(int8_t, INT8, I, __VA_ARGS__) \
    X(int16_t, INT16, I, __VA_ARGS__) X(int32_t, INT32, I, __VA_ARGS__)                            \
    X(int64_t, INT64, I, __VA_ARGS__) X(uint8_t, UINT8, I, __VA_ARGS__)                            \
    X(uint16_t, UINT16, I, __VA_ARGS__) X(uint32_t, UINT32, I, __VA_ARGS__)                        \
    X(uint64_t, UINT64, U, __VA_ARGS__) X(uint8_t, BOOL, B, __VA_ARGS__)

/* CV_<dest kind>_<source kind>: the conversion, as bd_cast_store does it. */
#define CV_B_F(DT, v) (DT)((v) != 0)
#define CV_B_I CV_B_F
#define CV_B_U CV_B_F
#define CV_B_B CV_B_F
#define CV_F_F(DT, v) (DT)(v)
#define CV_F_I CV_F_F
#define CV_F_U CV_F_F
#define CV_F_B CV_F_F
#define CV_I_F(DT, v) (DT)bd_cast_f2i(v) /* toward zero through int64, then the low bits */
#define CV_I_I CV_F_F
#define CV_I_U CV_F_F
#define CV_I_B CV_F_F
#define CV_U_F(DT, v) (DT)bd_cast_f2u(v)
#define CV_U_I CV_F_F
#define CV_U_U CV_F_F
#define CV_U_B CV_F_F

#define DEF_CAST(DT, DN, DK, ST, SN, SK)                                                           \
    static BD_CLONES void cast_##SN##_##DN(const void *vs, void *vd, int64_t n, const void *c)    \
    {                                                                                              \
        (void)c;                                                                                   \
        const ST *s = vs;                                                                          \
        DT *d = vd;                                                                                \
        for (int64_t i = 0; i < n; i++) d[i] = CV_##DK##_##SK(DT, s[i]);                           \
    }
#define DEF_CAST_ROW(ST, SN, SK, ...) CAST_B(DEF_CAST, ST, SN, SK)
CAST_A(DEF_CAST_ROW, _)
#define CAST_ENT(DT, DN, DK, ST, SN, SK) [BRAID_DTYPE_##DN] = cast_##SN##_##DN,
#define CAST_TAB_ROW(ST, SN, SK, ...) [BRAID_DTYPE_##SN] = {CAST_B(CAST_ENT, ST, SN, SK)},
static const bd_ew_fn cast_tab[NDT][NDT] = {CAST_A(CAST_TAB_ROW, _)};

typedef struct cast_job {
    int sd, dd, saturate, mode;
    const char *src;
    char *dst;
} cast_job;

/* Elements [begin, end) of any pair, one by one. */
static void cast_generic(void *vj, int64_t begin, int64_t end)
{
    const cast_job *j = vj;
    for (int64_t i = begin; i < end; i++) bd_cast_elem(j->sd, j->src, j->dd, j->dst, i, j->saturate, j->mode);
}

/* ---- strings ---------------------------------------------------------------------- */

/* The value a float of dtype dt reads back as from text t. */
static double reread(const char *t, int dt)
{
    double v = strtod(t, NULL);
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return (float)strtof(t, NULL);
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(bd_float_to_half((float)v));
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(bd_float_to_bf16((float)v));
    default: return v;
    }
}

/* v (a value of float dtype dt) as text into out (at least 40 bytes). */
static void float_text(double v, int dt, char *out)
{
    if (isnan(v)) { strcpy(out, "NaN"); return; }
    if (isinf(v)) { strcpy(out, v < 0 ? "-INF" : "INF"); return; }
    if (v == 0) { strcpy(out, signbit(v) ? "-0.0" : "0.0"); return; }
    /* the fewest significant digits that read back as v */
    char sci[40];
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(sci, sizeof sci, "%.*e", digits - 1, v);
        if (reread(sci, dt) == v) break;
    }
    snprintf(sci, sizeof sci, "%.*e", digits - 1, v);
    /* sci is [-]d[.ddd]e(+|-)XX: its digits and exponent */
    char mant[24];
    int neg = sci[0] == '-', nd = 0, exp10;
    const char *c = sci + neg;
    for (; *c && *c != 'e'; c++)
        if (isdigit((unsigned char)*c)) mant[nd++] = *c;
    mant[nd] = 0;
    exp10 = atoi(c + 1);
    while (nd > 1 && mant[nd - 1] == '0') mant[--nd] = 0;
    /* positional for 1e-4 <= |v| < 10^T: T 16 for double, 6 for float, 3 for float16 (numpy's
     * astype(str)); numpy has no bfloat16 to string: it takes float's */
    double hi = dt == BRAID_DTYPE_DOUBLE ? 1e16 : dt == BRAID_DTYPE_FLOAT16 ? 1e3 : 1e6; /* bfloat16 as float */
    char *o = out;
    if (neg) *o++ = '-';
    if (fabs(v) >= 1e-4 && fabs(v) < hi) {
        if (exp10 < 0) {
            *o++ = '0', *o++ = '.';
            for (int i = 0; i < -exp10 - 1; i++) *o++ = '0';
            for (int i = 0; i < nd; i++) *o++ = mant[i];
        } else {
            for (int i = 0; i <= exp10; i++) *o++ = i < nd ? mant[i] : '0';
            *o++ = '.';
            if (nd > exp10 + 1)
                for (int i = exp10 + 1; i < nd; i++) *o++ = mant[i];
            else
                *o++ = '0';
        }
        *o = 0;
    } else {
        *o++ = mant[0];
        if (nd > 1) {
            *o++ = '.';
            for (int i = 1; i < nd; i++) *o++ = mant[i];
        }
        sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
}

static int is_float_dt(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 ||
           dt == BRAID_DTYPE_BFLOAT16;
}

static braid_status to_strings(const bd_kernel *k, int sd, int64_t n)
{
    const void *x = k->in[0].data;
    const char **y = k->out[0].data;
    char t[64];
    if (!k->strings && n) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Cast to string runs with no string pool");
    for (int64_t i = 0; i < n; i++) {
        if (is_float_dt(sd)) float_text(bd_ld_f(x, sd, i), sd, t);
        else if (sd == BRAID_DTYPE_BOOL) strcpy(t, ((const uint8_t *)x)[i] ? "True" : "False");
        else if (sd == BRAID_DTYPE_UINT64) snprintf(t, sizeof t, "%" PRIu64, ((const uint64_t *)x)[i]);
        else if (sd == BRAID_DTYPE_INT64) snprintf(t, sizeof t, "%" PRId64, ((const int64_t *)x)[i]);
        else snprintf(t, sizeof t, "%" PRId64, (int64_t)bd_get_f64(&k->in[0], i)); /* narrower ints: exact */
        if (!(y[i] = bd_strpool_dup(k->strings, t, strlen(t))))
            return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory for the strings of Cast");
    }
    return BRAID_OK;
}

/* s without surrounding spaces into buf (bounded); 0 when too long. */
static int trimmed(const char *s, char *buf, size_t cap)
{
    while (isspace((unsigned char)*s)) s++;
    size_t l = strlen(s);
    while (l && isspace((unsigned char)s[l - 1])) l--;
    if (l >= cap) return 0;
    memcpy(buf, s, l);
    buf[l] = 0;
    return 1;
}

static braid_status from_strings(const bd_kernel *k, int dd, int64_t n)
{
    const char *const *x = k->in[0].data;
    void *y = k->out[0].data;
    char b[128];
    for (int64_t i = 0; i < n; i++) {
        const char *s = x[i] ? x[i] : "";
        char *end = NULL;
        int ok = trimmed(s, b, sizeof b) && b[0];
        double v = 0;
        int64_t iv = 0;
        uint64_t uv = 0;
        int exact = 0; /* an integer read as one (no rounding through double) */
        if (ok) {
            const char *w = b[0] == '+' || b[0] == '-' ? b + 1 : b;
            if (!strcasecmp(w, "inf") || !strcasecmp(w, "infinity")) v = b[0] == '-' ? -INFINITY : INFINITY;
            else if (!strcasecmp(w, "nan")) v = NAN;
            else if (dd == BRAID_DTYPE_BOOL && !strcasecmp(b, "true")) v = 1;
            else if (dd == BRAID_DTYPE_BOOL && !strcasecmp(b, "false")) v = 0;
            else {
                errno = 0;
                if (dd == BRAID_DTYPE_UINT64 && b[0] != '-') {
                    uv = strtoull(b, &end, 10);
                    exact = !*end && errno == 0;
                } else if (!is_float_dt(dd)) {
                    iv = strtoll(b, &end, 10);
                    exact = !*end && errno == 0;
                }
                if (!exact) {
                    v = strtod(b, &end);
                    ok = !*end;
                }
            }
        }
        if (!ok)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT, "input[%lld] is '%.60s', which is not a number",
                           (long long)i, s);
        if (dd == BRAID_DTYPE_FLOAT) { /* rounded once from the text */
            ((float *)y)[i] = isnan(v) || isinf(v) ? (float)v : strtof(b, NULL);
            continue;
        }
        if (is_float_dt(dd)) {
            bd_st_f(y, dd, i, v);
            continue;
        }
        if (dd == BRAID_DTYPE_BOOL) {
            ((uint8_t *)y)[i] = exact ? iv != 0 : v != 0;
            continue;
        }
        if (dd == BRAID_DTYPE_UINT64) {
            ((uint64_t *)y)[i] = exact ? uv : (uint64_t)bd_cast_f2u(v);
            continue;
        }
        int64_t w = exact ? iv : bd_cast_f2i(v); /* toward zero, then the low bits as any cast to a narrower int */
        switch (dd) {
        case BRAID_DTYPE_INT8: ((int8_t *)y)[i] = (int8_t)w; break;
        case BRAID_DTYPE_INT16: ((int16_t *)y)[i] = (int16_t)w; break;
        case BRAID_DTYPE_INT32: ((int32_t *)y)[i] = (int32_t)w; break;
        case BRAID_DTYPE_INT64: ((int64_t *)y)[i] = w; break;
        case BRAID_DTYPE_UINT8: ((uint8_t *)y)[i] = (uint8_t)w; break;
        case BRAID_DTYPE_UINT16: ((uint16_t *)y)[i] = (uint16_t)w; break;
        case BRAID_DTYPE_UINT32: ((uint32_t *)y)[i] = (uint32_t)w; break;
        default: break;
        }
    }
    return BRAID_OK;
}

braid_status bd_cpu_cast(const bd_kernel *k)
{
    const bd_cast_params *p = k->node->params;
    int sd = k->in[0].dtype, dd = k->out[0].dtype; /* CastLike: dd is its second input's dtype */
    if (k->node->op != BD_OP_Cast && k->node->op != BD_OP_CastLike)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the cast family", k->node->op_type);
    int64_t n = bd_numel(&k->in[0]);
    size_t ss = bd_dtype_size(sd), ds = bd_dtype_size(dd);
    if (sd == BRAID_DTYPE_STRING && dd == BRAID_DTYPE_STRING) {
        memcpy(k->out[0].data, k->in[0].data, (size_t)n * sizeof(const char *)); /* the strings stay their owners' */
        return BRAID_OK;
    }
    if (dd == BRAID_DTYPE_STRING && ss) return to_strings(k, sd, n);
    if (sd == BRAID_DTYPE_STRING && ds) return from_strings(k, dd, n);
    if (!ss || !ds || sd == BRAID_DTYPE_STRING || dd == BRAID_DTYPE_STRING)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "cast from %s to %s is not supported", bd_dtype_name(sd),
                       bd_dtype_name(dd));
    if (n <= 0) return BRAID_OK;
    if (sd == dd) {
        memcpy(k->out[0].data, k->in[0].data, (size_t)n * ss);
        return BRAID_OK;
    }
    /* The flat map converts narrow floats to and from float around the
     * kernel: a narrow source is exact in float, so any native target runs
     * the float row; a float source rounds once into float16/bfloat16
     * (no saturation or round mode there). */
    bd_ew_map m = {NULL, NULL, sd, dd, k->in[0].data, k->out[0].data};
    if (sd < NDT && dd < NDT) m.fn = cast_tab[sd][dd];
    else if (bd_ew_narrow(sd) && dd < NDT) m.fn = cast_tab[BRAID_DTYPE_FLOAT][dd];
    else if (sd == BRAID_DTYPE_FLOAT && (dd == BRAID_DTYPE_FLOAT16 || dd == BRAID_DTYPE_BFLOAT16))
        m.fn = cast_tab[BRAID_DTYPE_FLOAT][BRAID_DTYPE_FLOAT];
    if (m.fn) {
        bd_ew_map_run(&m, n, k->threads);
        return BRAID_OK;
    }
    cast_job j = {sd, dd, p ? p->saturate : 1, p ? p->round_mode : BD_ROUND_UP, k->in[0].data, k->out[0].data};
    bd_parallel_for(k->threads, n, BD_EW_MIN_CHUNK, cast_generic, &j);
    return BRAID_OK;
}
