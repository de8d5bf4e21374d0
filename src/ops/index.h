/* index.h: the index family's parsed attributes (GatherElements, GatherND,
 * OneHot, Trilu, EyeLike, ReverseSequence) and the index formulas that shape
 * inference (src/ops/index.c), the CPU kernels and the CUDA kernels share. */
#ifndef BD_OPS_INDEX_H
#define BD_OPS_INDEX_H

#include "ops.h"

typedef struct bd_index_params {
    int64_t axis;                  /* GatherElements, OneHot */
    int64_t batch_dims;            /* GatherND */
    int64_t upper;                 /* Trilu */
    int64_t k;                     /* EyeLike */
    int64_t dtype;                 /* EyeLike: 0 = the input's */
    int64_t batch_axis, time_axis; /* ReverseSequence */
} bd_index_params;

/* An index into a dim of size dim, negative counting from the end: the
 * position, or -1 when it is outside [-dim, dim). */
static inline BD_HOST_DEVICE int64_t bd_index_wrap(int64_t v, int64_t dim)
{
    if (v < 0) v += dim;
    return v >= 0 && v < dim ? v : -1;
}

/* Element i of an int32 or int64 index tensor (is64 says which). */
static inline BD_HOST_DEVICE int64_t bd_index_at(const void *p, int is64, int64_t i)
{
    return is64 ? ((const int64_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
}

/* Trilu: row i of a matrix keeps columns [*lo, *hi) (upper: j >= i + k;
 * lower: j <= i + k) of its m columns; the rest become 0. k may be any int64. */
static inline BD_HOST_DEVICE void bd_trilu_row(int64_t i, int64_t m, int64_t k, int upper, int64_t *lo, int64_t *hi)
{
    int64_t lim = m + i + 1; /* |k| beyond this decides nothing more */
    int64_t kk = k > lim ? lim : k < -lim ? -lim : k, edge = i + kk;
    if (upper) {
        *lo = edge < 0 ? 0 : edge > m ? m : edge;
        *hi = m;
    } else {
        *lo = 0;
        *hi = edge + 1 < 0 ? 0 : edge + 1 > m ? m : edge + 1;
    }
}

/* GatherElements: output (= indices) element i at coordinates c reads the
 * data element at sum_{d != axis} c_d * dst[d] + index * dst[axis]. The
 * index tensor's dims are idims. */
typedef struct bd_gather_elems {
    int rank, axis;
    int64_t idims[BD_MAX_RANK], dst[BD_MAX_RANK], dim; /* dim: data's size along axis */
} bd_gather_elems;

/* The data offset of output element i without the axis term, and i's
 * coordinate along the axis is not needed: the index replaces it. */
static inline BD_HOST_DEVICE int64_t bd_gather_elems_base(const bd_gather_elems *g, int64_t i)
{
    int64_t off = 0;
    for (int d = g->rank - 1; d >= 0; d--) {
        int64_t q = i / g->idims[d];
        if (d != g->axis) off += (i - q * g->idims[d]) * g->dst[d];
        i = q;
    }
    return off;
}

/* GatherND and ScatterND: the indices are n_tuples tuples of k values (the
 * last dim); tuple t belongs to batch t / per_batch and addresses a slice of
 * `slice` contiguous elements of the data at batch * batch_stride +
 * sum_j wrap(tuple[j]) * st[j] (st: the strides of data dims b..b+k-1). */
typedef struct bd_nd_geom {
    int k;
    int64_t n_tuples, per_batch, batch_stride, slice;
    int64_t dims[BD_MAX_RANK], st[BD_MAX_RANK]; /* of the k indexed data dims */
} bd_nd_geom;

/* The data offset of tuple t (indices at idx, int32 or int64); -1 when an
 * index is out of range (*bad_j gets which one). */
static inline BD_HOST_DEVICE int64_t bd_nd_offset(const bd_nd_geom *g, const void *idx, int is64, int64_t t, int *bad_j)
{
    int64_t off = (t / g->per_batch) * g->batch_stride;
    for (int j = 0; j < g->k; j++) {
        int64_t v = bd_index_wrap(bd_index_at(idx, is64, t * g->k + j), g->dims[j]);
        if (v < 0) {
            if (bad_j) *bad_j = j;
            return -1;
        }
        off += v * g->st[j];
    }
    return off;
}

/* GatherND's and ScatterND's geometry from the data and indices shapes
 * (checked by inference). */
void bd_nd_geom_of(const bd_tensor *data, const bd_tensor *indices, int batch_dims, bd_nd_geom *g);
/* GatherElements' geometry (axis normalized). */
void bd_gather_elems_of(const bd_tensor *data, const bd_tensor *indices, int axis, bd_gather_elems *g);

/* ReverseSequence: (outer, time, inner) around the time axis, inner being
 * the batch axis's stride when batch follows time; element t of batch b reads
 * time t' = t < len ? len - 1 - t : t. */
static inline BD_HOST_DEVICE int64_t bd_reverse_time(int64_t t, int64_t len)
{
    return t < len ? len - 1 - t : t;
}

/* The bytes of the value 1 in dtype (EyeLike's diagonal); 0 when dtype has
 * none braid writes. */
size_t bd_one_bytes(int dtype, unsigned char *bytes);

#endif /* BD_OPS_INDEX_H */
