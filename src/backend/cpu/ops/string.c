/* string.c: CPU kernels of the string op family: StringConcat,
 * StringSplit, StringNormalizer, RegexFullMatch. A string tensor is an array
 * of `const char *` (braid.h); new strings go to the kernel's pool
 * (k->strings), so outputs stay valid until the next run. StringSplit and
 * StringNormalizer write their outputs' actual dims (BD_OPF_DATA_SHAPE). */
#include "backend/cpu/cpu_ops.h"

#include <regex.h>
#include <string.h>

#include "backend/cpu/ops/elementwise.h"
#include "ops/string_family.h"
#include "util/strpool.h"

typedef struct concat_ctx {
    bd_strpool *pool;
    int oom; /* set by a row that could not allocate */
} concat_ctx;

static void row_concat(const void *const *p, const int64_t *s, void *vo, int64_t n, const void *vctx)
{
    concat_ctx *c = (concat_ctx *)vctx;
    const char *const *x = p[0], *const *y = p[1];
    const char **o = vo;
    char buf[256];
    for (int64_t i = 0; i < n; i++) {
        const char *a = x[i * s[0]], *b = y[i * s[1]];
        size_t la = strlen(a), lb = strlen(b);
        char *t = la + lb < sizeof buf ? buf : bd_malloc(la + lb + 1);
        if (!t) { __atomic_store_n(&c->oom, 1, __ATOMIC_RELAXED); o[i] = ""; continue; }
        memcpy(t, a, la);
        memcpy(t + la, b, lb);
        o[i] = bd_strpool_dup(c->pool, t, la + lb);
        if (t != buf) bd_free(t);
        if (!o[i]) { __atomic_store_n(&c->oom, 1, __ATOMIC_RELAXED); o[i] = ""; }
    }
}

static braid_status run_concat(const bd_kernel *k)
{
    concat_ctx c = {k->strings, 0};
    const bd_tensor *in[2] = {&k->in[0], &k->in[1]};
    bd_bcast_run(row_concat, &c, 2, in, &k->out[0], k->threads);
    if (c.oom) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory for the concatenated strings");
    return BRAID_OK;
}

static braid_status run_split(const bd_kernel *k)
{
    const bd_string_params *p = k->node->params;
    const char *const *x = k->in[0].data;
    int64_t numel = bd_numel(&k->in[0]), parts = 0, cap = k->out[0].dims[k->out[0].rank - 1];
    int64_t *counts = k->out[1].data;
    for (int64_t i = 0; i < numel; i++) {
        counts[i] = bd_string_split(x[i], p->delimiter, p->maxsplit, 0, NULL, NULL);
        parts = BD_MAX(parts, counts[i]);
    }
    if (parts > cap)
        return BD_FAIL(k->err, BRAID_ERR_LIMIT,
                       "a string splits into %lld parts; with X unknown when the plan is made and no maxsplit, "
                       "braid takes at most %lld", (long long)parts, (long long)cap);
    braid_status st = BRAID_OK;
    const char **begin = bd_malloc((size_t)(parts ? parts : 1) * sizeof *begin);
    size_t *len = bd_malloc((size_t)(parts ? parts : 1) * sizeof *len);
    BD_CHECK_ALLOC(k->err, begin);
    BD_CHECK_ALLOC(k->err, len);
    const char **y = k->out[0].data;
    for (int64_t i = 0; i < numel; i++) {
        bd_string_split(x[i], p->delimiter, p->maxsplit, parts, begin, len);
        for (int64_t j = 0; j < parts; j++) {
            y[i * parts + j] = j < counts[i] ? bd_strpool_dup(k->strings, begin[j], len[j]) : "";
            BD_CHECK_ALLOC(k->err, y[i * parts + j]);
        }
    }
    k->out[0].dims[k->out[0].rank - 1] = parts;
fail:
    bd_free(begin);
    bd_free(len);
    return st;
}

static braid_status run_normalize(const bd_kernel *k)
{
    const bd_string_params *p = k->node->params;
    const char *const *x = k->in[0].data;
    const char **y = k->out[0].data;
    int64_t numel = bd_numel(&k->in[0]), kept = 0;
    braid_status st = BRAID_OK;
    char *folded = NULL;
    for (int64_t i = 0; i < numel; i++) {
        const char *cmp = x[i];
        if (!p->case_sensitive) {
            folded = bd_utf8_case(x[i], BD_CASE_LOWER);
            BD_CHECK_ALLOC(k->err, folded);
            cmp = folded;
        }
        int stop = 0;
        for (int w = 0; w < p->n_stopwords && !stop; w++) stop = !strcmp(cmp, p->stopwords[w]);
        bd_free(folded);
        folded = NULL;
        if (stop) continue;
        if (p->case_change == BD_CASE_NONE) {
            y[kept++] = x[i]; /* the same immutable string */
            continue;
        }
        char *c = bd_utf8_case(x[i], p->case_change);
        BD_CHECK_ALLOC(k->err, c);
        y[kept] = bd_strpool_dup(k->strings, c, strlen(c));
        bd_free(c);
        BD_CHECK_ALLOC(k->err, y[kept]);
        kept++;
    }
    if (kept == 0) y[kept++] = ""; /* the spec's output when everything is filtered: one empty string */
    k->out[0].dims[k->out[0].rank - 1] = kept;
fail:
    bd_free(folded);
    return st;
}

static braid_status run_regex(const bd_kernel *k)
{
    const bd_string_params *p = k->node->params;
    regex_t re;
    int rc = regcomp(&re, p->ere, REG_EXTENDED | REG_NOSUB);
    if (rc) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "the regex '%s' no longer compiles", p->ere);
    const char *const *x = k->in[0].data;
    uint8_t *y = k->out[0].data;
    for (int64_t i = 0, n = bd_numel(&k->in[0]); i < n; i++) y[i] = regexec(&re, x[i], 0, NULL, 0) == 0;
    regfree(&re);
    return BRAID_OK;
}

braid_status bd_cpu_string(const bd_kernel *k)
{
    if (!k->strings && k->node->op != BD_OP_RegexFullMatch)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s runs with no string pool", k->node->op_type);
    switch (k->node->op) {
    case BD_OP_StringConcat: return run_concat(k);
    case BD_OP_StringSplit: return run_split(k);
    case BD_OP_StringNormalizer: return run_normalize(k);
    case BD_OP_RegexFullMatch: return run_regex(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the string family", k->node->op_type);
    }
}
