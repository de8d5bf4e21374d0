/* string.c: attribute parsing, shape inference and cost of the string op
 * family (StringConcat, StringSplit, StringNormalizer, RegexFullMatch), and
 * the helpers the CPU kernels share: RE2 to POSIX regex translation, UTF-8
 * case changes and splitting. The family runs on the host (BD_OPF_HOST);
 * string tensors are arrays of `const char *` (braid.h). */
#include "string_family.h"

#include <locale.h>
#include <regex.h>
#include <string.h>
#include <wctype.h>

/* The parsed params are one block (the node frees them with one bd_free):
 * the struct, the stopword pointers, then their bytes and the regex. */
static bd_string_params *params_block(const bd_string_params *tmpl, char **words, int n_words, const char *ere)
{
    size_t bytes = sizeof *tmpl + (size_t)n_words * sizeof(char *) + (ere ? strlen(ere) + 1 : 0);
    for (int i = 0; i < n_words; i++) bytes += strlen(words[i]) + 1;
    bd_string_params *p = bd_malloc(bytes);
    if (!p) return NULL;
    *p = *tmpl;
    p->stopwords = (char **)(p + 1);
    p->n_stopwords = n_words;
    char *q = (char *)(p->stopwords + n_words);
    for (int i = 0; i < n_words; i++) {
        size_t k = strlen(words[i]) + 1;
        memcpy(q, words[i], k);
        p->stopwords[i] = q;
        q += k;
    }
    p->ere = NULL;
    if (ere) {
        memcpy(q, ere, strlen(ere) + 1);
        p->ere = q;
    }
    return p;
}

braid_status bd_string_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_string_params t = {.maxsplit = -1}, *p = NULL;
    char **words = NULL, *ere = NULL;
    int n_words = 0;
    if (n->op == BD_OP_StringSplit) {
        BD_TRY(bd_attr_string(n, "delimiter", NULL, &t.delimiter, e));
        if (bd_node_attr(n, "maxsplit")) {
            BD_TRY(bd_attr_int(n, "maxsplit", -1, &t.maxsplit, e));
            if (t.maxsplit < 0) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'maxsplit' is %lld, must be >= 0",
                             (long long)t.maxsplit);
                goto fail;
            }
        }
    } else if (n->op == BD_OP_StringNormalizer) {
        const char *act = NULL;
        int64_t cs = 0;
        BD_TRY(bd_attr_string(n, "case_change_action", "NONE", &act, e));
        BD_TRY(bd_attr_int(n, "is_case_sensitive", 0, &cs, e));
        t.case_sensitive = cs != 0;
        if (!strcmp(act, "LOWER")) t.case_change = BD_CASE_LOWER;
        else if (!strcmp(act, "UPPER")) t.case_change = BD_CASE_UPPER;
        else if (strcmp(act, "NONE")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                         "attribute 'case_change_action' is '%s', must be LOWER, UPPER or NONE", act);
            goto fail;
        }
        const bd_attr *sw = bd_node_attr(n, "stopwords");
        if (sw && sw->type != BD_ATTR_STRINGS) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'stopwords' must be a list of strings");
            goto fail;
        }
        if (sw && sw->n) {
            words = bd_calloc((size_t)sw->n, sizeof *words);
            BD_CHECK_ALLOC(e, words);
            for (; n_words < sw->n; n_words++) { /* compared case-folded when case-insensitive */
                words[n_words] = t.case_sensitive ? bd_strdup(sw->strings[n_words])
                                                  : bd_utf8_case(sw->strings[n_words], BD_CASE_LOWER);
                BD_CHECK_ALLOC(e, words[n_words]);
            }
        }
    } else if (n->op == BD_OP_RegexFullMatch) {
        const char *pat = NULL;
        BD_TRY(bd_attr_string(n, "pattern", NULL, &pat, e));
        if (!pat) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'pattern' is required");
            goto fail;
        }
        BD_TRY(bd_regex_translate(pat, &ere, e));
        regex_t re;
        int rc = regcomp(&re, ere, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char msg[256];
            regerror(rc, &re, msg, sizeof msg);
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'pattern' '%s' is not a valid regex: %s", pat, msg);
            goto fail;
        }
        regfree(&re);
    }
    p = params_block(&t, words, n_words, ere);
    BD_CHECK_ALLOC(e, p);
fail:
    for (int i = 0; i < n_words; i++) bd_free(words[i]);
    bd_free(words);
    bd_free(ere);
    return bd_params_done(n, p, st);
}

static braid_status need_string(const bd_tensor *t, const char *what, bd_err *e)
{
    if (t->dtype == BRAID_DTYPE_STRING) return BRAID_OK;
    return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' must be a string tensor, not %s", what, bd_dtype_name(t->dtype));
}

braid_status bd_string_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_string_params *p = n->params;
    braid_status st;
    if ((st = need_string(&in[0], "X", e))) return st;
    switch (n->op) {
    case BD_OP_StringConcat:
        if ((st = need_string(&in[1], "Y", e))) return st;
        if ((st = bd_broadcast_shape(&in[0], &in[1], &out[0], e))) return st;
        out[0].dtype = BRAID_DTYPE_STRING;
        return BRAID_OK;
    case BD_OP_RegexFullMatch:
        out[0] = in[0];
        out[0].data = NULL;
        out[0].dtype = BRAID_DTYPE_BOOL;
        return BRAID_OK;
    case BD_OP_StringSplit: {
        if (in[0].rank >= BD_MAX_RANK)
            return BD_FAIL(e, BRAID_ERR_LIMIT, "StringSplit adds a dim to rank %d; braid supports up to %d",
                           in[0].rank, BD_MAX_RANK);
        /* the largest count of parts: exact when X is known, else maxsplit + 1 or the cap */
        int64_t parts = p->maxsplit >= 0 ? p->maxsplit + 1 : BD_SPLIT_MAX_PARTS, numel = bd_numel(&in[0]);
        if (in[0].data) {
            parts = 0;
            for (int64_t i = 0; i < numel; i++) {
                int64_t c = bd_string_split(((const char *const *)in[0].data)[i], p->delimiter, p->maxsplit, 0,
                                            NULL, NULL);
                parts = BD_MAX(parts, c);
            }
        }
        if (numel == 0) parts = 0;
        out[0] = in[0];
        out[0].data = NULL;
        out[0].dims[out[0].rank++] = parts;
        out[1] = in[0];
        out[1].data = NULL;
        out[1].dtype = BRAID_DTYPE_INT64;
        return BRAID_OK;
    }
    case BD_OP_StringNormalizer:
        if (!(in[0].rank == 1 || (in[0].rank == 2 && in[0].dims[0] == 1)))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'X' must be [C] or [1, C], not rank %d", in[0].rank);
        out[0] = in[0]; /* the largest: nothing filtered; at least one (empty) string */
        out[0].data = NULL;
        if (out[0].dims[out[0].rank - 1] == 0) out[0].dims[out[0].rank - 1] = 1;
        return BRAID_OK;
    default:
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the string family", n->op_type);
    }
}

double bd_string_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)out;
    return 50.0 * (double)bd_numel(&in[0]); /* a few dozen bytes touched per string */
}

/* ---- helpers the CPU kernels share ------------------------------------------- */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

int64_t bd_string_split(const char *s, const char *delim, int64_t maxsplit, int64_t max, const char **begin,
                        size_t *len)
{
    int64_t k = 0;
    if (!delim || !*delim) { /* whitespace runs, as Python's str.split() */
        const char *q = s;
        for (;;) {
            while (*q && is_space(*q)) q++;
            if (!*q) break;
            const char *b = q;
            if (maxsplit >= 0 && k == maxsplit) {
                q += strlen(q); /* the rest, its trailing whitespace stripped */
                while (q > b && is_space(q[-1])) q--;
            } else {
                while (*q && !is_space(*q)) q++;
            }
            if (begin && k < max) begin[k] = b, len[k] = (size_t)(q - b);
            k++;
            if (maxsplit >= 0 && k > maxsplit) break;
        }
        return k;
    }
    size_t dl = strlen(delim);
    const char *q = s;
    for (;;) {
        const char *hit = maxsplit >= 0 && k == maxsplit ? NULL : strstr(q, delim);
        const char *end = hit ? hit : q + strlen(q);
        if (begin && k < max) begin[k] = q, len[k] = (size_t)(end - q);
        k++;
        if (!hit) break;
        q = hit + dl;
    }
    return k;
}

static size_t utf8_decode(const unsigned char *s, wint_t *cp)
{
    if (s[0] < 0x80) { *cp = s[0]; return 1; }
    int n = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (!n) return 0;
    wint_t c = s[0] & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    *cp = c;
    return (size_t)n;
}

static size_t utf8_encode(wint_t c, char *o)
{
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xc0 | c >> 6); o[1] = (char)(0x80 | (c & 0x3f)); return 2; }
    if (c < 0x10000) {
        o[0] = (char)(0xe0 | c >> 12); o[1] = (char)(0x80 | ((c >> 6) & 0x3f)); o[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | c >> 18); o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3f)); o[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

static locale_t utf8_locale(void)
{
    static locale_t loc;
    static int tried;
    if (!__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) { /* a benign race: both make the same locale */
        locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
        if (!l) l = newlocale(LC_CTYPE_MASK, "C.utf8", (locale_t)0);
        loc = l;
        __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
    }
    return loc;
}

char *bd_utf8_case(const char *s, int action)
{
    size_t n = strlen(s);
    char *o = bd_malloc(n * 2 + 8); /* a case change may grow a code point by half (2 bytes to 3) */
    if (!o) return NULL;
    locale_t loc = utf8_locale();
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        wint_t c;
        size_t k = utf8_decode((const unsigned char *)s + i, &c);
        if (!k) { o[w++] = s[i++]; continue; } /* invalid byte: kept */
        if (action != BD_CASE_NONE) {
            if (loc) c = action == BD_CASE_LOWER ? towlower_l(c, loc) : towupper_l(c, loc);
            else if (c < 0x80) c = action == BD_CASE_LOWER ? (wint_t)(c >= 'A' && c <= 'Z' ? c + 32 : c)
                                                           : (wint_t)(c >= 'a' && c <= 'z' ? c - 32 : c);
        }
        w += utf8_encode(c, o + w);
        i += k;
    }
    o[w] = 0;
    return o;
}

/* ---- RE2 to POSIX ERE ---------------------------------------------------------- */

typedef struct rbuf {
    char *s;
    size_t n, cap;
} rbuf;

static int rput(rbuf *b, const char *t)
{
    size_t k = strlen(t);
    if (b->n + k + 1 > b->cap) {
        size_t c = (b->cap ? b->cap * 2 : 64) + k;
        char *q = bd_realloc(b->s, c);
        if (!q) return -1;
        b->s = q, b->cap = c;
    }
    memcpy(b->s + b->n, t, k + 1);
    b->n += k;
    return 0;
}

static int rputc(rbuf *b, char c)
{
    char t[2] = {c, 0};
    return rput(b, t);
}

/* A bracket class starting after '[' at *pp: its POSIX form into b. */
static braid_status bracket(const char **pp, rbuf *b, const char *re2, bd_err *e)
{
    const char *p = *pp;
    rbuf body = {0};
    int neg = 0, dash = 0, rbr = 0, caret = 0, oom = 0;
    if (*p == '^') neg = 1, p++;
    if (*p == ']') rbr = 1, p++;
    for (; *p && *p != ']'; p++) {
        if (*p == '[' && p[1] == ':') { /* a POSIX class, as RE2 also takes */
            const char *end = strstr(p, ":]");
            if (!end) break;
            char tmp[32];
            size_t k = (size_t)(end + 2 - p);
            if (k >= sizeof tmp) break;
            memcpy(tmp, p, k);
            tmp[k] = 0;
            oom |= rput(&body, tmp);
            p = end + 1;
            continue;
        }
        if (*p != '\\') {
            if (*p == '^') { caret = 1; continue; }
            oom |= rputc(&body, *p);
            continue;
        }
        char c = *++p;
        switch (c) {
        case 'w': oom |= rput(&body, "[:alnum:]_"); break;
        case 'd': oom |= rput(&body, "0-9"); break;
        case 's': oom |= rput(&body, "[:space:]"); break;
        case 'n': oom |= rputc(&body, '\n'); break;
        case 't': oom |= rputc(&body, '\t'); break;
        case '-': dash = 1; break;
        case ']': rbr = 1; break;
        case '^': caret = 1; break;
        case 0: goto bad;
        default:
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
                bd_free(body.s);
                return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                               "regex '%s': the escape \\%c in a class has no POSIX form in braid", re2, c);
            }
            oom |= rputc(&body, c);
        }
    }
    if (*p != ']') goto bad;
    oom |= rput(b, neg ? "[^" : "[");
    if (rbr) oom |= rputc(b, ']');
    if (body.s) oom |= rput(b, body.s);
    if (caret) oom |= rputc(b, '^');
    if (dash) oom |= rputc(b, '-');
    if (!rbr && !body.s && !caret && !dash) { bd_free(body.s); return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "regex '%s': empty class []", re2); }
    oom |= rputc(b, ']');
    bd_free(body.s);
    *pp = p;
    if (oom) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    return BRAID_OK;
bad:
    bd_free(body.s);
    return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "regex '%s': a class [ is not closed", re2);
}

braid_status bd_regex_translate(const char *re2, char **out, bd_err *e)
{
    braid_status st = BRAID_OK;
    rbuf b = {0};
    int oom = rput(&b, "^(");
    *out = NULL;
    for (const char *p = re2; *p; p++) {
        char c = *p;
        if (c == '[') {
            p++;
            BD_TRY(bracket(&p, &b, re2, e));
            continue;
        }
        if (c == '(' && p[1] == '?') {
            if (p[2] == ':') { oom |= rputc(&b, '('); p += 2; continue; }
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "regex '%s': the group '(?%c' (flags, lookaround or a named "
                         "group) has no POSIX form in braid", re2, p[2] ? p[2] : ' ');
            goto fail;
        }
        if ((c == '*' || c == '+' || c == '?' || c == '}') && p[1] == '?') {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "regex '%s': the lazy quantifier '%c?' has no POSIX form in braid",
                         re2, c);
            goto fail;
        }
        if (c != '\\') { oom |= rputc(&b, c); continue; }
        c = *++p;
        switch (c) {
        case 'd': oom |= rput(&b, "[0-9]"); break;
        case 'D': oom |= rput(&b, "[^0-9]"); break;
        case 's': oom |= rput(&b, "[[:space:]]"); break;
        case 'S': oom |= rput(&b, "[^[:space:]]"); break;
        case 'w': case 'W': case 'b': case 'B': oom |= rputc(&b, '\\') | rputc(&b, c); break; /* glibc's */
        case 'A': oom |= rputc(&b, '^'); break;
        case 'z': oom |= rputc(&b, '$'); break;
        case 'n': oom |= rputc(&b, '\n'); break;
        case 't': oom |= rputc(&b, '\t'); break;
        case 0:
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "regex '%s' ends with a lone backslash", re2);
            goto fail;
        default:
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
                st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "regex '%s': the escape \\%c has no POSIX form in braid", re2, c);
                goto fail;
            }
            oom |= rputc(&b, '\\') | rputc(&b, c);
        }
    }
    oom |= rput(&b, ")$");
    if (oom) { st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); goto fail; }
    *out = b.s;
    return BRAID_OK;
fail:
    bd_free(b.s);
    return st;
}
