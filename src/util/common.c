/* common.c: error records, allocation wrappers with fault injection, dtype
 * and shape helpers, file reading and the clock. */
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

braid_status bd_fail(bd_err *e, braid_status s, const char *file, int line, const char *fmt, ...)
{
    if (!e) return s;
    e->status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    const char *base = strstr(file, "src/");
    snprintf(e->where, sizeof e->where, "%s:%d", base ? base : file, line);
    return s;
}

void bd_err_prefix(bd_err *e, const char *fmt, ...)
{
    if (!e) return;
    char pre[512], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    snprintf(e->msg, sizeof e->msg, "%s%s", pre, old);
}

/* ---- allocation ---------------------------------------------------------- */

#ifdef BRAID_FAULT_INJECTION
#include <stdatomic.h>
static _Atomic long fault_target; /* fail when counter reaches this; 0 = off */
static _Atomic long fault_counter;
static _Atomic long live_count; /* successful allocations not yet freed */
static void *counted(void *p)
{
    if (p) atomic_fetch_add(&live_count, 1);
    return p;
}
long bd_alloc_live(void) { return atomic_load(&live_count); }
static int fault_hit(void)
{
    long n = atomic_fetch_add(&fault_counter, 1) + 1;
    long t = atomic_load(&fault_target);
    return t > 0 && n == t;
}
void bd_fault_arm(long n)
{
    atomic_store(&fault_counter, 0);
    atomic_store(&fault_target, n);
}
long bd_fault_count(void) { return atomic_load(&fault_counter); }
static void uncounted(void *p)
{
    if (p) atomic_fetch_sub(&live_count, 1);
}
#else
static int fault_hit(void) { return 0; }
static void *counted(void *p) { return p; }
static void uncounted(void *p) { (void)p; }
void bd_fault_arm(long n) { (void)n; }
long bd_fault_count(void) { return 0; }
long bd_alloc_live(void) { return 0; }
#endif

void *bd_malloc(size_t n) { return fault_hit() ? NULL : counted(malloc(n ? n : 1)); }
void *bd_calloc(size_t c, size_t s) { return fault_hit() ? NULL : counted(calloc(c ? c : 1, s ? s : 1)); }
void *bd_realloc(void *p, size_t n)
{
    if (fault_hit()) return NULL;
    void *q = realloc(p, n ? n : 1);
    return p ? q : counted(q);
}
void bd_free(void *p)
{
    uncounted(p);
    free(p);
}
char *bd_strndup(const char *s, size_t n)
{
    if (!s) return NULL;
    char *d = bd_malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}
char *bd_strdup(const char *s) { return s ? bd_strndup(s, strlen(s)) : NULL; }

/* ---- dtypes and shapes ----------------------------------------------------- */

size_t bd_dtype_size(int dt)
{
    if (bd_dt_container(dt)) return bd_dtype_size(bd_dt_elem(dt)) ? sizeof(void *) : 0;
    switch (dt) {
    case BRAID_DTYPE_FLOAT: case BRAID_DTYPE_INT32: case BRAID_DTYPE_UINT32: return 4;
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_INT8: case BRAID_DTYPE_BOOL: return 1;
    case BRAID_DTYPE_UINT16: case BRAID_DTYPE_INT16: case BRAID_DTYPE_FLOAT16: case BRAID_DTYPE_BFLOAT16: return 2;
    case BRAID_DTYPE_INT64: case BRAID_DTYPE_DOUBLE: case BRAID_DTYPE_UINT64: return 8;
    case BRAID_DTYPE_STRING: return sizeof(const char *); /* a pointer per element (braid.h) */
    case BRAID_DTYPE_FLOAT8E4M3FN: case BRAID_DTYPE_FLOAT8E4M3FNUZ: case BRAID_DTYPE_FLOAT8E5M2:
    case BRAID_DTYPE_FLOAT8E5M2FNUZ: case BRAID_DTYPE_FLOAT8E8M0: case BRAID_DTYPE_UINT4: case BRAID_DTYPE_INT4:
    case BRAID_DTYPE_FLOAT4E2M1: case BRAID_DTYPE_UINT2: case BRAID_DTYPE_INT2: case BRAID_DTYPE_FLOAT6E2M3:
    case BRAID_DTYPE_FLOAT6E3M2:
        return 1; /* sub-byte types: one element per byte in memory (braid.h) */
    default: return 0;
    }
}

static const char *const dtype_names[] = {"undefined", "float32", "uint8", "int8", "uint16", "int16",
                                          "int32", "int64", "string", "bool", "float16", "float64",
                                          "uint32", "uint64", "complex64", "complex128", "bfloat16",
                                          "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
                                          "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2",
                                          "float6e2m3", "float6e3m2"};
enum { N_DTYPE_NAMES = (int)(sizeof dtype_names / sizeof *dtype_names) };
/* container forms: "seq(float32)", "optional(float32)", "optional(seq(float32))" */
static char container_names[3][N_DTYPE_NAMES][40];
static pthread_once_t container_once = PTHREAD_ONCE_INIT;

static void container_names_init(void)
{
    for (int e = 0; e < N_DTYPE_NAMES; e++) {
        snprintf(container_names[0][e], sizeof container_names[0][e], "seq(%s)", dtype_names[e]);
        snprintf(container_names[1][e], sizeof container_names[1][e], "optional(%s)", dtype_names[e]);
        snprintf(container_names[2][e], sizeof container_names[2][e], "optional(seq(%s))", dtype_names[e]);
    }
}

const char *bd_dtype_name(int dt)
{
    if (dt >= 0 && dt < N_DTYPE_NAMES) return dtype_names[dt];
    int e = bd_dt_elem(dt), kind = dt & ~0xff;
    int form = kind == BD_DT_SEQ ? 0 : kind == BD_DT_OPT ? 1 : kind == (BD_DT_OPT | BD_DT_SEQ) ? 2 : -1;
    if (form < 0 || e <= 0 || e >= N_DTYPE_NAMES) return "unknown";
    pthread_once(&container_once, container_names_init);
    return container_names[form][e];
}

float bd_half_to_float(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
    if (e == 0) {
        float f = (float)m * 0x1p-24f; /* zero or subnormal */
        return s ? -f : f;
    }
    bits = e == 31 ? s | 0x7f800000u | (m << 13) : s | ((e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

int64_t bd_numel(const bd_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    return n;
}

braid_status bd_tensor_nbytes(const bd_tensor *t, size_t *out, bd_err *e)
{
    const uint64_t limit = (uint64_t)1 << 40;
    uint64_t n = bd_dtype_size(t->dtype);
    if (t->rank < 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "tensor of unknown rank");
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "negative dim %lld", (long long)t->dims[i]);
        if (t->dims[i] && n > limit / (uint64_t)t->dims[i]) {
            char buf[160];
            return BD_FAIL(e, BRAID_ERR_LIMIT, "tensor of shape %s is larger than 2^40 bytes",
                           bd_shape_str(t, buf, sizeof buf));
        }
        n *= (uint64_t)t->dims[i];
    }
    *out = (size_t)n;
    return BRAID_OK;
}

const char *bd_shape_str(const bd_tensor *t, char *buf, size_t n)
{
    if (t->rank < 0) { snprintf(buf, n, "?"); return buf; }
    if (t->rank == 0) { snprintf(buf, n, "scalar"); return buf; }
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < t->rank && off < n; i++)
        off += snprintf(buf + off, n - off, "%s%lld", i ? "x" : "", (long long)t->dims[i]);
    return buf;
}

int bd_shape_equal(const bd_tensor *a, const bd_tensor *b)
{
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

braid_status bd_broadcast_shape(const bd_tensor *a, const bd_tensor *b, bd_tensor *out, bd_err *e)
{
    int r = BD_MAX(a->rank, b->rank);
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[160], sb[160];
            return BD_FAIL(e, BRAID_ERR_SHAPE, "shapes %s and %s do not broadcast",
                           bd_shape_str(a, sa, sizeof sa), bd_shape_str(b, sb, sizeof sb));
        }
        out->dims[i] = da == 1 ? db : da;
    }
    out->rank = r;
    return BRAID_OK;
}

braid_status bd_read_file(const char *path, void **data, size_t *size, bd_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f) return BD_FAIL(e, BRAID_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    braid_status st = BRAID_OK;
    char *buf = NULL;
    long len = -1;
    struct stat sb = {0};
    /* a directory opens on Linux and reports an absurd size: say what it is */
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = BD_FAIL(e, BRAID_ERR_IO, "cannot read '%s': %s", path,
                     S_ISDIR(sb.st_mode) ? "it is a directory, not a file" : "not a regular file");
        goto fail;
    }
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = BD_FAIL(e, BRAID_ERR_IO, "cannot read '%s': not a regular file", path);
        goto fail;
    }
    buf = bd_malloc((size_t)len + 1);
    if (!buf) {
        st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory reading '%s' (%ld bytes)", path, len);
        goto fail;
    }
    if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
        st = BD_FAIL(e, BRAID_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        goto fail;
    }
    buf[len] = 0;
    fclose(f);
    *data = buf;
    *size = (size_t)len;
    return BRAID_OK;
fail:
    bd_free(buf);
    fclose(f);
    return st;
}

double bd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
