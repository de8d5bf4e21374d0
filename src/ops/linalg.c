/* linalg.c: attribute parsing, shape inference and cost of the linalg op
 * family: Einsum (any valid equation, lowered here to a program of gathers,
 * sums and batched GEMMs that the kernels execute), Det, and the
 * com.microsoft FusedMatMul and FusedGemm. */
#include "linalg.h"

#include <string.h>

#include "gemm.h"

static int float_kind(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 ||
           dt == BRAID_DTYPE_BFLOAT16;
}

static int int_kind(int dt)
{
    return (dt >= BRAID_DTYPE_UINT8 && dt <= BRAID_DTYPE_INT64) || dt == BRAID_DTYPE_UINT32 ||
           dt == BRAID_DTYPE_UINT64;
}

/* ---- Einsum: the equation ------------------------------------------------------------------ */

static int label_of(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? 26 + c - 'a' : -1; }

/* One term from s[0..len): letters and at most one "...". */
static braid_status parse_term(const char *s, size_t len, bd_es_term *t, const char *eq, bd_err *e)
{
    memset(t, 0, sizeof *t);
    t->ell = -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (t->ell >= 0 || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "equation '%s': a term has a stray '.' or two ellipses", eq);
            t->ell = t->n;
            i += 2;
            continue;
        }
        int l = label_of(s[i]);
        if (l < 0)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "equation '%s': '%c' is not a letter", eq, s[i]);
        if (t->n >= BD_ES_CHARS)
            return BD_FAIL(e, BRAID_ERR_LIMIT, "equation '%s': a term has more than %d letters", eq, BD_ES_CHARS);
        t->lab[t->n++] = (int8_t)l;
    }
    return BRAID_OK;
}

static braid_status einsum_parse(const char *eq, bd_einsum_params *p, bd_err *e)
{
    char buf[1024];
    size_t n = 0;
    for (const char *c = eq; *c; c++)
        if (*c != ' ') {
            if (n + 1 >= sizeof buf) return BD_FAIL(e, BRAID_ERR_LIMIT, "equation is longer than %zu characters", sizeof buf);
            buf[n++] = *c;
        }
    buf[n] = 0;
    if (!n) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "equation is empty");
    const char *arrow = strstr(buf, "->");
    size_t lhs = arrow ? (size_t)(arrow - buf) : n;
    if (arrow && strstr(arrow + 2, "->"))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "equation '%s' has two '->'", eq);
    braid_status st;
    size_t start = 0;
    for (size_t i = 0; i <= lhs; i++) {
        if (i < lhs && buf[i] != ',') continue;
        if (p->n_terms >= BD_ES_TERMS)
            return BD_FAIL(e, BRAID_ERR_LIMIT, "equation '%s' has more than %d operands", eq, BD_ES_TERMS);
        if ((st = parse_term(buf + start, i - start, &p->in[p->n_terms++], eq, e))) return st;
        start = i + 1;
    }
    if (arrow) {
        p->explicit_out = 1;
        if ((st = parse_term(arrow + 2, strlen(arrow + 2), &p->out, eq, e))) return st;
        unsigned long long seen = 0;
        for (int i = 0; i < p->out.n; i++) {
            if (seen >> p->out.lab[i] & 1)
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "equation '%s' repeats a letter in its output", eq);
            seen |= 1ull << p->out.lab[i];
        }
    }
    return BRAID_OK;
}

/* ---- Einsum: resolving shapes and building the program ------------------------------------ */

/* A view of an operand: unique labels with their dims and element strides. */
typedef struct es_view {
    int buf, n;
    int8_t lab[BD_ES_MAXD];
    int64_t dim[BD_ES_MAXD], st[BD_ES_MAXD];
} es_view;

typedef struct es_ctx {
    bd_es_prog *p;
    int cap_steps, cap_bufs;
    int64_t size[BD_ES_LETTERS + BD_MAX_RANK]; /* every label's size */
    int out_n;
    int8_t out[BD_MAX_RANK];
    bd_err *e;
} es_ctx;

static int find(const int8_t *l, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (l[i] == x) return i;
    return -1;
}

static braid_status add_step(es_ctx *c, const bd_es_step *s)
{
    bd_es_prog *p = c->p;
    if (p->n_steps == c->cap_steps) {
        int cap = c->cap_steps ? 2 * c->cap_steps : 16;
        bd_es_step *ns = bd_realloc(p->steps, (size_t)cap * sizeof *ns);
        if (!ns) return BD_FAIL(c->e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        p->steps = ns, c->cap_steps = cap;
    }
    p->steps[p->n_steps++] = *s;
    return BRAID_OK;
}

static braid_status add_buf(es_ctx *c, int64_t n, int *id)
{
    bd_es_prog *p = c->p;
    if (p->n_bufs == c->cap_bufs) {
        int cap = c->cap_bufs ? 2 * c->cap_bufs : 16;
        int64_t *nb = bd_realloc(p->buf_n, (size_t)cap * sizeof *nb);
        if (!nb) return BD_FAIL(c->e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        p->buf_n = nb, c->cap_bufs = cap;
    }
    p->buf_n[p->n_bufs] = n;
    *id = p->n_bufs++;
    return BRAID_OK;
}

/* v re-laid contiguously in the label order `order` (each label of v once),
 * dims taken at full size (broadcast by stride 0). No step when v already is. */
static braid_status relayout(es_ctx *c, es_view *v, const int8_t *order, int n)
{
    bd_es_step s;
    memset(&s, 0, sizeof s);
    s.kind = BD_ES_GATHER;
    s.src = v->buf;
    s.rank = n;
    int64_t total = 1, expect = 1;
    int same = 1;
    for (int i = n - 1; i >= 0; i--) {
        int a = find(v->lab, v->n, order[i]);
        int64_t full = c->size[order[i]];
        s.dims[i] = full;
        s.st[i] = v->dim[a] == 1 && full != 1 ? 0 : v->st[a];
        if (full != 1 && (s.st[i] != expect || v->dim[a] != full)) same = 0;
        expect *= full;
        total *= full;
    }
    es_view nv = {.n = n};
    for (int i = 0; i < n; i++) nv.lab[i] = order[i], nv.dim[i] = s.dims[i];
    for (int i = n - 1; i >= 0; i--) nv.st[i] = i == n - 1 ? 1 : nv.st[i + 1] * nv.dim[i + 1];
    if (same) {
        nv.buf = v->buf;
    } else {
        braid_status st;
        if ((st = add_buf(c, total, &nv.buf))) return st;
        s.dst = nv.buf;
        if ((st = add_step(c, &s))) return st;
    }
    *v = nv;
    return BRAID_OK;
}

/* Sums the labels of v that `keep` does not list out of v. */
static braid_status sum_out(es_ctx *c, es_view *v, const unsigned long long keep)
{
    int8_t order[BD_ES_MAXD] = {0};
    int nk = 0, ns = 0;
    for (int i = 0; i < v->n; i++)
        if (keep >> v->lab[i] & 1) order[nk++] = v->lab[i];
    if (nk == v->n) return BRAID_OK;
    for (int i = 0; i < v->n; i++)
        if (!(keep >> v->lab[i] & 1)) order[nk + ns++] = v->lab[i];
    braid_status st;
    if ((st = relayout(c, v, order, v->n))) return st;
    bd_es_step s;
    memset(&s, 0, sizeof s);
    s.kind = BD_ES_REDUCE;
    s.src = v->buf;
    s.outer = 1, s.inner = 1;
    for (int i = 0; i < nk; i++) s.outer *= v->dim[i];
    for (int i = nk; i < v->n; i++) s.inner *= v->dim[i];
    es_view nv = {.n = nk};
    if ((st = add_buf(c, s.outer, &nv.buf))) return st;
    s.dst = nv.buf;
    if ((st = add_step(c, &s))) return st;
    for (int i = nk - 1; i >= 0; i--) {
        nv.lab[i] = v->lab[i], nv.dim[i] = v->dim[i];
        nv.st[i] = i == nk - 1 ? 1 : nv.st[i + 1] * nv.dim[i + 1];
    }
    *v = nv;
    return BRAID_OK;
}

static unsigned long long mask_of(const es_view *v)
{
    unsigned long long m = 0;
    for (int i = 0; i < v->n; i++) m |= 1ull << v->lab[i];
    return m;
}

/* 1 when v is contiguous in the order g1 + g2 + g3 (label groups). */
static int contiguous_as(const es_view *v, const int8_t *order, int n)
{
    int64_t expect = 1;
    if (v->n != n) return 0;
    for (int i = n - 1; i >= 0; i--) {
        if (v->lab[i] != order[i]) return 0;
        if (v->dim[i] != 1 && v->st[i] != expect) return 0;
        expect *= v->dim[i];
    }
    return 1;
}

/* The GEMM contraction of a and b into *r; later: the labels needed after. */
static braid_status contract(es_ctx *c, es_view *a, es_view *b, unsigned long long later, es_view *r)
{
    braid_status st;
    unsigned long long ma = mask_of(a), mb = mask_of(b);
    if ((st = sum_out(c, a, mb | later)) || (st = sum_out(c, b, ma | later))) return st;
    ma = mask_of(a), mb = mask_of(b);
    int8_t bat[BD_ES_MAXD], mm[BD_ES_MAXD], kk[BD_ES_MAXD], nn[BD_ES_MAXD];
    int nb = 0, nm = 0, nk = 0, nnn = 0;
    int64_t count = 1, m = 1, n = 1, k = 1;
    for (int i = 0; i < a->n; i++) {
        int l = a->lab[i];
        if (mb >> l & 1) {
            if (later >> l & 1) bat[nb++] = (int8_t)l, count *= c->size[l];
            else kk[nk++] = (int8_t)l, k *= c->size[l];
        } else {
            mm[nm++] = (int8_t)l, m *= c->size[l];
        }
    }
    for (int i = 0; i < b->n; i++)
        if (!(ma >> b->lab[i] & 1)) nn[nnn++] = b->lab[i], n *= c->size[b->lab[i]];
    if (nb + nm + nnn > BD_ES_MAXD)
        return BD_FAIL(c->e, BRAID_ERR_LIMIT, "an intermediate of the equation has more than %d dims", BD_ES_MAXD);
    int8_t oa[BD_ES_MAXD], oat[BD_ES_MAXD], ob[BD_ES_MAXD], obt[BD_ES_MAXD];
    memcpy(oa, bat, (size_t)nb), memcpy(oa + nb, mm, (size_t)nm), memcpy(oa + nb + nm, kk, (size_t)nk);
    memcpy(oat, bat, (size_t)nb), memcpy(oat + nb, kk, (size_t)nk), memcpy(oat + nb + nk, mm, (size_t)nm);
    memcpy(ob, bat, (size_t)nb), memcpy(ob + nb, kk, (size_t)nk), memcpy(ob + nb + nk, nn, (size_t)nnn);
    memcpy(obt, bat, (size_t)nb), memcpy(obt + nb, nn, (size_t)nnn), memcpy(obt + nb + nnn, kk, (size_t)nk);
    bd_es_step s;
    memset(&s, 0, sizeof s);
    s.kind = BD_ES_GEMM;
    /* a as (batch, m, k) or, when stored so, (batch, k, m) */
    int full_a = 1, full_b = 1;
    for (int i = 0; i < a->n; i++) full_a &= a->dim[i] == c->size[a->lab[i]];
    for (int i = 0; i < b->n; i++) full_b &= b->dim[i] == c->size[b->lab[i]];
    if (full_a && contiguous_as(a, oat, a->n) && !contiguous_as(a, oa, a->n)) s.ta = 1;
    else if ((st = relayout(c, a, oa, a->n))) return st;
    if (full_b && contiguous_as(b, obt, b->n) && !contiguous_as(b, ob, b->n)) s.tb = 1;
    else if ((st = relayout(c, b, ob, b->n))) return st;
    s.src = a->buf, s.src2 = b->buf;
    s.count = count, s.m = m, s.n = n, s.k = k;
    es_view nv = {.n = nb + nm + nnn};
    memcpy(nv.lab, bat, (size_t)nb), memcpy(nv.lab + nb, mm, (size_t)nm), memcpy(nv.lab + nb + nm, nn, (size_t)nnn);
    for (int i = nv.n - 1; i >= 0; i--) {
        nv.dim[i] = c->size[nv.lab[i]];
        nv.st[i] = i == nv.n - 1 ? 1 : nv.st[i + 1] * nv.dim[i + 1];
    }
    if ((st = add_buf(c, count * m * n, &nv.buf))) return st;
    s.dst = nv.buf;
    if ((st = add_step(c, &s))) return st;
    *r = nv;
    return BRAID_OK;
}

braid_status bd_einsum_plan(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_es_prog *prog, bd_err *e)
{
    const bd_linalg_params *lp = n->params;
    const bd_einsum_params *p = lp ? &lp->einsum : NULL;
    char sh[160];
    braid_status st = BRAID_OK;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    if (p->n_terms != n->n_in)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "the equation has %d operands but the node %d inputs", p->n_terms,
                       n->n_in);
    es_ctx c;
    memset(&c, 0, sizeof c);
    c.e = e;
    int ell = 0; /* dims the ellipsis stands for: the most any operand gives it */
    for (int i = 0; i < p->n_terms; i++) {
        const bd_es_term *t = &p->in[i];
        int extra = in[i].rank - t->n;
        if (extra < 0 || (t->ell < 0 && extra != 0))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "operand %d has shape %s, which term %d's %d letters%s do not match", i,
                           bd_shape_str(&in[i], sh, sizeof sh), i, t->n, t->ell >= 0 ? " and ellipsis" : "");
        ell = extra > ell ? extra : ell;
    }
    /* Every label's size: all its dims are equal or 1 (numpy's broadcasting). */
    for (int l = 0; l < BD_ES_LETTERS + BD_MAX_RANK; l++) c.size[l] = -1;
    es_view views[BD_ES_TERMS];
    unsigned long long used = 0;
    int counts[BD_ES_LETTERS] = {0};
    for (int i = 0; i < p->n_terms; i++) {
        const bd_es_term *t = &p->in[i];
        int extra = in[i].rank - t->n, r = in[i].rank;
        int8_t axl[BD_MAX_RANK];
        for (int a = 0, li = 0; a < r; a++) {
            if (t->ell >= 0 && a >= t->ell && a < t->ell + extra) axl[a] = (int8_t)(BD_ES_LETTERS + ell - extra + (a - t->ell));
            else axl[a] = t->lab[li++];
        }
        es_view *v = &views[i];
        memset(v, 0, sizeof *v);
        v->buf = i;
        int64_t stride = 1;
        for (int a = r - 1; a >= 0; a--) {
            int l = axl[a], at = find(v->lab, v->n, l);
            int64_t d = in[i].dims[a];
            if (l < BD_ES_LETTERS) counts[l]++;
            used |= 1ull << l;
            if (at >= 0) { /* a repeated label: the diagonal */
                if (v->dim[at] != d)
                    return BD_FAIL(e, BRAID_ERR_SHAPE, "operand %d (%s) repeats a letter over dims of sizes %lld and %lld",
                                   i, bd_shape_str(&in[i], sh, sizeof sh), (long long)v->dim[at], (long long)d);
                v->st[at] += stride;
            } else {
                v->lab[v->n] = (int8_t)l, v->dim[v->n] = d, v->st[v->n] = stride, v->n++;
            }
            stride *= d;
            if (c.size[l] < 0 || c.size[l] == 1) c.size[l] = d;
            else if (d != 1 && d != c.size[l])
                return BD_FAIL(e, BRAID_ERR_SHAPE, "operand %d (%s): a label of size %lld elsewhere has size %lld here",
                               i, bd_shape_str(&in[i], sh, sizeof sh), (long long)c.size[l], (long long)d);
        }
        /* labels in axis order (the loop above went backwards) */
        for (int x = 0; x < v->n / 2; x++) {
            int y = v->n - 1 - x;
            int8_t tl = v->lab[x]; v->lab[x] = v->lab[y]; v->lab[y] = tl;
            int64_t td = v->dim[x]; v->dim[x] = v->dim[y]; v->dim[y] = td;
            td = v->st[x]; v->st[x] = v->st[y]; v->st[y] = td;
        }
    }
    /* The output labels. */
    if (p->explicit_out) {
        const bd_es_term *t = &p->out;
        if (t->ell < 0 && ell > 0)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "the operands' ellipsis stands for %d dims but the output has no "
                           "'...'", ell);
        for (int a = 0, li = 0; a < t->n + (t->ell >= 0 ? ell : 0); a++) {
            int l = t->ell >= 0 && a >= t->ell && a < t->ell + ell ? BD_ES_LETTERS + a - t->ell : t->lab[li++];
            if (!(used >> l & 1))
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "output letter '%c' appears in no operand",
                               l < 26 ? 'A' + l : 'a' + l - 26);
            if (c.out_n >= BD_MAX_RANK)
                return BD_FAIL(e, BRAID_ERR_LIMIT, "the output has more than %d dims", BD_MAX_RANK);
            c.out[c.out_n++] = (int8_t)l;
        }
    } else {
        for (int a = 0; a < ell; a++) c.out[c.out_n++] = (int8_t)(BD_ES_LETTERS + a);
        for (int l = 0; l < BD_ES_LETTERS; l++)
            if (counts[l] == 1) {
                if (c.out_n >= BD_MAX_RANK)
                    return BD_FAIL(e, BRAID_ERR_LIMIT, "the output has more than %d dims", BD_MAX_RANK);
                c.out[c.out_n++] = (int8_t)l;
            }
    }
    if (out) {
        out->rank = c.out_n;
        for (int a = 0; a < c.out_n; a++) out->dims[a] = c.size[c.out[a]];
        out->dtype = in[0].dtype;
    }
    if (!prog) return BRAID_OK;
    /* The program: sums of labels needed nowhere else, then pairwise contractions left to right. */
    memset(prog, 0, sizeof *prog);
    c.p = prog;
    for (int i = 0; i < p->n_terms; i++) BD_TRY(add_buf(&c, bd_numel(&in[i]), &(int){0}));
    unsigned long long outm = 0;
    for (int a = 0; a < c.out_n; a++) outm |= 1ull << c.out[a];
    int nv = p->n_terms;
    for (int i = 0; i < nv; i++) {
        unsigned long long keep = outm;
        for (int j = 0; j < nv; j++)
            if (j != i) keep |= mask_of(&views[j]);
        BD_TRY(sum_out(&c, &views[i], keep));
    }
    while (nv > 1) {
        unsigned long long later = outm;
        for (int j = 2; j < nv; j++) later |= mask_of(&views[j]);
        es_view r;
        BD_TRY(contract(&c, &views[0], &views[1], later, &r));
        views[0] = r;
        memmove(&views[1], &views[2], (size_t)(nv - 2) * sizeof *views);
        nv--;
    }
    BD_TRY(sum_out(&c, &views[0], outm));
    BD_TRY(relayout(&c, &views[0], c.out, c.out_n));
    prog->out_buf = views[0].buf;
    return BRAID_OK;
fail:
    bd_einsum_free(prog);
    return st;
}

void bd_einsum_free(bd_es_prog *prog)
{
    if (!prog) return;
    bd_free(prog->steps);
    bd_free(prog->buf_n);
    memset(prog, 0, sizeof *prog);
}

/* ---- FusedMatMul's operand views ------------------------------------------------------------ */

void bd_fused_matmul_view(const bd_tensor *t, int trans_batch, int trans, bd_tensor *view, int64_t *strides)
{
    int r = t->rank, perm[BD_MAX_RANK];
    int64_t st[BD_MAX_RANK], s = 1;
    for (int i = r - 1; i >= 0; i--) st[i] = s, s *= t->dims[i];
    for (int i = 0; i < r; i++) perm[i] = i;
    if (trans_batch && r > 2) {
        for (int i = 0; i < r - 2; i++) perm[i] = i + 1;
        perm[r - 2] = 0;
    }
    if (trans && r > 1) {
        int x = perm[r - 2];
        perm[r - 2] = perm[r - 1];
        perm[r - 1] = x;
    }
    *view = *t;
    for (int i = 0; i < r; i++) view->dims[i] = t->dims[perm[i]], strides[i] = st[perm[i]];
}

/* ---- parse / infer / cost ---------------------------------------------------------------------- */

static const struct { const char *name; bd_fact f; float a, b, g; } acts[] = {
    {"Relu", BD_FACT_RELU, 0, 0, 0}, {"LeakyRelu", BD_FACT_LEAKY_RELU, 0.01f, 0, 0},
    {"Tanh", BD_FACT_TANH, 0, 0, 0}, {"Sigmoid", BD_FACT_SIGMOID, 0, 0, 0},
    {"HardSigmoid", BD_FACT_HARD_SIGMOID, 0.2f, 0.5f, 0}, {"Elu", BD_FACT_ELU, 1.0f, 0, 0},
    {"Selu", BD_FACT_SELU, 1.67326319217681884765625f, 0, 1.05070102214813232421875f},
    {"Softplus", BD_FACT_SOFTPLUS, 0, 0, 0}, {"Softsign", BD_FACT_SOFTSIGN, 0, 0, 0},
    {"ThresholdedRelu", BD_FACT_THRESHOLDED_RELU, 1.0f, 0, 0}, {"ScaledTanh", BD_FACT_SCALED_TANH, 1.0f, 1.0f, 0},
    {"ParametricSoftplus", BD_FACT_PARAMETRIC_SOFTPLUS, 1.0f, 1.0f, 0},
};

/* One block, freed by the graph with bd_free like every node's params. */
static void params_free(bd_linalg_params *p) { bd_free(p); }

braid_status bd_linalg_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_linalg_params *p = bd_calloc(1, sizeof *p);
    int64_t ta = 0, tb = 0, tba = 0, tbb = 0;
    BD_CHECK_ALLOC(e, p);
    p->alpha = p->beta = 1.0f;
    switch (n->op) {
    case BD_OP_Einsum: {
        const char *eq = NULL;
        BD_TRY(bd_attr_string(n, "equation", NULL, &eq, e));
        if (!eq) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'equation' is required");
            goto fail;
        }
        BD_TRY(einsum_parse(eq, &p->einsum, e));
        break;
    }
    case BD_OP_Det: break;
    case BD_OP_MS_FusedMatMul: case BD_OP_MS_FusedGemm:
        BD_TRY(bd_attr_float(n, "alpha", 1.0f, &p->alpha, e));
        BD_TRY(bd_attr_float(n, "beta", 1.0f, &p->beta, e));
        BD_TRY(bd_attr_int(n, "transA", 0, &ta, e));
        BD_TRY(bd_attr_int(n, "transB", 0, &tb, e));
        BD_TRY(bd_attr_int(n, "transBatchA", 0, &tba, e));
        BD_TRY(bd_attr_int(n, "transBatchB", 0, &tbb, e));
        p->trans_a = ta != 0, p->trans_b = tb != 0, p->trans_batch_a = tba != 0, p->trans_batch_b = tbb != 0;
        if (n->op == BD_OP_MS_FusedGemm) {
            const char *act = NULL;
            BD_TRY(bd_attr_string(n, "activation", NULL, &act, e));
            if (act) {
                size_t i;
                for (i = 0; i < sizeof acts / sizeof *acts && strcmp(acts[i].name, act); i++) {}
                if (i == sizeof acts / sizeof *acts) {
                    st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "activation '%s' is not supported", act);
                    goto fail;
                }
                p->act = acts[i].f;
                BD_TRY(bd_attr_float(n, "activation_alpha", acts[i].a, &p->act_alpha, e));
                BD_TRY(bd_attr_float(n, "activation_beta", acts[i].b, &p->act_beta, e));
                BD_TRY(bd_attr_float(n, "activation_gamma", acts[i].g, &p->act_gamma, e));
            }
        }
        break;
    default:
        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the linalg family", n->op_type);
        goto fail;
    }
    params_free(n->params);
    n->params = p;
    return BRAID_OK;
fail:
    params_free(p);
    return st;
}

braid_status bd_linalg_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_linalg_params *p = n->params;
    char s1[160], s2[160];
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    int dt = in[0].dtype;
    for (int i = 1; i < n->n_in; i++)
        if (in[i].dtype != BRAID_DTYPE_UNDEFINED && in[i].dtype != dt)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d is %s but input 0 is %s; they must match", i,
                           bd_dtype_name(in[i].dtype), bd_dtype_name(dt));
    switch (n->op) {
    case BD_OP_Einsum:
        if (!float_kind(dt) && !int_kind(dt))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "Einsum does not take dtype %s", bd_dtype_name(dt));
        return bd_einsum_plan(n, in, out, NULL, e);
    case BD_OP_Det: {
        const bd_tensor *x = &in[0];
        if (!float_kind(dt)) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "Det does not take dtype %s", bd_dtype_name(dt));
        if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "Det needs square matrices (..., M, M), got %s",
                           bd_shape_str(x, s1, sizeof s1));
        out[0] = *x;
        out[0].data = NULL;
        out[0].rank = x->rank - 2;
        return BRAID_OK;
    }
    case BD_OP_MS_FusedMatMul: {
        if (!float_kind(dt)) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "FusedMatMul does not take dtype %s", bd_dtype_name(dt));
        bd_tensor va, vb;
        int64_t st[BD_MAX_RANK];
        bd_fused_matmul_view(&in[0], p->trans_batch_a, p->trans_a && in[0].rank > 1, &va, st);
        bd_fused_matmul_view(&in[1], p->trans_batch_b, p->trans_b && in[1].rank > 1, &vb, st);
        bd_matmul_geom g;
        return bd_matmul_geometry(&va, &vb, &g, &out[0], e);
    }
    case BD_OP_MS_FusedGemm: {
        const bd_tensor *a = &in[0], *b = &in[1], *c = n->n_in > 2 && in[2].dtype ? &in[2] : NULL;
        if (!float_kind(dt)) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "FusedGemm does not take dtype %s", bd_dtype_name(dt));
        if (a->rank != 2 || b->rank != 2)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "A and B must be 2-D, got A %s and B %s", bd_shape_str(a, s1, sizeof s1),
                           bd_shape_str(b, s2, sizeof s2));
        int64_t m = a->dims[p->trans_a ? 1 : 0], ka = a->dims[p->trans_a ? 0 : 1];
        int64_t kb = b->dims[p->trans_b ? 1 : 0], nn = b->dims[p->trans_b ? 0 : 1];
        if (ka != kb)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "A %s and B %s do not multiply: %lld columns against %lld rows",
                           bd_shape_str(a, s1, sizeof s1), bd_shape_str(b, s2, sizeof s2), (long long)ka, (long long)kb);
        if (c) {
            int ok = c->rank <= 2;
            for (int i = 0; ok && i < c->rank; i++) ok = c->dims[i] == 1 || c->dims[i] == (i == c->rank - 1 ? nn : m);
            if (!ok)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "C has shape %s, which does not broadcast to (%lld, %lld)",
                               bd_shape_str(c, s1, sizeof s1), (long long)m, (long long)nn);
        }
        out[0] = (bd_tensor){.dtype = dt, .rank = 2, .dims = {m, nn}};
        return BRAID_OK;
    }
    default: return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the linalg family", n->op_type);
    }
}

double bd_linalg_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    switch (n->op) {
    case BD_OP_Det: {
        double m = in[0].rank >= 2 ? (double)in[0].dims[in[0].rank - 1] : 0;
        return (double)bd_numel(&out[0]) * m * m * m;
    }
    case BD_OP_MS_FusedGemm: {
        const bd_linalg_params *p = n->params;
        return 2.0 * (double)bd_numel(&out[0]) * (double)(p && in[0].rank == 2 ? in[0].dims[p->trans_a ? 0 : 1] : 1);
    }
    case BD_OP_MS_FusedMatMul: {
        const bd_linalg_params *p = n->params;
        int r = in[0].rank;
        int64_t k = r >= 1 ? in[0].dims[p && p->trans_a && r > 1 ? r - 2 : r - 1] : 1;
        return 2.0 * (double)bd_numel(&out[0]) * (double)k;
    }
    default: { /* Einsum: the products of its program */
        bd_es_prog prog;
        bd_err e = {0};
        double f = 0;
        if (bd_einsum_plan(n, in, NULL, &prog, &e)) return (double)bd_numel(&out[0]);
        for (int i = 0; i < prog.n_steps; i++) {
            const bd_es_step *s = &prog.steps[i];
            f += s->kind == BD_ES_GEMM ? 2.0 * (double)s->count * (double)s->m * (double)s->n * (double)s->k
                                       : (double)prog.buf_n[s->dst];
        }
        bd_einsum_free(&prog);
        return f;
    }
    }
}
