/* peak-flops.c: the machine's fp32 multiply-add peak, measured: each of T
 * threads runs independent chains of fused multiply-adds (16 accumulators, the
 * widest vectors the CPU has: AVX-512, else AVX2/FMA, else SSE multiply and
 * add) for about half a second; prints "peak GFLOPS ISA T" (the best of five
 * tries, all threads together). scripts/bench-cpu compiles and runs it to put
 * the convolutions' GFLOP/s against it.
 * Build: cc -O2 -pthread scripts/peak-flops.c -o peak-flops; run: peak-flops [T]. */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITERS 2000000L

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static volatile float sink;

/* Each returns the flops it did. */
#define CHAINS(VT, SET1, FMA, ADD, W, TGT, NAME)                                               \
    __attribute__((target(TGT))) static double NAME(void)                                     \
    {                                                                                          \
        VT acc[16], m = SET1(0.999999f), c = SET1(1e-7f);                                     \
        for (int i = 0; i < 16; i++) acc[i] = SET1((float)i);                                  \
        for (long it = 0; it < ITERS; it++) {                                                  \
            _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) acc[i] = FMA(acc[i], m, c); \
        }                                                                                      \
        VT s = acc[0];                                                                         \
        for (int i = 1; i < 16; i++) s = ADD(s, acc[i]);                                       \
        float out[W];                                                                          \
        __builtin_memcpy(out, &s, sizeof out);                                                 \
        sink = out[0];                                                                         \
        return 2.0 * W * 16 * ITERS;                                                           \
    }

CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, 16, "avx512f", chains512)
CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, 8, "avx2,fma", chains256)
#define SSE_FMA(a, b, c) _mm_add_ps(_mm_mul_ps(a, b), c) /* counted as 2 flops */
CHAINS(__m128, _mm_set1_ps, SSE_FMA, _mm_add_ps, 4, "sse2", chains128)

static int isa;

static void *run(void *arg)
{
    double *flops = arg;
    *flops = isa == 2 ? chains512() : isa == 1 ? chains256() : chains128();
    return NULL;
}

int main(int argc, char **argv)
{
    int t = argc > 1 ? atoi(argv[1]) : 1;
    if (t < 1 || t > 256) t = 1;
    __builtin_cpu_init();
    isa = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        pthread_t th[256];
        double flops[256];
        double t0 = now();
        for (int i = 0; i < t; i++) pthread_create(&th[i], NULL, run, &flops[i]);
        double total = 0;
        for (int i = 0; i < t; i++) {
            pthread_join(th[i], NULL);
            total += flops[i];
        }
        double g = total / (now() - t0) / 1e9;
        if (g > best) best = g;
    }
    printf("peak %.1f %s %d\n", best, isa == 2 ? "avx512" : isa == 1 ? "avx2" : "sse", t);
    return 0;
}
