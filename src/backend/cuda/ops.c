/* ops.c: dispatch from a node to its family's CUDA launcher (kernels/<family>.cu)
 * and to the family's cache release; families whose kernels are not built
 * yet answer UNSUPPORTED. */
#include "backend/cuda/cuda_ops.h"

typedef braid_status (*cuda_fn)(const bd_cuda_kernel *);
typedef void (*cuda_free_fn)(const bd_node *, void *);

/* A stub for a family whose kernels/<family>.cu does not exist (the build
 * defines BD_CUDA_STUB_<family>). */
#define STUB(f)                                                                                    \
    braid_status bd_cuda_##f(const bd_cuda_kernel *k)                                              \
    {                                                                                              \
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "the CUDA backend has no %s kernels (family " \
                       "'%s' is not built)", k->node->op_type, #f);                                \
    }                                                                                              \
    void bd_cuda_##f##_free(const bd_node *n, void *cache) { (void)n; (void)cache; }
#ifdef BD_CUDA_STUB_conv
STUB(conv)
#endif
#ifdef BD_CUDA_STUB_gemm
STUB(gemm)
#endif
#ifdef BD_CUDA_STUB_norm
STUB(norm)
#endif
#ifdef BD_CUDA_STUB_binary
STUB(binary)
#endif
#ifdef BD_CUDA_STUB_unary
STUB(unary)
#endif
#ifdef BD_CUDA_STUB_pool
STUB(pool)
#endif
#ifdef BD_CUDA_STUB_softmax
STUB(softmax)
#endif
#ifdef BD_CUDA_STUB_reduce
STUB(reduce)
#endif
#ifdef BD_CUDA_STUB_shape
STUB(shape)
#endif
#ifdef BD_CUDA_STUB_layout
STUB(layout)
#endif
#ifdef BD_CUDA_STUB_generate
STUB(generate)
#endif
#ifdef BD_CUDA_STUB_resize
STUB(resize)
#endif

static const cuda_fn families[BD_FAM_COUNT] = {
#define X(f) bd_cuda_##f,
    BD_FAMILIES(X)
#undef X
};

static const cuda_free_fn frees[BD_FAM_COUNT] = {
#define X(f) bd_cuda_##f##_free,
    BD_FAMILIES(X)
#undef X
};

braid_status bd_cuda_run(const bd_cuda_kernel *k)
{
    return families[bd_op_table[k->node->op].family](k);
}

void bd_cuda_free_cache(const bd_node *n, void *cache)
{
    if (cache) frees[bd_op_table[n->op].family](n, cache);
}
