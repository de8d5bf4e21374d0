/* cast.c: CPU kernels of the cast op family (Cast, CastLike). Between the 11
 * native types (the floats, the integers, bool) a flat loop per pair, which
 * vectorizes; float16/bfloat16 to and from float32 through elementwise.h's
 * block conversions; every other pair element by element through
 * bd_cast_elem (src/ops/cast.h), the definition the CUDA kernels share. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno", "fp-contract=off")
#endif

#include "elementwise.h"
#include "ops/cast.h"

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

braid_status bd_cpu_cast(const bd_kernel *k)
{
    const bd_cast_params *p = k->node->params;
    int sd = k->in[0].dtype, dd = k->out[0].dtype; /* CastLike: dd is its second input's dtype */
    if (k->node->op != BD_OP_Cast && k->node->op != BD_OP_CastLike)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the cast family", k->node->op_type);
    int64_t n = bd_numel(&k->in[0]);
    size_t ss = bd_dtype_size(sd), ds = bd_dtype_size(dd);
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
