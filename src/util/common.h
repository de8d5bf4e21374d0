/* common.h: what every module of braid shares: the error record and its
 * macros, the allocation wrappers (with test-time fault injection), the
 * internal tensor descriptor and dtype helpers. */
#ifndef BD_COMMON_H
#define BD_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "braid.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BD_MAX_RANK BRAID_MAX_RANK

/* The record of a failure: a status, a message for the user that names what
 * and where, and the source location that raised it (for developers). */
typedef struct bd_err {
    braid_status status;
    char msg[1024];
    char where[96]; /* file:line */
} bd_err;

braid_status bd_fail(bd_err *e, braid_status s, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Sets *e and evaluates to the status: `return BD_FAIL(e, BRAID_ERR_SHAPE, "...", ...);` */
#define BD_FAIL(e, s, ...) bd_fail((e), (s), __FILE__, __LINE__, __VA_ARGS__)
/* Runs a call that returns braid_status; on failure jumps to `fail` with st set. */
#define BD_TRY(call)                                                                               \
    do {                                                                                           \
        st = (call);                                                                               \
        if (st != BRAID_OK) goto fail;                                                             \
    } while (0)
/* Runs a call that returns braid_status; on failure returns that status (for
 * functions with nothing to clean up). */
#define BD_TRY_RET(call)                                                                           \
    do {                                                                                           \
        braid_status st_ = (call);                                                                 \
        if (st_ != BRAID_OK) return st_;                                                           \
    } while (0)
/* Fails with OUT_OF_MEMORY when ptr is NULL. */
#define BD_CHECK_ALLOC(e, ptr)                                                                     \
    do {                                                                                           \
        if (!(ptr)) {                                                                              \
            st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");                             \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)
/* Prefixes e->msg with a context: "node 'x' (Conv): " + old message. */
void bd_err_prefix(bd_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Allocation. All library memory goes through these so that a test build
 * (BRAID_FAULT_INJECTION) can make the n-th allocation fail. */
void *bd_malloc(size_t n);
void *bd_calloc(size_t count, size_t size);
void *bd_realloc(void *p, size_t n);
void bd_free(void *p);
char *bd_strdup(const char *s);
char *bd_strndup(const char *s, size_t n);
/* Fault injection: fail the n-th allocation from now (1-based); 0 turns it
 * off. Returns how many allocations were counted since the last arm. */
void bd_fault_arm(long n);
long bd_fault_count(void);
/* Fault-injection builds: allocations made through these wrappers and not
 * yet freed (0 in other builds). */
long bd_alloc_live(void);
#ifdef BRAID_FAULT_INJECTION
#define BD_FAULT_INJECTION_BUILD 1
#else
#define BD_FAULT_INJECTION_BUILD 0
#endif

/* The internal tensor: shape, dtype, and data (NULL when not known). A value
 * that an optional input leaves out has dtype UNDEFINED and rank -1. */
typedef struct bd_tensor {
    int dtype;                  /* braid_dtype */
    int rank;                   /* -1 when unknown */
    int64_t dims[BD_MAX_RANK];  /* (d0, d1, ...) */
    void *data;
} bd_tensor;

size_t bd_dtype_size(int dtype);   /* 0 for UNDEFINED; a pointer for STRING and containers */
/* Sequence and optional values (braid.h's flags on the dtype). Inside a plan
 * such a value is one pointer (rank 0, bd_dtype_size bytes), written by the
 * node that makes it: a sequence's points at its bd_seq (never NULL), an
 * optional's at the bd_tensor or bd_seq it holds, or is NULL when empty. The
 * objects and their elements' data are immutable once made; kernels make
 * them in the run's pool (util/strpool.h), so they live until the next run. */
#define BD_DT_SEQ BRAID_DTYPE_SEQUENCE
#define BD_DT_OPT BRAID_DTYPE_OPTIONAL
static inline int bd_dt_container(int dt) { return (dt & (BD_DT_SEQ | BD_DT_OPT)) != 0; }
/* The tensor dtype inside a container type (dt itself for a tensor). */
static inline int bd_dt_elem(int dt) { return dt & 0xff; }
/* Whether values of dtypes a and b are held alike: equal, or a sequence and
 * an optional of it (both a pointer to a bd_seq; a NULL one empty). */
static inline int bd_dt_alike(int a, int b)
{
    return a == b || ((a & BD_DT_SEQ) && (b & BD_DT_SEQ) && bd_dt_elem(a) == bd_dt_elem(b));
}
typedef struct bd_seq {
    int elem;                   /* the elements' tensor dtype */
    int n;
    struct bd_tensor *items;    /* n tensors, data immutable */
} bd_seq;
float bd_half_to_float(uint16_t h); /* IEEE half (float16 bits) to float */
const char *bd_dtype_name(int dtype);
int64_t bd_numel(const bd_tensor *t); /* 1 for a scalar */
/* numel * dtype size, or fails with LIMIT on overflow or over 2^40 bytes. */
braid_status bd_tensor_nbytes(const bd_tensor *t, size_t *out, bd_err *e);
/* "1x3x224x224" (or "scalar"); buf of at least 160 bytes. */
const char *bd_shape_str(const bd_tensor *t, char *buf, size_t n);
int bd_shape_equal(const bd_tensor *a, const bd_tensor *b);
/* 1 when t's rank and every dim are known (none negative). */
static inline int bd_shape_known(const bd_tensor *t)
{
    if (t->rank < 0) return 0;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] < 0) return 0;
    return 1;
}

/* Multi-directional (numpy) broadcasting of a and b into out's rank/dims. */
braid_status bd_broadcast_shape(const bd_tensor *a, const bd_tensor *b, bd_tensor *out, bd_err *e);

/* Reads a whole file into memory (bd_malloc'ed). */
braid_status bd_read_file(const char *path, void **data, size_t *size, bd_err *e);

/* Marks a static inline function that both the CPU code and CUDA kernels
 * call, so the two backends share one definition of a formula. */
#ifdef __CUDACC__
#define BD_HOST_DEVICE __host__ __device__
#else
#define BD_HOST_DEVICE
#endif

/* Small helpers. */
#define BD_MIN(a, b) ((a) < (b) ? (a) : (b))
#define BD_MAX(a, b) ((a) > (b) ? (a) : (b))
#define BD_CEIL_DIV(a, b) (((a) + (b)-1) / (b))
double bd_now(void); /* monotonic seconds */

#ifdef __cplusplus
}
#endif
#endif /* BD_COMMON_H */
