/* npy.c: NumPy .npy files: a magic string, a version, a Python-dict header
 * ('descr', 'fortran_order', 'shape'), then the raw data. Every length and
 * shape is checked against the bytes present before anything is allocated. */
#include "util/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *descr; int dtype; } dtypes[] = {
    {"<f4", BRAID_DTYPE_FLOAT}, {"<f8", BRAID_DTYPE_DOUBLE}, {"<f2", BRAID_DTYPE_FLOAT16},
    {"<i8", BRAID_DTYPE_INT64}, {"<i4", BRAID_DTYPE_INT32}, {"<i2", BRAID_DTYPE_INT16},
    {"|i1", BRAID_DTYPE_INT8},  {"<u8", BRAID_DTYPE_UINT64}, {"<u4", BRAID_DTYPE_UINT32},
    {"<u2", BRAID_DTYPE_UINT16}, {"|u1", BRAID_DTYPE_UINT8}, {"|b1", BRAID_DTYPE_BOOL},
};

/* Finds 'key': in the header and returns the text after the colon. */
static const char *header_field(const char *h, const char *key)
{
    const char *p = strstr(h, key);
    if (!p) return NULL;
    p = strchr(p + strlen(key), ':');
    if (!p) return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

braid_status bd_npy_parse(const void *bytes, size_t size, bd_tensor *t, bd_err *e)
{
    const unsigned char *b = bytes;
    char header[65536];
    memset(t, 0, sizeof *t);
    if (size < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return BD_FAIL(e, BRAID_ERR_PARSE, "not a .npy file (bad magic)");
    size_t hlen, off;
    if (b[6] == 1) { hlen = b[8] | (size_t)b[9] << 8; off = 10; }
    else if (b[6] == 2 || b[6] == 3) {
        if (size < 12) return BD_FAIL(e, BRAID_ERR_PARSE, "truncated .npy header");
        hlen = b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    } else return BD_FAIL(e, BRAID_ERR_PARSE, ".npy version %d is not supported", b[6]);
    if (hlen >= sizeof header || off + hlen > size) return BD_FAIL(e, BRAID_ERR_PARSE, "truncated .npy header");
    memcpy(header, b + off, hlen);
    header[hlen] = 0;
    off += hlen;
    const char *d = header_field(header, "'descr'");
    const char *fo = header_field(header, "'fortran_order'");
    const char *sh = header_field(header, "'shape'");
    if (!d || !fo || !sh) return BD_FAIL(e, BRAID_ERR_PARSE, ".npy header lacks descr, fortran_order or shape");
    if (strncmp(fo, "False", 5) != 0) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, ".npy in Fortran order is not supported");
    if (*d != '\'') return BD_FAIL(e, BRAID_ERR_PARSE, "bad .npy descr");
    d++;
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++) {
        size_t n = strlen(dtypes[i].descr);
        /* '|u1' may also be written '<u1'; '=' means native (little-endian here). */
        if ((strncmp(d, dtypes[i].descr, n) == 0 || (strncmp(d + 1, dtypes[i].descr + 1, n - 1) == 0 &&
                                                     (d[0] == '<' || d[0] == '|' || d[0] == '='))) && d[n] == '\'') {
            t->dtype = dtypes[i].dtype;
            break;
        }
    }
    if (!t->dtype) {
        const char *end = strchr(d, '\'');
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, ".npy dtype '%.*s' is not supported", end ? (int)(end - d) : 8, d);
    }
    if (*sh != '(') return BD_FAIL(e, BRAID_ERR_PARSE, "bad .npy shape");
    sh++;
    t->rank = 0;
    for (;;) {
        while (*sh == ' ' || *sh == ',') sh++;
        if (*sh == ')') break;
        char *end;
        errno = 0;
        long long v = strtoll(sh, &end, 10);
        if (end == sh || v < 0 || errno) return BD_FAIL(e, BRAID_ERR_PARSE, "bad .npy shape");
        if (t->rank == BD_MAX_RANK) return BD_FAIL(e, BRAID_ERR_LIMIT, ".npy rank above %d", BD_MAX_RANK);
        t->dims[t->rank++] = v;
        sh = end;
    }
    size_t nbytes;
    braid_status st = bd_tensor_nbytes(t, &nbytes, e);
    if (st) return st;
    if (size - off < nbytes)
        return BD_FAIL(e, BRAID_ERR_PARSE, ".npy data is truncated: %zu bytes for a shape that needs %zu",
                       size - off, nbytes);
    t->data = bd_malloc(nbytes);
    if (!t->data) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(t->data, b + off, nbytes);
    return BRAID_OK;
}

braid_status bd_npy_read(const char *path, bd_tensor *t, bd_err *e)
{
    void *bytes = NULL;
    size_t size = 0;
    braid_status st = bd_read_file(path, &bytes, &size, e);
    if (st) return st;
    st = bd_npy_parse(bytes, size, t, e);
    if (st) bd_err_prefix(e, "%s: ", path);
    bd_free(bytes);
    return st;
}

braid_status bd_npy_write(const char *path, const bd_tensor *t, bd_err *e)
{
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (dtypes[i].dtype == t->dtype) descr = dtypes[i].descr;
    if (!descr) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "cannot write dtype %s to .npy", bd_dtype_name(t->dtype));
    char h[512];
    int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->rank; i++) n += snprintf(h + n, sizeof h - (size_t)n, "%lld,%s", (long long)t->dims[i], i + 1 < t->rank ? " " : "");
    n += snprintf(h + n, sizeof h - (size_t)n, "), }");
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    memset(h + n, ' ', (size_t)pad);
    n += pad;
    h[n++] = '\n';
    size_t nbytes;
    braid_status st = bd_tensor_nbytes(t, &nbytes, e);
    if (st) return st;
    FILE *f = fopen(path, "wb");
    if (!f) return BD_FAIL(e, BRAID_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h, 1, (size_t)n, f) == (size_t)n &&
             (nbytes == 0 || fwrite(t->data, 1, nbytes, f) == nbytes);
    if (fclose(f) != 0) ok = 0;
    if (!ok) return BD_FAIL(e, BRAID_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return BRAID_OK;
}
