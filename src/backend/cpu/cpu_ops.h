/* cpu_ops.h: the interface of the CPU kernels, one entry per op family
 * (src/backend/cpu/ops/<family>.c), each switching on k->node->op. The plan
 * has already inferred every shape and allocated every output; a kernel only
 * computes. Kernels are also used to fold constants when a plan is made. */
#ifndef BD_CPU_OPS_H
#define BD_CPU_OPS_H

#include "../../ops/ops.h"

typedef struct bd_kernel {
    const bd_node *node;
    const bd_tensor *in;  /* n_in inputs; an omitted optional one has dtype UNDEFINED, data NULL */
    int n_in;
    bd_tensor *out;       /* n_out outputs, shapes set and data allocated */
    int n_out;
    int threads;          /* intra-op threads this kernel may use (>= 1) */
    bd_err *err;
    /* For kernels that run nested plans (the control family): the plan that
     * runs the node, the node's index among its live nodes, and the CPU
     * backend's session state. NULL while a node is folded at plan time. */
    struct bd_prepared *plan;
    int live_index;
    void *backend;
    /* Owner of the strings a kernel makes for STRING outputs (util/strpool.h). */
    struct bd_strpool *strings;
} bd_kernel;

#define X(f) braid_status bd_cpu_##f(const bd_kernel *k);
BD_FAMILIES(X)
#undef X

/* Runs a plan of the CPU backend (state: its session state) without the
 * reset of the run's string and sequence pool that a top-level run starts
 * with: control-flow nodes run their nested plans with it. */
braid_status bd_cpu_run_nested(void *state, struct bd_prepared *p, const bd_tensor *inputs, bd_err *e);

/* Dispatch through the family of k->node->op. */
braid_status bd_cpu_run(const bd_kernel *k);

/* Shared helpers for kernels. */
/* Strides (in elements) of in's dims read as broadcast into out's rank:
 * 0 where in's dim is 1 and out's is not. */
void bd_broadcast_strides(const bd_tensor *in, const bd_tensor *out, int64_t *strides);
/* Converts element i of any numeric tensor (float16 included) to double / from double. */
double bd_get_f64(const bd_tensor *t, int64_t i);
void bd_set_f64(bd_tensor *t, int64_t i, double v);
/* The CPU's vector level for braid's kernels: 2 with AVX-512F, 1 with AVX2
 * and FMA, 0 otherwise; probed once (threads may ask at once). */
int bd_cpu_vec_level(void);
/* Caps that level (tests: each kernel's AVX2 and plain paths on a machine
 * with AVX-512): 2, the default, leaves it as probed. Set it while no
 * kernel runs. For Conv (ops/conv.c), 0 means im2col + SGEMM. */
void bd_cpu_vec_cap(int level);
/* dst[j] = src[2 j], j in [0, n): every second float (a stride phase of a
 * convolution's input row, a Slice with step 2); reads nothing past
 * src[2 (n - 1)]. */
void bd_gather2_f32(float *dst, const float *src, int64_t n);

#endif /* BD_CPU_OPS_H */
