/* convnhwc_kern.h: the microkernels of convnhwc.c at one vector width, a
 * template that convnhwc.c includes once per level (AVX-512: 16 lanes,
 * AVX2 + FMA: 8 lanes) after defining NK_SUF, NK_TARGET, NK_VL, the vector
 * and mask types and operations below. Two kernels, both over a tile of RB
 * output pixels of one row (RB a compile-time constant) and NV vectors of
 * output channels (NV * NK_VL, the last vector masked to t->nm):
 *   gemm: acc[r][v] += x[pixel r, tap, c] (broadcast) * W[tap][c][v lanes],
 *         over the taps in the tile's list, then the channels c in order
 *         (channels c0 .. c0 + cg of each); one K chunk of a longer sum
 *         when t->part says so: it starts from the sums stored at y and
 *         stores them back raw for the next chunk;
 *   dw:   acc[r][v] += x[pixel r, tap, v lanes] * W[tap][v lanes] (depthwise),
 *         over the taps in order.
 *   dwi:  dw with each pixel's input taps through pointers (border tiles).
 * Each output is one chain of FMAs from 0 in that order, whatever RB and
 * however the tiles are cut, then the epilogue: the same bits for any split. */

/* A gemm tile, RB pixels x NV vectors, RB and NV constants after inlining;
 * FULL: every vector's lanes whole (t->nm == NV * NK_VL), W's rows read
 * without a mask (with one, the compiler kept the mask spilled and reloaded
 * it at every step: 1x1 256->256, one thread, 175 -> 166 us). */
static inline __attribute__((always_inline)) NK_TARGET void NK_SUF(gemm_body)(const nk_tile *t, const int NV,
                                                                             const int RB, const int FULL)
{
    nk_vec acc[8][4];
    const float *xr[8];
#pragma GCC unroll 8
    for (int r = 0; r < RB; r++) {
        xr[r] = t->x + r * t->xps;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[r][v] = NK_ZERO();
    }
    nk_mask last = NK_MASK(t->nm - (NV - 1) * NK_VL);
    if (t->part & NK_PART_LOAD) /* a later K chunk: the sums so far, stored by the chunk before */
#pragma GCC unroll 8
        for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[r][v] = v == NV - 1 ? NK_LOADM(t->y + r * t->ldy + v * NK_VL, last) : NK_LOAD(t->y + r * t->ldy + v * NK_VL);
    for (int tp = 0; tp < t->ntap; tp++) {
        const float *w = t->tw[tp] + t->c0 * t->ldw;
        int64_t o = t->toff[tp] + t->c0 * t->sc;
        for (int64_t c = 0; c < t->cg; c++, o += t->sc, w += t->ldw) {
            nk_vec wv[4];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                wv[v] = v == NV - 1 && !FULL ? NK_LOADM(w + v * NK_VL, last) : NK_LOAD(w + v * NK_VL);
#pragma GCC unroll 8
            for (int r = 0; r < RB; r++) {
                nk_vec xb = NK_BCAST(xr[r] + o);
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) acc[r][v] = NK_FMA(xb, wv[v], acc[r][v]);
            }
        }
    }
    if (t->part & NK_PART_MORE) { /* chunks follow: the raw sums */
#pragma GCC unroll 8
        for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) NK_STOREM(t->y + r * t->ldy + v * NK_VL, v == NV - 1 ? last : NK_MASK(NK_VL), acc[r][v]);
        return;
    }
#pragma GCC unroll 8
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) NK_EPI(t, acc[r][v], r, v, v == NV - 1 ? last : NK_MASK(NK_VL),
                                                   v == NV - 1 ? t->nm - v * NK_VL : NK_VL);
}

/* A depthwise tile: channels in lanes, x read as vectors. */
static inline __attribute__((always_inline)) NK_TARGET void NK_SUF(dw_body)(const nk_tile *t, const int NV,
                                                                           const int RB)
{
    nk_vec acc[8][4];
    const float *xr[8];
#pragma GCC unroll 8
    for (int r = 0; r < RB; r++) {
        xr[r] = t->x + r * t->xps;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[r][v] = NK_ZERO();
    }
    nk_mask last = NK_MASK(t->nm - (NV - 1) * NK_VL);
    for (int tp = 0; tp < t->ntap; tp++) {
        const float *w = t->tw[tp];
        int64_t o = t->toff[tp];
        nk_vec wv[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) wv[v] = v == NV - 1 ? NK_LOADM(w + v * NK_VL, last) : NK_LOAD(w + v * NK_VL);
#pragma GCC unroll 8
        for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                nk_vec xv = v == NV - 1 ? NK_LOADM(xr[r] + o + v * NK_VL, last) : NK_LOAD(xr[r] + o + v * NK_VL);
                acc[r][v] = NK_FMA(xv, wv[v], acc[r][v]);
            }
    }
#pragma GCC unroll 8
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) NK_EPI(t, acc[r][v], r, v, v == NV - 1 ? last : NK_MASK(NK_VL),
                                                   v == NV - 1 ? t->nm - v * NK_VL : NK_VL);
}

/* A depthwise tile through pointers: t->ind[r * t->ntap + tap] is pixel r's
 * input at the tap (the block's first channel), or a zero vector outside the
 * image: border pixels in whole tiles. */
static inline __attribute__((always_inline)) NK_TARGET void NK_SUF(dwi_body)(const nk_tile *t, const int NV,
                                                                            const int RB)
{
    nk_vec acc[8][4];
#pragma GCC unroll 8
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[r][v] = NK_ZERO();
    nk_mask last = NK_MASK(t->nm - (NV - 1) * NK_VL);
    for (int tp = 0; tp < t->ntap; tp++) {
        const float *w = t->tw[tp];
        nk_vec wv[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) wv[v] = v == NV - 1 ? NK_LOADM(w + v * NK_VL, last) : NK_LOAD(w + v * NK_VL);
#pragma GCC unroll 8
        for (int r = 0; r < RB; r++) {
            const float *xp = t->ind[r * t->ntap + tp];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                nk_vec xv = v == NV - 1 ? NK_LOADM(xp + v * NK_VL, last) : NK_LOAD(xp + v * NK_VL);
                acc[r][v] = NK_FMA(xv, wv[v], acc[r][v]);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) NK_EPI(t, acc[r][v], r, v, v == NV - 1 ? last : NK_MASK(NK_VL),
                                                   v == NV - 1 ? t->nm - v * NK_VL : NK_VL);
}

/* gemm with whole vectors (FULL) and with the last one masked */
static inline __attribute__((always_inline)) NK_TARGET void NK_SUF(gemmf_body)(const nk_tile *t, const int NV,
                                                                              const int RB)
{
    NK_SUF(gemm_body)(t, NV, RB, 1);
}
static inline __attribute__((always_inline)) NK_TARGET void NK_SUF(gemmm_body)(const nk_tile *t, const int NV,
                                                                              const int RB)
{
    NK_SUF(gemm_body)(t, NV, RB, 0);
}

/* One instance per (kind, NV, RB): the tables below pick them. */
#define NK_INST(KIND, NV, RB)                                                                                     \
    static NK_TARGET void NK_SUF(KIND##_##NV##_##RB)(const nk_tile *t) { NK_SUF(KIND##_body)(t, NV, RB); }
#define NK_ROWS8(KIND, NV)                                                                                        \
    NK_INST(KIND, NV, 1) NK_INST(KIND, NV, 2) NK_INST(KIND, NV, 3) NK_INST(KIND, NV, 4) NK_INST(KIND, NV, 5)      \
    NK_INST(KIND, NV, 6) NK_INST(KIND, NV, 7) NK_INST(KIND, NV, 8)
#define NK_ROWS6(KIND, NV)                                                                                        \
    NK_INST(KIND, NV, 1) NK_INST(KIND, NV, 2) NK_INST(KIND, NV, 3) NK_INST(KIND, NV, 4) NK_INST(KIND, NV, 5)      \
    NK_INST(KIND, NV, 6)
#define NK_TAB8(KIND, NV)                                                                                         \
    {NULL, NK_SUF(KIND##_##NV##_1), NK_SUF(KIND##_##NV##_2), NK_SUF(KIND##_##NV##_3), NK_SUF(KIND##_##NV##_4),   \
     NK_SUF(KIND##_##NV##_5), NK_SUF(KIND##_##NV##_6), NK_SUF(KIND##_##NV##_7), NK_SUF(KIND##_##NV##_8)}
#define NK_TAB6(KIND, NV)                                                                                         \
    {NULL, NK_SUF(KIND##_##NV##_1), NK_SUF(KIND##_##NV##_2), NK_SUF(KIND##_##NV##_3), NK_SUF(KIND##_##NV##_4),   \
     NK_SUF(KIND##_##NV##_5), NK_SUF(KIND##_##NV##_6), NULL, NULL}

NK_ROWS8(gemmm, 1)
NK_ROWS8(gemmf, 1)
NK_ROWS8(dw, 1)
NK_ROWS8(dwi, 1)
#if NK_NVMAX == 4
NK_ROWS8(gemmm, 2)
NK_ROWS8(gemmf, 2)
NK_ROWS8(dw, 2)
NK_ROWS8(dwi, 2)
NK_ROWS8(gemmm, 3)
NK_ROWS8(gemmf, 3)
NK_ROWS8(dw, 3)
NK_ROWS8(dwi, 3)
NK_ROWS6(gemmm, 4)
NK_ROWS6(gemmf, 4)
NK_ROWS6(dw, 4)
NK_ROWS6(dwi, 4)
#else
NK_ROWS6(gemmm, 2)
NK_ROWS6(gemmf, 2)
NK_ROWS6(dw, 2)
NK_ROWS6(dwi, 2)
#endif

/* [kind: 0 gemm, 1 dw, 2 dw through pointers, 3 gemm with whole vectors][NV - 1][RB]; RB up to nk_rows(NV). */
static void (*const NK_SUF(nk_tab)[4][NK_NVMAX][9])(const nk_tile *) = {
#if NK_NVMAX == 4
    {NK_TAB8(gemmm, 1), NK_TAB8(gemmm, 2), NK_TAB8(gemmm, 3), NK_TAB6(gemmm, 4)},
    {NK_TAB8(dw, 1), NK_TAB8(dw, 2), NK_TAB8(dw, 3), NK_TAB6(dw, 4)},
    {NK_TAB8(dwi, 1), NK_TAB8(dwi, 2), NK_TAB8(dwi, 3), NK_TAB6(dwi, 4)},
    {NK_TAB8(gemmf, 1), NK_TAB8(gemmf, 2), NK_TAB8(gemmf, 3), NK_TAB6(gemmf, 4)},
#else
    {NK_TAB8(gemmm, 1), NK_TAB6(gemmm, 2)},
    {NK_TAB8(dw, 1), NK_TAB6(dw, 2)},
    {NK_TAB8(dwi, 1), NK_TAB6(dwi, 2)},
    {NK_TAB8(gemmf, 1), NK_TAB6(gemmf, 2)},
#endif
};

#undef NK_INST
#undef NK_ROWS8
#undef NK_ROWS6
#undef NK_TAB8
#undef NK_TAB6
