/* cuda_logic.c: the CUDA backend's host-only decisions (cuda_logic.h): fault
 * texts, the cuDNN algorithm choice and its process-wide cache, cuDNN's size
 * limits, the version line, the I/O mode switch, workspace sizes and a plan's
 * traffic. Plain C, no CUDA: the CPU tests run every line of it. */
#include "backend/cuda_logic.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ops/conv.h"

/* ---- fault texts ------------------------------------------------------------------ */

int bd_cuda_sync_enabled(const char *v)
{
    if (!v) return 0;
    return !strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcasecmp(v, "true");
}

const char *bd_cu_call_name(const char *expr, char *buf, size_t n)
{
    if (!n) return buf;
    if (!expr) expr = "";
    while (isspace((unsigned char)*expr)) expr++;
    size_t len = 0;
    while (expr[len] && (isalnum((unsigned char)expr[len]) || expr[len] == '_')) len++;
    const char *p = expr + len;
    while (isspace((unsigned char)*p)) p++;
    if (len == 0 || *p != '(') len = strlen(expr); /* not NAME(...): the whole text */
    if (len >= n) len = n - 1;
    memcpy(buf, expr, len);
    buf[len] = '\0';
    return buf;
}

void bd_cu_call_text(char *buf, size_t n, const char *expr, const char *err)
{
    char name[160];
    snprintf(buf, n, "%s: %s", bd_cu_call_name(expr, name, sizeof name), err);
}

void bd_cu_node_prefix(char *buf, size_t n, const char *node, const char *op, int stream)
{
    snprintf(buf, n, "node '%s' (%s) on stream %d: ", node, op, stream);
}

void bd_cu_earlier_prefix(char *buf, size_t n, const char *node, const char *op, int stream)
{
    snprintf(buf, n, "an asynchronous CUDA error from earlier work surfaced while node '%s' (%s) on stream %d "
             "was enqueued (that node did not necessarily cause it; rerun with " BD_CUDA_SYNC_ENV "=1 to find the "
             "node that did): ", node, op, stream);
}

void bd_cu_async_text(char *buf, size_t n, const char *call, const char *err, int sticky)
{
    snprintf(buf, n, "the run ended with an asynchronous CUDA error (%s: %s): any node of the run may have "
             "caused it; rerun with " BD_CUDA_SYNC_ENV "=1 to name the node%s", call, err,
             sticky ? ". The CUDA context is now unusable: every later CUDA call of this process fails; restart it"
                    : "");
}

/* ---- cuDNN algorithm choice ---------------------------------------------------------- */

static int eligible(const bd_algo_cand *c, size_t budget, int tf32)
{
    if (c->ws > budget || c->math == BD_MATH_ALLOW_CONVERSION) return 0;
    return tf32 || c->math == BD_MATH_FMA || c->math == BD_MATH_DEFAULT;
}

void bd_algo_choose(const bd_algo_cand *cands, int n, size_t budget, int tf32, bd_algo_timer timer, void *ctx,
                    int fallback_algo, bd_algo_pick *out)
{
    bd_algo_cand list[BD_ALGO_MAX_TIMED];
    int m = 0;
    memset(out, 0, sizeof *out);
    /* The eligible candidates in the heuristic's order; with TF32 off, one per
     * algorithm, run with FMA math (an FMA entry and a DEFAULT entry of one
     * algorithm are the same run then). */
    for (int i = 0; i < n; i++) {
        if (!eligible(&cands[i], budget, tf32)) continue;
        bd_algo_cand c = cands[i];
        if (!tf32) c.math = BD_MATH_FMA;
        int dup = 0;
        for (int j = 0; j < m && !dup; j++) dup = list[j].algo == c.algo && list[j].math == c.math;
        if (dup) continue;
        out->eligible++;
        if (m < BD_ALGO_MAX_TIMED) list[m++] = c;
    }
    if (m == 0) {
        out->algo = fallback_algo;
        out->math = tf32 ? BD_MATH_DEFAULT : BD_MATH_FMA;
        out->fallback = 1;
        return;
    }
    int best = -1;
    double best_ms = 0;
    for (int i = 0; timer && i < m; i++) {
        double ms = 0;
        out->timed++;
        if (timer(ctx, &list[i], &ms) != 0 || !(ms >= 0)) { out->refused++; continue; }
        if (best < 0 || ms < best_ms) best = i, best_ms = ms;
    }
    if (best >= 0) {
        out->tuned = 1;
        out->ms = best_ms;
    } else {
        best = 0;
    }
    out->algo = list[best].algo;
    out->math = list[best].math;
    out->ws = list[best].ws;
}

#define ALGO_CACHE 512
static struct {
    pthread_mutex_t mu;
    int n, next;
    long hits, misses;
    bd_algo_key key[ALGO_CACHE];
    bd_algo_pick pick[ALGO_CACHE];
} g_algo = {.mu = PTHREAD_MUTEX_INITIALIZER};

int bd_algo_cache_get(const bd_algo_key *k, bd_algo_pick *out)
{
    int found = 0;
    pthread_mutex_lock(&g_algo.mu);
    for (int i = 0; i < g_algo.n && !found; i++)
        if (!memcmp(&g_algo.key[i], k, sizeof *k)) {
            *out = g_algo.pick[i];
            found = 1;
        }
    if (found) g_algo.hits++;
    else g_algo.misses++;
    pthread_mutex_unlock(&g_algo.mu);
    return found;
}

void bd_algo_cache_put(const bd_algo_key *k, const bd_algo_pick *p)
{
    pthread_mutex_lock(&g_algo.mu);
    int slot = -1;
    for (int i = 0; i < g_algo.n && slot < 0; i++)
        if (!memcmp(&g_algo.key[i], k, sizeof *k)) slot = i;
    if (slot < 0) {
        if (g_algo.n < ALGO_CACHE) slot = g_algo.n++;
        else slot = g_algo.next, g_algo.next = (g_algo.next + 1) % ALGO_CACHE; /* full: replace the oldest */
    }
    g_algo.key[slot] = *k;
    g_algo.pick[slot] = *p;
    pthread_mutex_unlock(&g_algo.mu);
}

void bd_algo_cache_stats(long *hits, long *misses, int *entries)
{
    pthread_mutex_lock(&g_algo.mu);
    if (hits) *hits = g_algo.hits;
    if (misses) *misses = g_algo.misses;
    if (entries) *entries = g_algo.n;
    pthread_mutex_unlock(&g_algo.mu);
}

void bd_algo_cache_clear(void)
{
    pthread_mutex_lock(&g_algo.mu);
    g_algo.n = g_algo.next = 0;
    g_algo.hits = g_algo.misses = 0;
    pthread_mutex_unlock(&g_algo.mu);
}

/* ---- cuDNN's limits ------------------------------------------------------------------- */

static void dims_str(int rank, const int64_t *dims, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && o + 1 < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "x" : "", (long long)dims[i]);
}

braid_status bd_cudnn_check_tensor(const char *what, int rank, const int64_t *dims, bd_err *e)
{
    char ds[200];
    int64_t count = 1;
    int over = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] > BD_CUDNN_MAX_ELEMS) {
            dims_str(rank, dims, ds, sizeof ds);
            return BD_FAIL(e, BRAID_ERR_LIMIT, "%s (%s) has a dim of %lld, more than the %lld (2^31 - 1) cuDNN "
                           "takes", what, ds, (long long)dims[i], BD_CUDNN_MAX_ELEMS);
        }
        /* packed strides are products of inner dims: the count bounds them all */
        if (dims[i] > 0 && count > BD_CUDNN_MAX_ELEMS / dims[i]) over = 1;
        count = over ? count : count * dims[i];
    }
    if (over || count > BD_CUDNN_MAX_ELEMS) {
        dims_str(rank, dims, ds, sizeof ds);
        return BD_FAIL(e, BRAID_ERR_LIMIT, "%s (%s) has more than the %lld (2^31 - 1) elements cuDNN takes in one "
                       "tensor", what, ds, BD_CUDNN_MAX_ELEMS);
    }
    return BRAID_OK;
}

braid_status bd_cudnn_conv_limits(const bd_node *n, const bd_tensor *x, const bd_tensor *w, const bd_tensor *y,
                                  bd_err *e)
{
    braid_status st;
    bd_conv_geom g;
    int tr = n->op == BD_OP_ConvTranspose;
    if ((st = bd_conv_geometry(n, x, w, NULL, &g, e))) return st;
    int64_t xd[2 + BD_CONV_MAX_SPATIAL] = {g.n, g.c_in}, yd[2 + BD_CONV_MAX_SPATIAL] = {g.n, g.c_out};
    int sym = 1, r = 2 + g.nsp;
    for (int i = 0; i < g.nsp; i++) {
        sym &= g.pb[i] == g.pe[i];
        const int64_t v[5] = {g.k[i], g.s[i], g.d[i], g.pb[i] < 0 ? -g.pb[i] : g.pb[i], g.pe[i] < 0 ? -g.pe[i] : g.pe[i]};
        for (int j = 0; j < 5; j++)
            if (v[j] > BD_CUDNN_MAX_ELEMS)
                return BD_FAIL(e, BRAID_ERR_LIMIT, "spatial dim %d has a kernel, stride, dilation or pad of %lld, "
                               "more than the %lld (2^31 - 1) cuDNN takes", i, (long long)v[j], BD_CUDNN_MAX_ELEMS);
        xd[2 + i] = g.x[i];
        yd[2 + i] = g.y[i];
    }
    if ((st = bd_cudnn_check_tensor("the weights", w->rank, w->dims, e))) return st;
    if (!tr) {
        for (int i = 0; i < g.nsp && !sym; i++) xd[2 + i] = g.x[i] + g.pb[i] + g.pe[i];
        if ((st = bd_cudnn_check_tensor(sym ? "the input" : "the zero-padded input", r, xd, e))) return st;
        return bd_cudnn_check_tensor("the output", y ? y->rank : r, y ? y->dims : yd, e);
    }
    if ((st = bd_cudnn_check_tensor("the input", r, xd, e))) return st;
    if ((st = bd_cudnn_check_tensor("the output", y ? y->rank : r, y ? y->dims : yd, e))) return st;
    /* The uncropped output that asymmetric or negative pads, or an
     * output_padding cuDNN does not infer, make (the kernel's setup decides;
     * checked either way). */
    for (int i = 0; i < g.nsp; i++) yd[2 + i] = g.s[i] * (g.x[i] - 1) + (g.k[i] - 1) * g.d[i] + 1;
    return bd_cudnn_check_tensor("the uncropped output", r, yd, e);
}

/* ---- versions ------------------------------------------------------------------------ */

void bd_cudnn_version_split(long v, int *major, int *minor, int *patch)
{
    long per = v >= 90000 ? 10000 : 1000;
    *major = (int)(v / per);
    *minor = (int)(v % per / 100);
    *patch = (int)(v % 100);
}

int bd_nvidia_driver_release(const char *text, char *buf, size_t n)
{
    if (n) buf[0] = '\0';
    const char *p = text ? strstr(text, "Kernel Module") : NULL;
    if (!p || !n) return 0;
    p += strlen("Kernel Module");
    /* The first word of digits and dots with a dot in it, on that line
     * ("Kernel Module  580.65.06  Sun Jul 27", "Open Kernel Module for x86_64  575.57.08"). */
    while (*p && *p != '\n') {
        while (*p == ' ' || *p == '\t') p++;
        size_t len = 0;
        int dot = 0, other = 0;
        while (p[len] && !isspace((unsigned char)p[len])) {
            dot |= p[len] == '.';
            other |= !isdigit((unsigned char)p[len]) && p[len] != '.';
            len++;
        }
        if (len && dot && !other && isdigit((unsigned char)p[0])) {
            if (len >= n) len = n - 1;
            memcpy(buf, p, len);
            buf[len] = '\0';
            return 1;
        }
        p += len;
    }
    return 0;
}

static int cuda_ver(char *buf, size_t n, int v) { return snprintf(buf, n, "%d.%d", v / 1000, v % 1000 / 10); }

void bd_cuda_version_line(char *buf, size_t n, const bd_cuda_versions *v)
{
    char drv[96], rt[32], api[32], dnn[64], dnn_b[32], blas[64];
    int a, b, c;
    cuda_ver(api, sizeof api, v->driver_api);
    if (v->driver[0]) snprintf(drv, sizeof drv, "driver %s (CUDA %s)", v->driver, api);
    else snprintf(drv, sizeof drv, "driver for CUDA %s", api);
    cuda_ver(rt, sizeof rt, v->runtime);
    bd_cudnn_version_split(v->cudnn, &a, &b, &c);
    snprintf(dnn, sizeof dnn, "cuDNN %d.%d.%d", a, b, c);
    if (v->cudnn_built && v->cudnn_built != v->cudnn) {
        bd_cudnn_version_split(v->cudnn_built, &a, &b, &c);
        snprintf(dnn_b, sizeof dnn_b, " (built with %d.%d.%d)", a, b, c);
        strncat(dnn, dnn_b, sizeof dnn - strlen(dnn) - 1);
    }
    snprintf(blas, sizeof blas, "cuBLAS %d.%d.%d", v->cublas[0], v->cublas[1], v->cublas[2]);
    int run_blas = v->cublas[0] * 10000 + v->cublas[1] * 100 + v->cublas[2];
    if (v->cublas_built && v->cublas_built != run_blas) {
        char t[40];
        snprintf(t, sizeof t, " (built with %d.%d.%d)", v->cublas_built / 10000, v->cublas_built % 10000 / 100,
                 v->cublas_built % 100);
        strncat(blas, t, sizeof blas - strlen(blas) - 1);
    }
    char bw[32] = "";
    if (v->mem_bw > 0) snprintf(bw, sizeof bw, ", %.0f GB/s", v->mem_bw / 1e9);
    snprintf(buf, n, "%s (sm_%d%d, %d SMs, %.1f GiB%s); %s; runtime %s; %s; %s; I/O %s", v->name, v->cc_major,
             v->cc_minor, v->sms, (double)v->mem_bytes / (1024.0 * 1024.0 * 1024.0), bw, drv, rt, dnn, blas,
             v->io ? v->io : "?");
}

/* ---- I/O modes ------------------------------------------------------------------------- */

static const char *const io_names[] = {"staged", "mapped", "managed"};

const char *bd_cuda_io_name(int mode)
{
    return mode >= 0 && mode < (int)(sizeof io_names / sizeof *io_names) ? io_names[mode] : "unknown";
}

braid_status bd_cuda_io_parse(const char *value, int *mode, bd_err *e)
{
    *mode = BD_IO_DEFAULT;
    if (!value || !*value) return BRAID_OK;
    for (int i = 0; i < (int)(sizeof io_names / sizeof *io_names); i++)
        if (!strcasecmp(value, io_names[i])) {
            *mode = i;
            return BRAID_OK;
        }
    return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, BD_CUDA_IO_ENV " is '%s'; it must be staged, mapped or managed "
                   "(or unset: %s)", value, bd_cuda_io_name(BD_IO_DEFAULT));
}

/* ---- host nodes --------------------------------------------------------------------------- */

static int host_value(const bd_inst *x, int v)
{
    if (v < 0) return 0;
    int dt = x->vals[v].dtype ? x->vals[v].dtype : x->g->values[v].dtype;
    return dt == BRAID_DTYPE_STRING || bd_dt_container(dt);
}

int bd_cuda_host_node(const bd_node *n, const bd_inst *x)
{
    unsigned flags = bd_op_table[n->op].flags;
    if (flags & BD_OPF_SUBGRAPHS) return 0;
    if (flags & BD_OPF_HOST) return 1;
    for (int k = 0; k < n->n_in; k++)
        if (host_value(x, n->in[k])) return 1;
    for (int k = 0; k < n->n_out; k++)
        if (host_value(x, n->out[k])) return 1;
    return 0;
}

/* ---- sizes ------------------------------------------------------------------------------- */

size_t bd_cublas_workspace_bytes(int cc_major) { return (size_t)(cc_major >= 9 ? 32 : 4) << 20; }

double bd_plan_traffic_bytes(const bd_prepared *p)
{
    double total = 0;
    for (int i = 0; i < p->n_live; i++) {
        const bd_node *n = p->inst.node[p->live[i]];
        for (int pass = 0; pass < 2; pass++) {
            int cnt = pass ? n->n_out : n->n_in;
            const int *idx = pass ? n->out : n->in;
            for (int k = 0; k < cnt; k++) {
                size_t nb = 0;
                bd_err e = {0};
                if (idx[k] >= 0 && bd_tensor_nbytes(&p->inst.vals[idx[k]], &nb, &e) == BRAID_OK) total += (double)nb;
            }
        }
    }
    return total;
}
