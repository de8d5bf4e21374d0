/* test_rnn.c: the rnn family (LSTM, GRU, RNN, com.microsoft DynamicQuantizeLSTM)
 * on the CPU kernel, without the loader:
 *   - the activation functions and quantization helpers of ops/rnn.h (the ones the
 *     CUDA kernels call) against closed forms;
 *   - an LSTM with peepholes and initial states against values pasted from onnx's
 *     reference implementation (the command is in tests/unit/README-style comment below);
 *   - every cell, direction, layout, sequence_lens (entries of length 0 and full),
 *     initial states, peepholes, clip, activation lists with alpha/beta, input_forget,
 *     linear_before_reset and omitted outputs, against a plain double-precision
 *     implementation of the spec in this file; float32, float64 and float16;
 *   - empty batches and sequences, NaN propagation;
 *   - a state product on 1, 2 and 3 threads (fixed parts of R^T): the same bits;
 *   - the load-time rewrite (split of a bidirectional node, R transposed) against the
 *     node it replaces;
 *   - DynamicQuantizeLSTM where quantization is exact, and the quantization rules;
 *   - errors: status codes and messages.
 * Tolerances: float32 2e-5 abs + 2e-5 rel (the kernels use 4-ulp exp/tanh);
 * float64 1e-12; float16 and bfloat16 the reference rounded the same way, 1e-3 abs
 * + one unit in the last place (2e-3, 1.6e-2) rel. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "ir/ir.h"
#include "ops/rnn.h"
#include "optest.h"
#include "util/dtype.h"

#include <stdlib.h>
#include <strings.h>

/* ---- nodes with up to 12 inputs ----------------------------------------------------- */

typedef struct rnode {
    bd_node n;
    int in[12], out[3];
    bd_attr attrs[16];
    char *strs[8]; /* (the node does not write them) */
    float fl[2][16];
} rnode;

static void rnode_init(rnode *t, int op, int opset, int n_in, int n_out)
{
    memset(t, 0, sizeof *t);
    t->n = op_node(op, opset, n_in, n_out, t->attrs, 0);
    if (op == BD_OP_MS_DynamicQuantizeLSTM) t->n.domain = "com.microsoft";
    t->n.name = "rnn";
    t->n.in = t->in;
    t->n.out = t->out;
    for (int i = 0; i < 12; i++) t->in[i] = i;
    for (int i = 0; i < 3; i++) t->out[i] = 20 + i;
}

static bd_attr *rattr(rnode *t, const char *name, bd_attr_type type)
{
    bd_attr *a = &t->attrs[t->n.n_attrs++];
    a->name = (char *)name;
    a->type = type;
    return a;
}
static void r_int(rnode *t, const char *name, int64_t v) { rattr(t, name, BD_ATTR_INT)->i = v; }
static void r_float(rnode *t, const char *name, float v) { rattr(t, name, BD_ATTR_FLOAT)->f = v; }
static void r_str(rnode *t, const char *name, const char *s) { rattr(t, name, BD_ATTR_STRING)->s = (char *)s; }
static void r_strs(rnode *t, const char *name, const char *const *s, int n)
{
    bd_attr *a = rattr(t, name, BD_ATTR_STRINGS);
    memcpy(t->strs, s, (size_t)n * sizeof *s);
    a->strings = t->strs;
    a->n = n;
}
static void r_floats(rnode *t, int which, const char *name, const float *v, int n)
{
    bd_attr *a = rattr(t, name, BD_ATTR_FLOATS);
    memcpy(t->fl[which], v, (size_t)n * sizeof *v);
    a->floats = t->fl[which];
    a->n = n;
}

static bd_tensor none(void) { return (bd_tensor){.dtype = BRAID_DTYPE_UNDEFINED, .rank = -1}; }
static bd_tensor t3(int dt, int64_t a, int64_t b, int64_t c, void *d) { return (bd_tensor){dt, 3, {a, b, c}, d}; }
static bd_tensor t2(int dt, int64_t a, int64_t b, void *d) { return (bd_tensor){dt, 2, {a, b}, d}; }

/* ---- a case and its double-precision reference ------------------------------------------ */

typedef struct rcase {
    int op, cell, dirs, direction, layout, lbr, input_forget, n_out, omit[3];
    int64_t seq, batch, isz, H;
    float clip;
    int n_acts;
    const char *acts[6];
    int n_alpha, n_beta;
    float alpha[6], beta[6];
    int has_b, has_h0, has_c0, has_p;
    int32_t lens[8];
    int has_lens;
    /* data, float (dirs-major as ONNX) */
    float *x, *w, *r, *b, *h0, *c0, *p;
} rcase;

static int gates_of(int cell) { return cell == BD_RNN_LSTM ? 4 : cell == BD_RNN_GRU ? 3 : 1; }

static double actd(const char *name, double a, double b, double x)
{
    if (!strcasecmp(name, "Relu")) return x > 0 ? x : 0;
    if (!strcasecmp(name, "Tanh")) return tanh(x);
    if (!strcasecmp(name, "Sigmoid")) return 1 / (1 + exp(-x));
    if (!strcasecmp(name, "Affine")) return a * x + b;
    if (!strcasecmp(name, "LeakyRelu")) return x >= 0 ? x : a * x;
    if (!strcasecmp(name, "ThresholdedRelu")) return x > a ? x : 0;
    if (!strcasecmp(name, "ScaledTanh")) return a * tanh(b * x);
    if (!strcasecmp(name, "HardSigmoid")) return fmax(0, fmin(1, a * x + b));
    if (!strcasecmp(name, "Elu")) return x >= 0 ? x : a * (exp(x) - 1);
    if (!strcasecmp(name, "Softsign")) return x / (1 + fabs(x));
    if (!strcasecmp(name, "Softplus")) return log(1 + exp(x));
    return NAN;
}

typedef struct fn3 {
    const char *name;
    double a, b;
} fn3;

/* The functions of each direction: alphas and betas consumed in order by the
 * functions that take them, ONNX's defaults after that. */
static void resolve(const rcase *c, fn3 f[2][3])
{
    static const char *const def[3][3] = {{"Sigmoid", "Tanh", "Tanh"}, {"Sigmoid", "Tanh"}, {"Tanh"}};
    int per = c->cell == BD_RNN_LSTM ? 3 : c->cell == BD_RNN_GRU ? 2 : 1, ia = 0, ib = 0;
    int n = c->n_acts ? c->n_acts : per * c->dirs;
    for (int j = 0; j < n; j++) {
        const char *s = c->n_acts ? c->acts[j] : def[c->cell][j % per];
        double a = 0, b = 0;
        int na = 0, nb = 0;
        if (!strcasecmp(s, "Affine")) a = 1, na = nb = 1;
        else if (!strcasecmp(s, "LeakyRelu")) a = 0.01, na = 1;
        else if (!strcasecmp(s, "ThresholdedRelu")) a = 1, na = 1;
        else if (!strcasecmp(s, "ScaledTanh")) a = 1, b = 1, na = nb = 1;
        else if (!strcasecmp(s, "HardSigmoid")) a = 0.2, b = 0.5, na = nb = 1;
        else if (!strcasecmp(s, "Elu")) a = 1, na = 1;
        if (na && ia < c->n_alpha) a = c->alpha[ia++];
        if (nb && ib < c->n_beta) b = c->beta[ib++];
        f[j / per][j % per] = (fn3){s, (float)a, (float)b};
        if (c->dirs == 2 && n == per) f[1][j] = f[0][j];
    }
}

/* Y, Y_h, Y_c in double by the spec: each entry stepped within its own length. */
static void reference(const rcase *c, double *y, double *yh, double *yc)
{
    int64_t G = gates_of(c->cell), H = c->H, GH = G * H, I = c->isz, S = c->seq, N = c->batch, D = c->dirs;
    fn3 f[2][3];
    resolve(c, f);
    double h[256], cc[256], g[2048], hr[256]; /* H up to 256 */
    for (int64_t d = 0; d < D; d++) {
        int rev = c->direction == BD_RNN_REVERSE || d == 1;
        for (int64_t b = 0; b < N; b++) {
            for (int64_t j = 0; j < H; j++) {
                int64_t o = bd_rnn_hoff(c->layout, d, b, D, N, H) + j;
                h[j] = c->h0 ? c->h0[o] : 0;
                cc[j] = c->c0 ? c->c0[o] : 0;
            }
            int64_t len = c->has_lens ? c->lens[b] : S;
            for (int64_t t = 0; t < S; t++)
                for (int64_t j = 0; j < H; j++) y[bd_rnn_yoff(c->layout, t, d, b, S, D, N, H) + j] = 0;
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;
                const float *x = c->x + bd_rnn_xrow(c->layout, t, b, S, N) * I;
                for (int64_t n = 0; n < GH; n++) { /* x W^T + Wb, and h R^T + Rb apart (GRU needs it apart) */
                    double xw = c->b ? c->b[d * 2 * GH + n] : 0, hr_ = c->b ? c->b[d * 2 * GH + GH + n] : 0;
                    for (int64_t i = 0; i < I; i++) xw += (double)c->w[(d * GH + n) * I + i] * x[i];
                    for (int64_t i = 0; i < H; i++) hr_ += (double)c->r[(d * GH + n) * H + i] * h[i];
                    g[n] = xw;
                    g[GH + n] = hr_;
                }
#define CL(v) (c->clip > 0 ? fmax(-c->clip, fmin(c->clip, (v))) : (v))
#define F(k, v) actd(f[d][k].name, f[d][k].a, f[d][k].b, (v))
                const float *pe = c->p ? c->p + d * 3 * H : NULL;
                for (int64_t j = 0; j < H; j++) {
                    if (c->cell == BD_RNN_LSTM) {
                        double pi = pe ? pe[j] : 0, po = pe ? pe[H + j] : 0, pf = pe ? pe[2 * H + j] : 0;
                        double i_ = F(0, CL(g[j] + g[GH + j] + pi * cc[j]));
                        double f_ = c->input_forget ? 1 - i_ : F(0, CL(g[2 * H + j] + g[GH + 2 * H + j] + pf * cc[j]));
                        double c_ = f_ * cc[j] + i_ * F(1, CL(g[3 * H + j] + g[GH + 3 * H + j]));
                        double o_ = F(0, CL(g[H + j] + g[GH + H + j] + po * c_));
                        cc[j] = c_;
                        hr[j] = o_ * F(2, c_);
                    } else if (c->cell == BD_RNN_GRU) {
                        double z = F(0, CL(g[j] + g[GH + j]));
                        double r = F(0, CL(g[H + j] + g[GH + H + j]));
                        double hh;
                        if (c->lbr) hh = F(1, CL(g[2 * H + j] + r * g[GH + 2 * H + j]));
                        else {
                            double acc = c->b ? c->b[d * 2 * GH + GH + 2 * H + j] : 0;
                            for (int64_t i = 0; i < H; i++) {
                                double ri = F(0, CL(g[H + i] + g[GH + H + i]));
                                acc += (double)c->r[(d * GH + 2 * H + j) * H + i] * ri * h[i];
                            }
                            hh = F(1, CL(g[2 * H + j] + acc));
                        }
                        hr[j] = (1 - z) * hh + z * h[j];
                    } else {
                        hr[j] = F(0, CL(g[j] + g[GH + j]));
                    }
                }
#undef CL
#undef F
                for (int64_t j = 0; j < H; j++) {
                    h[j] = hr[j];
                    y[bd_rnn_yoff(c->layout, t, d, b, S, D, N, H) + j] = h[j];
                }
            }
            for (int64_t j = 0; j < H; j++) {
                int64_t o = bd_rnn_hoff(c->layout, d, b, D, N, H) + j;
                yh[o] = len ? h[j] : 0;
                yc[o] = len ? cc[j] : 0;
            }
        }
    }
}

static float *rnd(int64_t n, unsigned *seed, float scale)
{
    float *p = randn(n, seed);
    for (int64_t i = 0; i < n; i++) p[i] *= scale;
    return p;
}

static void fill(rcase *c, unsigned seed)
{
    int64_t G = gates_of(c->cell), H = c->H, D = c->dirs;
    c->x = rnd(c->seq * c->batch * c->isz, &seed, 1.0f);
    c->w = rnd(D * G * H * c->isz, &seed, 0.6f);
    c->r = rnd(D * G * H * H, &seed, 0.6f);
    c->b = c->has_b ? rnd(D * 2 * G * H, &seed, 0.5f) : NULL;
    c->h0 = c->has_h0 ? rnd(D * c->batch * H, &seed, 1.0f) : NULL;
    c->c0 = c->has_c0 ? rnd(D * c->batch * H, &seed, 1.0f) : NULL;
    c->p = c->has_p ? rnd(D * 3 * H, &seed, 0.5f) : NULL;
}

static void unfill(rcase *c)
{
    free(c->x), free(c->w), free(c->r), free(c->b), free(c->h0), free(c->c0), free(c->p);
}

static const int op_of[3] = {BD_OP_LSTM, BD_OP_GRU, BD_OP_RNN};
static const char *const dir_names[3] = {"forward", "reverse", "bidirectional"};

/* The node of case c. */
static void make_node(rnode *t, const rcase *c)
{
    rnode_init(t, op_of[c->cell], 22, c->cell == BD_RNN_LSTM ? 8 : 6, c->n_out ? c->n_out : (c->cell == BD_RNN_LSTM ? 3 : 2));
    r_int(t, "hidden_size", c->H);
    r_str(t, "direction", dir_names[c->direction]);
    r_int(t, "layout", c->layout);
    if (c->clip > 0) r_float(t, "clip", c->clip);
    if (c->input_forget) r_int(t, "input_forget", 1);
    if (c->lbr) r_int(t, "linear_before_reset", 1);
    if (c->n_acts) r_strs(t, "activations", c->acts, c->n_acts);
    if (c->n_alpha) r_floats(t, 0, "activation_alpha", c->alpha, c->n_alpha);
    if (c->n_beta) r_floats(t, 1, "activation_beta", c->beta, c->n_beta);
    for (int k = 0; k < 3; k++)
        if (c->omit[k]) t->out[k] = -1;
}

/* Inputs of case c in dtype dt (converted from the float data; freed by the caller). */
static void make_inputs(const rcase *c, int dt, bd_tensor *in, void **owned)
{
    int64_t G = gates_of(c->cell), H = c->H, D = c->dirs, S = c->seq, N = c->batch;
    const float *src[8] = {c->x, c->w, c->r, c->b, NULL, c->h0, c->c0, c->p};
    int64_t dims[8][3] = {{c->layout ? N : S, c->layout ? S : N, c->isz}, {D, G * H, c->isz}, {D, G * H, H},
                          {D, 2 * G * H, 0}, {N, 0, 0}, {c->layout ? N : D, c->layout ? D : N, H},
                          {c->layout ? N : D, c->layout ? D : N, H}, {D, 3 * H, 0}};
    int rank[8] = {3, 3, 3, 2, 1, 3, 3, 2};
    for (int i = 0; i < 8; i++) {
        owned[i] = NULL;
        in[i] = none();
        if (i == 4) {
            if (c->has_lens) in[4] = (bd_tensor){BRAID_DTYPE_INT32, 1, {N}, (void *)c->lens};
            continue;
        }
        if (!src[i]) continue;
        int64_t n = 1;
        for (int d = 0; d < rank[i]; d++) n *= dims[i][d];
        size_t es = bd_dtype_size(dt);
        char *p = malloc((size_t)(n ? n : 1) * es);
        for (int64_t e = 0; e < n; e++) {
            if (dt == BRAID_DTYPE_FLOAT) ((float *)p)[e] = src[i][e];
            else if (dt == BRAID_DTYPE_DOUBLE) ((double *)p)[e] = src[i][e];
            else if (dt == BRAID_DTYPE_FLOAT16) ((uint16_t *)p)[e] = bd_float_to_half(src[i][e]);
            else ((uint16_t *)p)[e] = bd_float_to_bf16(src[i][e]);
        }
        owned[i] = p;
        in[i] = (bd_tensor){dt, rank[i], {dims[i][0], dims[i][1], dims[i][2]}, p};
    }
}

/* x rounded to dtype dt (float16 or bfloat16) and back. */
static double narrow(int dt, double x)
{
    return dt == BRAID_DTYPE_FLOAT16 ? bd_half_to_float(bd_float_to_half((float)x))
                                     : bd_bf16_to_float(bd_float_to_bf16((float)x));
}

/* Case c's node (into t) run on its inputs in dtype dt (into owned, for the
 * caller to free); its outputs in out. */
static braid_status run_case(const rcase *c, int dt, rnode *t, bd_tensor *out, void **owned, bd_err *e)
{
    bd_tensor in[8];
    make_node(t, c);
    make_inputs(c, dt, in, owned);
    return run(&t->n, in, out, e);
}

/* Runs case c in dtype dt and checks every output against the reference. */
static void check_case(rcase *c, int dt, const char *what)
{
    int64_t H = c->H, D = c->dirs;
    int half = dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
    /* float16, bfloat16: the inputs the kernel sees, rounded, are what the reference computes on */
    if (half) {
        float *arr[7] = {c->x, c->w, c->r, c->b, c->h0, c->c0, c->p};
        int64_t G = gates_of(c->cell), n[7] = {c->seq * c->batch * c->isz, D * G * H * c->isz, D * G * H * H,
                                               D * 2 * G * H, D * c->batch * H, D * c->batch * H, D * 3 * H};
        for (int i = 0; i < 7; i++)
            for (int64_t e = 0; arr[i] && e < n[i]; e++) arr[i][e] = (float)narrow(dt, arr[i][e]);
    }
    int64_t ny = c->seq * D * c->batch * H, nh = D * c->batch * H;
    double *y = calloc((size_t)ny + 1, sizeof *y), *yh = calloc((size_t)nh + 1, sizeof *yh),
           *yc = calloc((size_t)nh + 1, sizeof *yc);
    reference(c, y, yh, yc);
    rnode t;
    bd_tensor out[3] = {0};
    void *owned[8];
    bd_err e = {0};
    braid_status st = run_case(c, dt, &t, out, owned, &e);
    CHECK_EQ_INT(st, BRAID_OK);
    if (st) fprintf(stderr, "  %s: %s\n", what, e.msg);
    double *want[3] = {y, yh, yc};
    int64_t count[3] = {ny, nh, nh};
    /* float16 and bfloat16: computed in float, each output rounded once, so one
     * unit in the last place of the output (2^-10, 2^-7) over the rounded reference */
    double atol = dt == BRAID_DTYPE_DOUBLE ? 1e-12 : dt == BRAID_DTYPE_FLOAT ? 2e-5 : 1e-3;
    double rtol = dt == BRAID_DTYPE_DOUBLE ? 1e-12 : dt == BRAID_DTYPE_FLOAT ? 2e-5
                  : dt == BRAID_DTYPE_FLOAT16 ? 2e-3 : 1.6e-2;
    for (int k = 0; !st && k < t.n.n_out; k++) {
        if (t.out[k] < 0) continue;
        int bad = 0;
        for (int64_t i = 0; i < count[k]; i++) {
            double got = bd_get_f64(&out[k], i), w = want[k][i];
            if (half) w = narrow(dt, w);
            if (!(fabs(got - w) <= atol + rtol * fabs(w))) {
                if (!bad) fprintf(stderr, "  %s: output %d [%lld] = %.9g, want %.9g\n", what, k, (long long)i, got, w);
                bad++;
            }
        }
        CHECK_EQ_INT(bad, 0);
    }
    for (int i = 0; i < 8; i++) free(owned[i]);
    free(y), free(yh), free(yc);
    done(&t.n, out);
}

/* ---- tests --------------------------------------------------------------------------- */

static void test_activations(void)
{
    static const char *const names[BD_RNN_N_ACTS] = {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu",
                                                     "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",
                                                     "Softsign", "Softplus"};
    const float xs[] = {-40, -3.5f, -0.75f, -0.1f, 0, 0.1f, 0.3f, 0.75f, 2, 40};
    for (int k = 0; k < BD_RNN_N_ACTS; k++)
        for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) {
            bd_rnn_fn f = {k, 0.3f, 0.7f};
            double want = actd(names[k], 0.3f, 0.7f, xs[i]);
            CHECK_NEAR(bd_rnn_actf(f, xs[i]), want, 1e-7, 1e-6);
            CHECK_NEAR(bd_rnn_actd(f, xs[i]), want, 1e-15, 1e-14);
        }
    /* softplus does not overflow, NaN passes through, clip bounds */
    CHECK_NEAR(bd_rnn_actf((bd_rnn_fn){BD_RNN_SOFTPLUS, 0, 0}, 200.0f), 200.0, 0, 1e-7);
    CHECK(isnan(bd_rnn_actf((bd_rnn_fn){BD_RNN_SIGMOID, 0, 0}, NAN)));
    CHECK(isnan(bd_rnn_clipf(2.0f, NAN)));
    CHECK_NEAR(bd_rnn_clipf(2.0f, -5.0f), -2.0, 0, 0);
    CHECK_NEAR(bd_rnn_clipf(0.0f, -5.0f), -5.0, 0, 0);
}

static void test_quant_rules(void)
{
    float s;
    int z;
    bd_rnn_qparams(-1.0f, 2.0f, &s, &z); /* scale 3/255, zero point round(255/3 = 85) */
    CHECK_NEAR(s, 3.0 / 255, 1e-9, 0);
    CHECK_EQ_INT(z, 85);
    CHECK_EQ_INT(bd_rnn_quantize(1.0f, s, z), 170);
    CHECK_EQ_INT(bd_rnn_quantize(-2.0f, s, z), 0);  /* saturates */
    CHECK_EQ_INT(bd_rnn_quantize(9.0f, s, z), 255);
    bd_rnn_qparams(0.5f, 2.0f, &s, &z); /* the range takes in 0 */
    CHECK_NEAR(s, 2.0 / 255, 1e-9, 0);
    CHECK_EQ_INT(z, 0);
    CHECK_EQ_INT(bd_rnn_quantize(2.5f * s, s, 0), 2); /* half to even */
    CHECK_EQ_INT(bd_rnn_quantize(3.5f * s, s, 0), 4);
    bd_rnn_qparams(0, 0, &s, &z);
    CHECK_NEAR(s, 1.0, 0, 0);
    CHECK_EQ_INT(z, 0);
}

/* onnx.reference for an LSTM with bias, initial states and peepholes, made by
 * this script (onnx 1.23.2):
 *   X = [[[0.5, -1.0]], [[1.5, 0.25]]]; W = (arange(16).reshape(1, 8, 2) - 8) / 10
 *   R = (arange(16).reshape(1, 8, 2) % 5 - 2) / 8; B = linspace(-0.4, 0.4, 16).reshape(1, 16)
 *   H0 = [[[0.1, -0.2]]]; C0 = [[[0.3, 0.05]]]; P = [[0.2, -0.1, 0.05, 0.3, -0.25, 0.15]]
 *   LSTM(X, W, R, B, "", H0, C0, P, hidden_size=2) at opset 14, all float32,
 *   ReferenceEvaluator(model).run(None, feeds), printed with %.9g. */
static void test_lstm_pasted(void)
{
    float x[] = {0.5f, -1.0f, 1.5f, 0.25f}, w[16], r[16], b[16];
    for (int i = 0; i < 16; i++) {
        w[i] = (float)((i - 8) / 10.0);
        r[i] = (float)((i % 5 - 2) / 8.0);
        b[i] = (float)(-0.4 + 0.8 * i / 15.0);
    }
    float h0[] = {0.1f, -0.2f}, c0[] = {0.3f, 0.05f}, p[] = {0.2f, -0.1f, 0.05f, 0.3f, -0.25f, 0.15f};
    const double y[] = {0.0549144149, 0.0231571198, 0.0513519049, 0.0923631713};
    const double yc[] = {0.169383839, 0.22296685};
    rnode t;
    rnode_init(&t, BD_OP_LSTM, 14, 8, 3);
    r_int(&t, "hidden_size", 2);
    bd_tensor in[8] = {t3(F32, 2, 1, 2, x), t3(F32, 1, 8, 2, w), t3(F32, 1, 8, 2, r), t2(F32, 1, 16, b), none(),
                       t3(F32, 1, 1, 2, h0), t3(F32, 1, 1, 2, c0), t2(F32, 1, 6, p)};
    bd_tensor out[3] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 4);
    CHECK_EQ_INT(out[0].dims[0] * 1000 + out[0].dims[1] * 100 + out[0].dims[2] * 10 + out[0].dims[3], 2112);
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out[0].data)[i], y[i], 1e-6, 1e-5);
    for (int i = 0; i < 2; i++) CHECK_NEAR(((float *)out[1].data)[i], y[2 + i], 1e-6, 1e-5);
    for (int i = 0; i < 2; i++) CHECK_NEAR(((float *)out[2].data)[i], yc[i], 1e-6, 1e-5);
    done(&t.n, out);
}

static void test_cells(void)
{
    char what[160];
    unsigned seed = 1;
    for (int cell = 0; cell < 3; cell++)
        for (int dir = 0; dir < 3; dir++)
            for (int layout = 0; layout < 2; layout++)
                for (int variant = 0; variant < 4; variant++) {
                    rcase c = {.cell = cell, .direction = dir, .dirs = dir == 2 ? 2 : 1, .layout = layout,
                               .seq = 5, .batch = 3, .isz = 4, .H = 3 + variant};
                    c.has_b = variant != 1;
                    c.has_h0 = variant >= 2;
                    c.has_c0 = variant == 3 && cell == BD_RNN_LSTM;
                    c.has_p = variant >= 2 && cell == BD_RNN_LSTM;
                    if (variant == 1 || variant == 3) { /* sequence_lens with a 0 and a full entry */
                        c.has_lens = 1;
                        c.lens[0] = variant == 1 ? 5 : 2, c.lens[1] = 0, c.lens[2] = 4;
                    }
                    if (variant == 2) c.clip = 0.6f;
                    c.lbr = variant & 1;
                    c.input_forget = variant == 3;
                    fill(&c, seed++);
                    snprintf(what, sizeof what, "cell %d dir %d layout %d variant %d", cell, dir, layout, variant);
                    check_case(&c, BRAID_DTYPE_FLOAT, what);
                    check_case(&c, BRAID_DTYPE_DOUBLE, what);
                    check_case(&c, BRAID_DTYPE_FLOAT16, what); /* (rounds c's data to float16) */
                    if (variant == 3) check_case(&c, BRAID_DTYPE_BFLOAT16, what); /* (and to bfloat16) */
                    unfill(&c);
                }
}

/* Runs of at most 4 steps x batch entries with an R that is not packed at
 * load read R in place (rnn.c's rdirect): every cell, direction, GRU's
 * linear_before_reset both ways, with and without sequence_lens. */
static void test_few_steps(void)
{
    char what[160];
    unsigned seed = 901;
    for (int cell = 0; cell < 3; cell++)
        for (int dir = 0; dir < 3; dir++)
            for (int variant = 0; variant < 3; variant++) {
                rcase c = {.cell = cell, .direction = dir, .dirs = dir == 2 ? 2 : 1, .seq = variant ? 2 : 1,
                           .batch = variant == 2 ? 2 : 1, .isz = 5, .H = 7 + variant, .has_b = 1, .has_h0 = 1};
                c.lbr = variant & 1;
                c.has_c0 = cell == BD_RNN_LSTM;
                if (variant == 2) c.has_lens = 1, c.lens[0] = 1, c.lens[1] = 2;
                fill(&c, seed++);
                snprintf(what, sizeof what, "few steps: cell %d dir %d variant %d", cell, dir, variant);
                check_case(&c, BRAID_DTYPE_FLOAT, what);
                unfill(&c);
            }
}

static void test_activation_lists(void)
{
    static const char *const all[BD_RNN_N_ACTS] = {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu",
                                                   "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",
                                                   "Softsign", "Softplus"};
    unsigned seed = 77;
    char what[200];
    for (int cell = 0; cell < 3; cell++)
        for (int trial = 0; trial < 11; trial++) {
            rcase c = {.cell = cell, .direction = trial % 2 ? BD_RNN_BIDIRECTIONAL : BD_RNN_REVERSE,
                       .dirs = trial % 2 ? 2 : 1, .seq = 4, .batch = 2, .isz = 3, .H = 4, .has_b = 1, .has_h0 = 1};
            int per = cell == BD_RNN_LSTM ? 3 : cell == BD_RNN_GRU ? 2 : 1;
            c.n_acts = per * c.dirs;
            for (int j = 0; j < c.n_acts; j++) c.acts[j] = all[(trial + 4 * j) % BD_RNN_N_ACTS];
            c.n_alpha = trial % 3; /* some given, the rest default */
            c.n_beta = trial % 2;
            for (int j = 0; j < 6; j++) c.alpha[j] = 0.15f + 0.1f * (float)j, c.beta[j] = 0.4f - 0.05f * (float)j;
            c.clip = trial % 4 == 0 ? 1.5f : 0;
            fill(&c, seed++);
            snprintf(what, sizeof what, "cell %d trial %d (%s, ...)", cell, trial, c.acts[0]);
            check_case(&c, BRAID_DTYPE_FLOAT, what);
            check_case(&c, BRAID_DTYPE_DOUBLE, what);
            unfill(&c);
        }
    /* lower-case names, and a bidirectional GRU given one direction's list */
    rcase c = {.cell = BD_RNN_GRU, .direction = BD_RNN_BIDIRECTIONAL, .dirs = 2, .seq = 3, .batch = 2, .isz = 3,
               .H = 2, .n_acts = 2, .acts = {"hardsigmoid", "softsign"}, .n_alpha = 1, .alpha = {0.3f},
               .n_beta = 1, .beta = {0.45f}};
    fill(&c, 5);
    check_case(&c, BRAID_DTYPE_FLOAT, "GRU with one direction's activations");
    unfill(&c);
}

static void test_omitted_outputs_and_edges(void)
{
    /* each output alone */
    for (int keep = 0; keep < 3; keep++) {
        rcase c = {.cell = BD_RNN_LSTM, .direction = BD_RNN_BIDIRECTIONAL, .dirs = 2, .seq = 3, .batch = 2, .isz = 2,
                   .H = 3, .has_b = 1, .has_lens = 1, .lens = {1, 3}};
        for (int k = 0; k < 3; k++) c.omit[k] = k != keep;
        fill(&c, 11 + keep);
        check_case(&c, BRAID_DTYPE_FLOAT, "one output");
        unfill(&c);
    }
    bd_err e = {0};
    /* an empty batch and an empty sequence */
    float w[12 * 2], r[12 * 3], h0[3] = {1, 2, 3};
    for (int i = 0; i < 24; i++) w[i] = 0.1f * (float)i;
    for (int i = 0; i < 36; i++) r[i] = 0.05f * (float)i;
    rnode t;
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    r_int(&t, "hidden_size", 3);
    float x1[1];
    bd_tensor in[8] = {t3(F32, 4, 0, 2, x1), t3(F32, 1, 12, 2, w), t3(F32, 1, 12, 3, r), none(), none(), none(),
                       none(), none()};
    bd_tensor out[3] = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[2], 0);
    CHECK_EQ_INT(bd_numel(&out[1]), 0);
    done(&t.n, out);
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    r_int(&t, "hidden_size", 3);
    in[0] = t3(F32, 0, 1, 2, x1);
    in[5] = t3(F32, 1, 1, 3, h0);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(bd_numel(&out[0]), 0);
    for (int j = 0; j < 3; j++) CHECK_NEAR(((float *)out[1].data)[j], 0, 0, 0); /* no step ran: length 0 */
    done(&t.n, out);
    /* NaN in X reaches Y from its step on (through the state: NaN * 0 is NaN), not before */
    float xn[3 * 2] = {0.5f, 0.25f, NAN, 1, 0.1f, 0.2f};
    rnode_init(&t, BD_OP_RNN, 22, 6, 1);
    r_int(&t, "hidden_size", 3);
    float rw[3 * 2] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, rr[9] = {0};
    bd_tensor rin[6] = {t3(F32, 3, 1, 2, xn), t3(F32, 1, 3, 2, rw), t3(F32, 1, 3, 3, rr), none(), none(), none()};
    CHECK_EQ_INT(run(&t.n, rin, out, &e), BRAID_OK);
    float *y = out[0].data;
    CHECK(!isnan(y[0]) && !isnan(y[1]) && !isnan(y[2]));
    CHECK(isnan(y[3]) && isnan(y[4]) && isnan(y[5]));
    CHECK(isnan(y[6]) && isnan(y[8]));
    done(&t.n, out);
}

/* Case c run on `threads` intra-op threads: its Y (float), malloc'ed. */
static float *y_of(rcase *c, int threads)
{
    rnode t;
    bd_tensor out[3] = {0};
    void *owned[8];
    bd_err e = {0};
    int saved = g_threads;
    g_threads = threads;
    braid_status st = run_case(c, BRAID_DTYPE_FLOAT, &t, out, owned, &e);
    g_threads = saved;
    CHECK_EQ_INT(st, BRAID_OK);
    size_t n = (size_t)(c->seq * c->dirs * c->batch * c->H);
    float *y = malloc(n * sizeof *y);
    if (!st) memcpy(y, out[0].data, n * sizeof *y);
    for (int i = 0; i < 8; i++) free(owned[i]);
    done(&t.n, out);
    return y;
}

/* A state product big enough for intra-op threads (batch x 4H x H of at
 * least rnn.c's PAR_MACS): R^T's panels cut into fixed parts, one per
 * thread, walked backwards on odd steps; lone rows in AVX-512 where the CPU
 * has it. Against the reference at 2 threads; 1, 2 and 3 threads (a part
 * more than the pool may have cores) give the same bits; batch 1 (a lone
 * row) and 5 (a block of 4 and a lone row), forward and bidirectional. */
static void test_threads_parts(void)
{
    unsigned seed = 1201;
    for (int v = 0; v < 3; v++) {
        rcase c = {.cell = BD_RNN_LSTM, .direction = v == 2 ? 2 : 0, .dirs = v == 2 ? 2 : 1, .seq = 4,
                   .batch = v == 1 ? 5 : 1, .isz = 8, .H = 256, .has_b = 1, .has_h0 = 1};
        fill(&c, seed++);
        /* weights scaled so that gates stay off saturation over 256 terms */
        for (int64_t i = 0; i < c.dirs * 4 * c.H * c.H; i++) c.r[i] *= 0.0625f;
        g_threads = 2;
        check_case(&c, BRAID_DTYPE_FLOAT, v == 0 ? "threads: batch 1" : v == 1 ? "threads: batch 5" : "threads: bidir");
        g_threads = 1;
        float *y1 = y_of(&c, 1), *y2 = y_of(&c, 2), *y3 = y_of(&c, 3);
        size_t n = (size_t)(c.seq * c.dirs * c.batch * c.H);
        CHECK(memcmp(y1, y2, n * sizeof *y1) == 0);
        CHECK(memcmp(y1, y3, n * sizeof *y1) == 0);
        free(y1), free(y2), free(y3);
        unfill(&c);
    }
}

/* Runs node n on in and returns its outputs (caller frees data). */
static braid_status run_node(bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st = bd_op_infer(n, in, out, e);
    if (st) return st;
    for (int i = 0; i < n->n_out; i++) {
        size_t nb;
        bd_tensor_nbytes(&out[i], &nb, e);
        out[i].data = calloc(1, nb + 1);
    }
    bd_kernel k = {.node = n, .in = in, .n_in = n->n_in, .out = out, .n_out = n->n_out, .threads = 2, .err = e};
    return bd_cpu_run(&k);
}

/* The load-time rewrite: a bidirectional GRU with constant weights becomes two
 * halves (R transposed) and two Concats, which together give the node's outputs. */
static void test_rewrite(void)
{
    bd_err e = {0};
    bd_graph g = {0};
    int64_t S = 4, N = 2, I = 3, H = 5, G = 3;
    unsigned seed = 9;
    float *x = randn(S * N * I, &seed), *w = randn(2 * G * H * I, &seed), *r = randn(2 * G * H * H, &seed);
    float *b = randn(2 * 2 * G * H, &seed), *h0 = randn(2 * N * H, &seed);
    const char *names[] = {"X", "W", "R", "B", "h0", "Y", "Y_h"};
    for (int i = 0; i < 7; i++) CHECK_EQ_INT(bd_graph_add_value(&g, names[i]), i);
    float *consts[3] = {w, r, b};
    int64_t cdims[3][3] = {{2, G * H, I}, {2, G * H, H}, {2, 2 * G * H, 0}};
    for (int i = 0; i < 3; i++) {
        bd_value *v = &g.values[1 + i];
        v->dtype = F32;
        v->rank = i == 2 ? 2 : 3;
        memcpy(v->dims, cdims[i], sizeof cdims[i]);
        size_t n = (size_t)(v->dims[0] * v->dims[1] * (v->rank == 3 ? v->dims[2] : 1));
        v->data = bd_malloc(n * sizeof(float));
        memcpy(v->data, consts[i], n * sizeof(float));
        v->flags = BD_VAL_CONST;
    }
    g.values[0].flags = g.values[4].flags = BD_VAL_INPUT;
    g.values[5].flags = g.values[6].flags = BD_VAL_OUTPUT;
    g.nodes = bd_calloc(2, sizeof *g.nodes);
    g.n_nodes = 1;
    bd_node *nd = &g.nodes[0];
    nd->name = bd_strdup("gru");
    nd->op_type = bd_strdup("GRU");
    nd->domain = bd_strdup("");
    nd->op = BD_OP_GRU;
    nd->opset = 22;
    nd->n_in = 6, nd->n_out = 2;
    nd->in = bd_malloc(6 * sizeof(int));
    nd->out = bd_malloc(2 * sizeof(int));
    int ins[6] = {0, 1, 2, 3, -1, 4};
    memcpy(nd->in, ins, sizeof ins);
    nd->out[0] = 5, nd->out[1] = 6;
    nd->attrs = bd_calloc(3, sizeof(bd_attr));
    nd->attrs[0] = (bd_attr){.name = bd_strdup("hidden_size"), .type = BD_ATTR_INT, .i = H};
    nd->attrs[1] = (bd_attr){.name = bd_strdup("direction"), .type = BD_ATTR_STRING, .s = bd_strdup("bidirectional")};
    nd->attrs[2] = (bd_attr){.name = bd_strdup("linear_before_reset"), .type = BD_ATTR_INT, .i = 1};
    nd->n_attrs = 3;
    CHECK_EQ_INT(bd_op_parse(nd, &e), BRAID_OK);
    /* the node's own outputs first, unsplit */
    bd_tensor in[6] = {t3(F32, S, N, I, x), t3(F32, 2, G * H, I, w), t3(F32, 2, G * H, H, r), t2(F32, 2, 2 * G * H, b),
                       none(), t3(F32, 2, N, H, h0)};
    bd_tensor whole[2] = {0};
    CHECK_EQ_INT(run_node(nd, in, whole, &e), BRAID_OK);

    CHECK_EQ_INT(bd_graph_rewrite_rnn(&g, &e), BRAID_OK);
    CHECK_EQ_INT(g.n_nodes, 4);
    int fwd = -1, rev = -1, cy = -1, ch = -1;
    for (int i = 0; i < g.n_nodes; i++) {
        const char *s = g.nodes[i].name;
        if (!strcmp(s, "gru/forward")) fwd = i;
        if (!strcmp(s, "gru/reverse")) rev = i;
        if (!strcmp(s, "gru/concat_Y")) cy = i;
        if (!strcmp(s, "gru/concat_Y_h")) ch = i;
    }
    CHECK(fwd >= 0 && rev >= 0 && cy >= 0 && ch >= 0);
    if (fwd < 0 || rev < 0 || cy < 0 || ch < 0) goto out;
    CHECK(cy > fwd && cy > rev && ch > fwd && ch > rev); /* ordered */
    const bd_rnn_params *pf = g.nodes[fwd].params, *pr = g.nodes[rev].params;
    CHECK_EQ_INT(pf->part, 0);
    CHECK_EQ_INT(pr->part, 1);
    CHECK_EQ_INT(pf->r_transposed, 1);
    CHECK_EQ_INT(g.nodes[cy].out[0], 5);
    CHECK_EQ_INT(g.nodes[ch].out[0], 6);
    int rt = g.nodes[fwd].in[2];
    CHECK(rt != 2 && g.nodes[rev].in[2] == rt);         /* one transposed R, shared */
    CHECK(!(g.values[2].flags & BD_VAL_CONST));           /* the original is gone */
    const bd_value *tv = &g.values[rt];
    CHECK_EQ_INT(tv->dims[1] * 100 + tv->dims[2], H * 100 + G * H);
    int ok = 1; /* R^T[d][k][n] = R[d][n][k] */
    for (int64_t d = 0; d < 2; d++)
        for (int64_t n = 0; n < G * H; n++)
            for (int64_t k = 0; k < H; k++)
                ok &= ((float *)tv->data)[(d * H + k) * G * H + n] == r[(d * G * H + n) * H + k];
    CHECK(ok);
    /* the halves on the transposed R, joined by the Concats, give the same bits */
    bd_tensor hin[6];
    memcpy(hin, in, sizeof hin);
    hin[2] = t3(F32, 2, H, G * H, tv->data);
    bd_tensor half[2][2] = {{{0}}};
    CHECK_EQ_INT(run_node(&g.nodes[fwd], hin, half[0], &e), BRAID_OK);
    CHECK_EQ_INT(run_node(&g.nodes[rev], hin, half[1], &e), BRAID_OK);
    for (int k = 0; k < 2; k++) {
        const bd_node *cn = &g.nodes[k == 0 ? cy : ch];
        bd_tensor cin[2] = {half[0][k], half[1][k]}, cout[1] = {0};
        CHECK_EQ_INT(run_node((bd_node *)cn, cin, cout, &e), BRAID_OK);
        CHECK(bd_shape_equal(&cout[0], &whole[k]));
        CHECK(memcmp(cout[0].data, whole[k].data, (size_t)bd_numel(&whole[k]) * sizeof(float)) == 0);
        free(cout[0].data);
    }
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 2; k++) free(half[d][k].data);
out:
    free(whole[0].data), free(whole[1].data);
    bd_graph_free(&g);
    free(x), free(w), free(r), free(b), free(h0);
}

/* DynamicQuantizeLSTM where quantizing is exact: one step, X in {0, 1} (scale
 * 1/255, zero point 0), no initial state (the state quantizes to 0 exactly):
 * the same as an LSTM on the dequantized weights, W^T (dirs, 4H, input). */
static void test_dynamic_quantize(void)
{
    int64_t I = 3, H = 2, G4 = 8;
    float x[2 * 3] = {1, 0, 1, 0, 1, 1}; /* (seq 1, batch 2, input 3) */
    int8_t wq[3 * 8], rq[2 * 8];
    for (int i = 0; i < 24; i++) wq[i] = (int8_t)((i * 37) % 101 - 50);
    for (int i = 0; i < 16; i++) rq[i] = (int8_t)((i * 53) % 97 - 48);
    float ws[8], rs = 0.02f, b[16], wf[8 * 3], rf[8 * 2];
    int8_t wz[8] = {0}, rz[1] = {0};
    for (int n = 0; n < 8; n++) ws[n] = 0.01f + 0.002f * (float)n;
    for (int i = 0; i < 16; i++) b[i] = 0.05f * (float)(i % 7) - 0.1f;
    for (int64_t n = 0; n < G4; n++) {
        for (int64_t i = 0; i < I; i++) wf[n * I + i] = (float)wq[i * G4 + n] * ws[n];
        for (int64_t i = 0; i < H; i++) rf[n * H + i] = (float)rq[i * G4 + n] * rs;
    }
    bd_err e = {0};
    rnode q;
    rnode_init(&q, BD_OP_MS_DynamicQuantizeLSTM, 1, 12, 3);
    r_int(&q, "hidden_size", H);
    bd_tensor in[12] = {t3(F32, 1, 2, 3, x), t3(BRAID_DTYPE_INT8, 1, 3, 8, wq), t3(BRAID_DTYPE_INT8, 1, 2, 8, rq),
                        t2(F32, 1, 16, b), none(), none(), none(), none(), t2(F32, 1, 8, ws),
                        t2(BRAID_DTYPE_INT8, 1, 8, wz), (bd_tensor){F32, 1, {1}, &rs},
                        (bd_tensor){BRAID_DTYPE_INT8, 1, {1}, rz}};
    bd_tensor qo[3] = {0}, fo[3] = {0};
    CHECK_EQ_INT(run(&q.n, in, qo, &e), BRAID_OK);
    rnode f;
    rnode_init(&f, BD_OP_LSTM, 22, 8, 3);
    r_int(&f, "hidden_size", H);
    bd_tensor fin[8] = {in[0], t3(F32, 1, 8, 3, wf), t3(F32, 1, 8, 2, rf), in[3], none(), none(), none(), none()};
    CHECK_EQ_INT(run(&f.n, fin, fo, &e), BRAID_OK);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)qo[k].data)[i], ((float *)fo[k].data)[i], 1e-6, 1e-5);
    done(&q.n, qo);
    done(&f.n, fo);
    /* its errors: a zero point of another dtype than W, scales of the wrong shape */
    rnode_init(&q, BD_OP_MS_DynamicQuantizeLSTM, 1, 12, 3);
    r_int(&q, "hidden_size", H);
    uint8_t uz[8] = {0};
    in[9] = t2(BRAID_DTYPE_UINT8, 1, 8, uz);
    CHECK_EQ_INT(run(&q.n, in, qo, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "W_zero_point");
    done(&q.n, qo);
    rnode_init(&q, BD_OP_MS_DynamicQuantizeLSTM, 1, 12, 3);
    r_int(&q, "hidden_size", H);
    in[9] = t2(BRAID_DTYPE_INT8, 1, 8, wz);
    in[8] = t2(F32, 1, 7, ws);
    CHECK_EQ_INT(run(&q.n, in, qo, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "W_scale");
    done(&q.n, qo);
}

/* A node of the given op with W/R of hidden size `wh`, for error checks. */
static braid_status try_node(rnode *t, bd_tensor *in, bd_tensor *out, bd_err *e)
{
    return run(&t->n, in, out, e);
}

static void test_errors(void)
{
    bd_err e = {0};
    float x[2 * 1 * 3] = {0}, w[16 * 3] = {0}, r[16 * 4] = {0}, b[32] = {0};
    bd_tensor in[8] = {t3(F32, 2, 1, 3, x), t3(F32, 1, 16, 3, w), t3(F32, 1, 16, 4, r), t2(F32, 1, 32, b), none(),
                       none(), none(), none()};
    bd_tensor out[3] = {0};
    rnode t;
    /* weights that do not fit hidden_size: SHAPE, naming the input and the shape wanted */
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    r_int(&t, "hidden_size", 3);
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "input W has shape 1x16x3");
    CHECK_CONTAINS(e.msg, "hidden_size 3 needs 1x12x3");
    done(&t.n, out);
    /* R's hidden size against W's */
    float r5[16 * 5] = {0};
    in[2] = t3(F32, 1, 16, 5, r5);
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    r_int(&t, "hidden_size", 4);
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "input R has shape 1x16x5");
    done(&t.n, out);
    in[2] = t3(F32, 1, 16, 4, r);
    /* B of the wrong size */
    in[3] = t2(F32, 1, 30, b);
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_SHAPE); /* (hidden size from R: 4) */
    CHECK_CONTAINS(e.msg, "input B has shape 1x30");
    done(&t.n, out);
    in[3] = t2(F32, 1, 32, b);
    /* a bidirectional node with one direction of weights */
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    r_str(&t, "direction", "bidirectional");
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "bidirectional");
    done(&t.n, out);
    /* dtypes */
    double wd[16 * 3] = {0};
    in[1] = t3(BRAID_DTYPE_DOUBLE, 1, 16, 3, wd);
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "input W has dtype float64");
    done(&t.n, out);
    in[1] = t3(F32, 1, 16, 3, w);
    /* attributes: an unknown activation, a wrong count, a bad direction, clip, layout */
    const char *acts[3] = {"Sigmoid", "Swish", "Tanh"};
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    r_strs(&t, "activations", acts, 3);
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "activation 'Swish' is not one of");
    done(&t.n, out);
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    r_strs(&t, "activations", acts, 2);
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "has 2 functions");
    done(&t.n, out);
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    r_str(&t, "direction", "sideways");
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'sideways'");
    done(&t.n, out);
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    r_float(&t, "clip", -1);
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "clip");
    done(&t.n, out);
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    r_int(&t, BD_RNN_PART_ATTR, 1); /* only for bidirectional nodes */
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&t.n, out);
    /* sequence_lens: a constant out of range at plan time, a value at run time */
    int32_t lens[1] = {3};
    in[4] = (bd_tensor){BRAID_DTYPE_INT32, 1, {1}, lens};
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "sequence_lens[0] is 3, outside [0, 2]");
    done(&t.n, out);
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    bd_tensor unknown = in[4];
    unknown.data = NULL; /* not known at plan time */
    bd_tensor iin[8];
    memcpy(iin, in, sizeof iin);
    iin[4] = unknown;
    CHECK_EQ_INT(bd_op_infer(&t.n, iin, out, &e), BRAID_OK);
    for (int i = 0; i < 2; i++) out[i].data = calloc(64, 1);
    bd_kernel k = {.node = &t.n, .in = in, .n_in = 8, .out = out, .n_out = 2, .threads = 1, .err = &e};
    lens[0] = -1;
    CHECK_EQ_INT(bd_cpu_run(&k), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "sequence_lens[0] is -1");
    done(&t.n, out);
    int64_t l64[1] = {1};
    in[4] = (bd_tensor){BRAID_DTYPE_INT64, 1, {1}, l64};
    rnode_init(&t, BD_OP_LSTM, 22, 8, 2);
    CHECK_EQ_INT(try_node(&t, in, out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "int32");
    done(&t.n, out);
}

int main(void)
{
    test_activations();
    test_quant_rules();
    test_lstm_pasted();
    test_cells();
    test_few_steps();
    test_threads_parts();
    test_activation_lists();
    test_omitted_outputs_and_edges();
    test_rewrite();
    test_dynamic_quantize();
    test_errors();
    return check_done();
}
