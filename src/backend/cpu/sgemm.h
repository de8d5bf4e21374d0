/* sgemm.h: braid's own packed single-precision GEMM microkernels (AVX-512
 * and AVX2/FMA, chosen at run time) and the choice, per process, between them
 * and OpenBLAS. Callers use bd_sgemm (parallel.h) or bd_la_sgemm1 (ops/la.h):
 * both come here for each tile. */
#ifndef BD_SGEMM_H
#define BD_SGEMM_H

#include <stdint.h>

/* Which kernel a tile of an sgemm runs. */
enum {
    BD_SGEMM_OPENBLAS = 0,
    BD_SGEMM_AVX2 = 1,   /* braid, 6 x 16 microkernel, AVX2 + FMA */
    BD_SGEMM_AVX512 = 2, /* braid, 12 x 32 microkernel, AVX-512F */
};

/* The braid kernel this CPU can run (BD_SGEMM_AVX512, BD_SGEMM_AVX2) or
 * BD_SGEMM_OPENBLAS when it has neither. */
int bd_sgemm_cpu_kernel(void);

/* 1 when OpenBLAS runs a core weaker than braid's kernel for this CPU
 * (openblas_get_corename()): one of its generic or pre-AVX2 cores (Prescott,
 * Core2, Nehalem, ...) although the CPU has AVX2, or an AVX2 core (Haswell,
 * Zen) although it has AVX-512: the Debian OpenBLAS 0.3.21 on a CPU newer
 * than it knows. */
int bd_sgemm_openblas_is_fallback(void);

/* The kernel large products use in this process: a braid kernel where OpenBLAS
 * runs a weaker core (bd_sgemm_openblas_is_fallback), else OpenBLAS. Decided once. */
int bd_sgemm_kernel(void);

/* Forces the kernel (tests and benchmarks; BD_SGEMM_OPENBLAS .. the CPU's best;
 * -1 restores the automatic choice). Returns the kernel in force. */
int bd_sgemm_force_kernel(int kernel);

/* "braid avx512", "openblas 0.3.21 Cooperlake", ... for `braid info`/`bench`:
 * the kernel bd_sgemm_kernel() picks. Static storage. */
const char *bd_sgemm_kernel_desc(void);

/* C = alpha op(A) op(B) + beta C (row-major, m, n > 0; k 0 gives beta C) on this thread with
 * a braid kernel (kernel BD_SGEMM_AVX2 or BD_SGEMM_AVX512, which the CPU must
 * support). The sum over K runs in blocks of 256 in order, whatever m and n:
 * an element's bits depend on K, alpha, beta and its own row and column of
 * the operands only, never on how the product is cut into tiles. Returns 0,
 * or -1 when the packing buffers could not be allocated (C untouched). */
int bd_sgemm_braid(int kernel, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* C = alpha A B^T + beta C (A not transposed, B transposed: B's rows are the
 * columns of the product) as dot products of rows, B read once and nothing
 * packed: the kernel for a few rows of A against a large weight matrix (a
 * Gemm with transB, a fully connected layer). m, n, k > 0. Same contract as
 * bd_sgemm_braid; an element's bits depend on its own row pair only. */
#define BD_SGEMM_DOT_MAX_M 64 /* bd_sgemm takes it up to this many rows */
/* A's rows a multiple of 1 KiB apart (K = 256, 512, 1024...) fall on a few
 * L1 sets, and B's rows, the same stride when K is their length, on the
 * same ones: 4 rows of B and 4 or more of A in one 12-way set at every step
 * of the dot kernel, so A is read from L2 again and again (ddddocr_common's
 * 20 x 1024 x 8210 on one Xeon core: 5.2-7.4 -> 3.7-4.0 ms with A padded).
 * bd_sgemm_dot_lda: the stride A of m rows of k should have for the kernel,
 * lda itself where it is fine, else rows one cache line longer than K's
 * vectors; a caller that lays A out itself uses it (conv.c's dot path).
 * bd_sgemm_dot_pad: a copy of A at that stride (bd_scratch_alloc'ed, free
 * with bd_scratch_free; *lda_out its stride), or NULL where A is fine as it
 * is or there is no memory (then A in place: the same bits). bd_sgemm pads
 * once for all its tiles; bd_sgemm_dot takes A as it is given. */
int64_t bd_sgemm_dot_lda(int64_t m, int64_t k, int64_t lda);
float *bd_sgemm_dot_pad(int64_t m, int64_t k, const float *a, int64_t lda, int64_t *lda_out);
int bd_sgemm_dot(int kernel, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* One tile on this thread with the process's kernel (bd_sgemm_kernel(), or
 * OpenBLAS when the braid kernel cannot allocate). m, n, k > 0. */
void bd_sgemm_tile(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

#endif
