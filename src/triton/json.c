/* json.c: a small recursive-descent JSON parser and a compact writer for the
 * Triton backend's model configurations (json.h). Depth is bounded, strings
 * are decoded to UTF-8 (\uXXXX with surrogate pairs), numbers keep their
 * text. */
#include "triton/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "util/common.h"

#define BJ_MAX_DEPTH 64

typedef struct parser {
    const char *p, *end, *start;
    char *err;
    size_t errn;
    int failed;
} parser;

static void perr(parser *ps, const char *fmt, ...)
{
    if (ps->failed) return;
    ps->failed = 1;
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ps->err && ps->errn) snprintf(ps->err, ps->errn, "%s at byte %ld", msg, (long)(ps->p - ps->start));
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

bj *bj_new(bj_type t)
{
    bj *v = bd_calloc(1, sizeof *v);
    if (v) v->t = t;
    return v;
}

void bj_free(bj *v)
{
    if (!v) return;
    for (int i = 0; i < v->n; i++) {
        bj_free(v->v[i]);
        if (v->k) bd_free(v->k[i]);
    }
    bd_free(v->v);
    bd_free(v->k);
    bd_free(v->s);
    bd_free(v);
}

/* Appends val (and key for objects); 0 when out of memory (val is freed). */
static int append(bj *c, char *key, bj *val)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 4;
        bj **nv = bd_realloc(c->v, (size_t)cap * sizeof *nv);
        if (!nv) goto oom;
        c->v = nv;
        if (c->t == BJ_OBJ) {
            char **nk = bd_realloc(c->k, (size_t)cap * sizeof *nk);
            if (!nk) goto oom;
            c->k = nk;
        }
        c->cap = cap;
    }
    c->v[c->n] = val;
    if (c->t == BJ_OBJ) c->k[c->n] = key;
    c->n++;
    return 1;
oom:
    bj_free(val);
    bd_free(key);
    return 0;
}

static void put_utf8(char *out, size_t *o, unsigned cp)
{
    if (cp < 0x80) {
        out[(*o)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*o)++] = (char)(0xC0 | (cp >> 6));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*o)++] = (char)(0xE0 | (cp >> 12));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*o)++] = (char)(0xF0 | (cp >> 18));
        out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static int hex4(parser *ps, unsigned *out)
{
    if (ps->end - ps->p < 4) return 0;
    unsigned x = 0;
    for (int i = 0; i < 4; i++) {
        char c = ps->p[i];
        x <<= 4;
        if (c >= '0' && c <= '9') x |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') x |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    ps->p += 4;
    *out = x;
    return 1;
}

/* A string at ps->p (the opening quote); the decoded text, bd_malloc'ed. */
static char *parse_string(parser *ps)
{
    ps->p++; /* '"' */
    const char *q = ps->p;
    while (q < ps->end && *q != '"') q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
    if (q >= ps->end) {
        perr(ps, "unterminated string");
        return NULL;
    }
    /* The decoded text is never longer than the escaped one. */
    char *out = bd_malloc((size_t)(q - ps->p) + 1);
    if (!out) {
        perr(ps, "out of memory");
        return NULL;
    }
    size_t o = 0;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20) {
            perr(ps, "control character in a string");
            goto fail;
        }
        if (c != '\\') {
            out[o++] = (char)c;
            continue;
        }
        char e = *ps->p++;
        switch (e) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case '/': out[o++] = '/'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (!hex4(ps, &cp)) {
                perr(ps, "bad \\u escape");
                goto fail;
            }
            if (cp >= 0xD800 && cp < 0xDC00) {
                if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                    perr(ps, "unpaired surrogate");
                    goto fail;
                }
                ps->p += 2;
                if (!hex4(ps, &lo) || lo < 0xDC00 || lo >= 0xE000) {
                    perr(ps, "bad surrogate pair");
                    goto fail;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                perr(ps, "unpaired surrogate");
                goto fail;
            }
            put_utf8(out, &o, cp); /* at most 4 bytes for 6 or 12 read */
            break;
        }
        default: perr(ps, "bad escape '\\%c'", e); goto fail;
        }
    }
    ps->p++; /* closing quote */
    out[o] = '\0';
    return out;
fail:
    bd_free(out);
    return NULL;
}

static bj *parse_value(parser *ps, int depth);

static bj *parse_container(parser *ps, int depth, int obj)
{
    bj *c = bj_new(obj ? BJ_OBJ : BJ_ARR);
    if (!c) {
        perr(ps, "out of memory");
        return NULL;
    }
    char close = obj ? '}' : ']';
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return c;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (obj) {
            if (ps->p >= ps->end || *ps->p != '"') {
                perr(ps, "expected a key");
                goto fail;
            }
            if (!(key = parse_string(ps))) goto fail;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                bd_free(key);
                perr(ps, "expected ':'");
                goto fail;
            }
            ps->p++;
        }
        bj *val = parse_value(ps, depth + 1);
        if (!val) {
            bd_free(key);
            goto fail;
        }
        if (!append(c, key, val)) {
            perr(ps, "out of memory");
            goto fail;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return c;
        }
        perr(ps, "expected ',' or '%c'", close);
        goto fail;
    }
fail:
    bj_free(c);
    return NULL;
}

static bj *parse_number(parser *ps)
{
    const char *q = ps->p;
    if (q < ps->end && *q == '-') q++;
    const char *digits = q;
    while (q < ps->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' ||
                           *q == '-'))
        q++;
    if (q == digits || !(*digits >= '0' && *digits <= '9')) {
        perr(ps, "bad number");
        return NULL;
    }
    bj *v = bj_new(BJ_NUM);
    if (!v || !(v->s = bd_strndup(ps->p, (size_t)(q - ps->p)))) {
        bj_free(v);
        perr(ps, "out of memory");
        return NULL;
    }
    char *endp = NULL;
    strtod(v->s, &endp);
    if (*endp) {
        bj_free(v);
        perr(ps, "bad number");
        return NULL;
    }
    ps->p = q;
    return v;
}

static int literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return 0;
    ps->p += n;
    return 1;
}

static bj *parse_value(parser *ps, int depth)
{
    if (depth > BJ_MAX_DEPTH) {
        perr(ps, "nested deeper than %d", BJ_MAX_DEPTH);
        return NULL;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) {
        perr(ps, "unexpected end");
        return NULL;
    }
    char c = *ps->p;
    if (c == '{' || c == '[') return parse_container(ps, depth, c == '{');
    if (c == '"') {
        char *s = parse_string(ps);
        if (!s) return NULL;
        bj *v = bj_new(BJ_STR);
        if (!v) {
            bd_free(s);
            perr(ps, "out of memory");
            return NULL;
        }
        v->s = s;
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(ps);
    bj *v = NULL;
    int truth = literal(ps, "true");
    if (truth || literal(ps, "false")) {
        v = bj_new(BJ_BOOL);
        if (v) v->b = truth;
    } else if (literal(ps, "null")) {
        v = bj_new(BJ_NULL);
    } else {
        perr(ps, "unexpected character '%c'", c);
        return NULL;
    }
    if (!v) perr(ps, "out of memory");
    return v;
}

bj *bj_parse(const char *text, size_t n, char *err, size_t errn)
{
    parser ps = {.p = text, .end = text + n, .start = text, .err = err, .errn = errn};
    if (err && errn) err[0] = '\0';
    bj *v = parse_value(&ps, 0);
    if (!v) return NULL;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        perr(&ps, "text after the value");
        bj_free(v);
        return NULL;
    }
    return v;
}

/* ---- reading and building ---------------------------------------------------- */

bj *bj_get(const bj *obj, const char *key)
{
    if (!obj || obj->t != BJ_OBJ) return NULL;
    for (int i = 0; i < obj->n; i++)
        if (strcmp(obj->k[i], key) == 0) return obj->v[i];
    return NULL;
}

int bj_len(const bj *v) { return v && (v->t == BJ_ARR || v->t == BJ_OBJ) ? v->n : 0; }
bj *bj_at(const bj *v, int i) { return v && i >= 0 && i < bj_len(v) ? v->v[i] : NULL; }
const char *bj_str(const bj *v) { return v && v->t == BJ_STR ? v->s : NULL; }

int bj_int(const bj *v, int64_t *out)
{
    if (!v || (v->t != BJ_NUM && v->t != BJ_STR) || !v->s[0]) return 0;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v->s, &end, 10);
    if (*end || errno) return 0;
    *out = (int64_t)x;
    return 1;
}

bj *bj_new_str(const char *s)
{
    bj *v = bj_new(BJ_STR);
    if (v && !(v->s = bd_strdup(s))) {
        bj_free(v);
        return NULL;
    }
    return v;
}

bj *bj_new_int(int64_t x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)x);
    bj *v = bj_new(BJ_NUM);
    if (v && !(v->s = bd_strdup(buf))) {
        bj_free(v);
        return NULL;
    }
    return v;
}

int bj_set(bj *obj, const char *key, bj *val)
{
    if (!val) return 0;
    if (!obj || obj->t != BJ_OBJ) {
        bj_free(val);
        return 0;
    }
    for (int i = 0; i < obj->n; i++)
        if (strcmp(obj->k[i], key) == 0) {
            bj_free(obj->v[i]);
            obj->v[i] = val;
            return 1;
        }
    char *k = bd_strdup(key);
    if (!k) {
        bj_free(val);
        return 0;
    }
    return append(obj, k, val);
}

int bj_push(bj *arr, bj *val)
{
    if (!val) return 0;
    if (!arr || arr->t != BJ_ARR) {
        bj_free(val);
        return 0;
    }
    return append(arr, NULL, val);
}

/* ---- writing --------------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + n + 1 > cap) cap *= 2;
        char *np = bd_realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void put_str(sbuf *b, const char *s)
{
    put(b, "\"", 1);
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        char esc[8];
        if (*q == '"' || *q == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*q;
            put(b, esc, 2);
        } else if (*q < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *q);
            put(b, esc, 6);
        } else {
            put(b, (const char *)q, 1);
        }
    }
    put(b, "\"", 1);
}

static void write_value(sbuf *b, const bj *v)
{
    switch (v->t) {
    case BJ_NULL: put(b, "null", 4); break;
    case BJ_BOOL: put(b, v->b ? "true" : "false", v->b ? 4 : 5); break;
    case BJ_NUM: put(b, v->s, strlen(v->s)); break;
    case BJ_STR: put_str(b, v->s); break;
    case BJ_ARR:
    case BJ_OBJ:
        put(b, v->t == BJ_OBJ ? "{" : "[", 1);
        for (int i = 0; i < v->n; i++) {
            if (i) put(b, ",", 1);
            if (v->t == BJ_OBJ) {
                put_str(b, v->k[i]);
                put(b, ":", 1);
            }
            write_value(b, v->v[i]);
        }
        put(b, v->t == BJ_OBJ ? "}" : "]", 1);
        break;
    }
}

char *bj_write(const bj *v, size_t *len)
{
    sbuf b = {0};
    write_value(&b, v);
    if (b.oom || !b.p) {
        bd_free(b.p);
        return NULL;
    }
    if (len) *len = b.n;
    return b.p;
}
