/* convwin.h: the window geometry shared by the float convolutions (conv.c)
 * and the integer ones (qgemm.c): a 1-D, 2-D or 3-D convolution seen as an
 * image walked by a grid of kernel positions, padded to three dims, and the
 * loop over (channel, tap, grid row) with the valid part of each row. */
#ifndef BD_CPU_CONVWIN_H
#define BD_CPU_CONVWIN_H

#include "ops/conv.h"

/* A window: an image (channels x img[0] x img[1] x img[2]) seen from a grid
 * of kernel positions; image index = grid index * s - pb + tap * d. */
typedef struct win3 {
    int64_t img[3], grid[3], k[3], s[3], d[3], pb[3];
    int64_t img_size, grid_size, taps;
} win3;

static inline void win_make(const bd_conv_geom *g, int transpose, win3 *w)
{
    int off = 3 - g->nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        int unit = j < 0;
        w->img[i] = unit ? 1 : transpose ? g->y[j] : g->x[j];
        w->grid[i] = unit ? 1 : transpose ? g->x[j] : g->y[j];
        w->k[i] = unit ? 1 : g->k[j];
        w->s[i] = unit ? 1 : g->s[j];
        w->d[i] = unit ? 1 : g->d[j];
        w->pb[i] = unit ? 0 : g->pb[j];
    }
    w->img_size = w->img[0] * w->img[1] * w->img[2];
    w->grid_size = w->grid[0] * w->grid[1] * w->grid[2];
    w->taps = w->k[0] * w->k[1] * w->k[2];
}

/* [lo, hi): the grid positions j in [0, n) whose image index j*s + off is in [0, len). */
static inline void valid_range(int64_t n, int64_t s, int64_t off, int64_t len, int64_t *lo, int64_t *hi)
{
    int64_t a = off < 0 ? (-off + s - 1) / s : 0;
    int64_t b = len - off > 0 ? (len - off + s - 1) / s : 0;
    a = BD_MIN(a, n);
    b = BD_MIN(b, n);
    *lo = a;
    *hi = BD_MAX(a, b);
}

/* Calls body once per (channel c, tap t = (kd, kh, kw), grid row (gd, gh)) whose
 * image row (id, ih) exists; off_w, wlo, whi give the valid part of the row. */
#define WIN_FOREACH(w, channels, ...)                                                             \
    for (int64_t c = 0; c < (channels); c++)                                                       \
        for (int64_t kd = 0, t = 0; kd < (w)->k[0]; kd++)                                          \
            for (int64_t kh = 0; kh < (w)->k[1]; kh++)                                             \
                for (int64_t kw = 0; kw < (w)->k[2]; kw++, t++) {                                  \
                    int64_t off_w = kw * (w)->d[2] - (w)->pb[2], wlo, whi;                         \
                    valid_range((w)->grid[2], (w)->s[2], off_w, (w)->img[2], &wlo, &whi);          \
                    for (int64_t gd = 0; gd < (w)->grid[0]; gd++) {                                \
                        int64_t id = gd * (w)->s[0] - (w)->pb[0] + kd * (w)->d[0];                 \
                        int row_d = id >= 0 && id < (w)->img[0];                                   \
                        for (int64_t gh = 0; gh < (w)->grid[1]; gh++) {                            \
                            int64_t ih = gh * (w)->s[1] - (w)->pb[1] + kh * (w)->d[1];             \
                            int64_t grow = (gd * (w)->grid[1] + gh) * (w)->grid[2];                \
                            int ok = row_d && ih >= 0 && ih < (w)->img[1];                         \
                            int64_t irow = ((c * (w)->img[0] + id) * (w)->img[1] + ih) * (w)->img[2]; \
                            __VA_ARGS__                                                            \
                        }                                                                          \
                    }                                                                              \
                }

#endif
