/* emu_check.c: the happens-before checker, the GPU counterpart of the plan
 * verifier (src/sched/verify.c), run on the commands actually issued. Every
 * stream has a lane of a vector clock; an operation's clock is its stream's
 * joined with the host's (what the host's synchronizations have shown
 * complete) and with the records its stream waited on. Clocks are computed as
 * work is enqueued, so the verdict does not depend on how the workers happen
 * to be scheduled. Each allocation keeps, per byte range, its last write and
 * the latest read per lane since; an access not ordered after a conflicting
 * one is reported with both operations named (FastTrack's rule: checking
 * against the last write suffices, as an earlier unordered write would have
 * been reported against it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/emu/emu.h"

#define OPREC_RING (1 << 15) /* descriptions kept for messages; older ones are "an earlier operation" */

static emu_oprec *ring;

void emu_vc_join(emu_vc *a, const emu_vc *b)
{
    for (int i = 0; i < EMU_LANES; i++)
        if (b->c[i] > a->c[i]) a->c[i] = b->c[i];
}

/* The host's clock: what its synchronizations have shown complete. One for
 * all host threads: a completed operation is complete for every thread, and
 * the threads order themselves by means the emulator cannot see (a session
 * created on one thread and destroyed on another, as Triton does). */
static emu_vc host_vc;

emu_vc *emu_host_vc(void) { return &host_vc; }

void emu_oprec_put(uint64_t id, int lane, uint32_t seq, const char *what)
{
    if (!ring && !(ring = calloc(OPREC_RING, sizeof *ring))) return;
    emu_oprec *r = &ring[id % OPREC_RING];
    r->id = id;
    r->lane = lane;
    r->seq = seq;
    snprintf(r->what, sizeof r->what, "%s", what);
}

static const char *op_text(uint64_t id)
{
    if (ring && ring[id % OPREC_RING].id == id) return ring[id % OPREC_RING].what;
    return "an earlier operation (no longer recorded)";
}

/* ---- per-allocation state --------------------------------------------------------------- */

void emu_seg_reset(emu_alloc *a)
{
    emu_seg_free(a);
    a->seg = calloc(4, sizeof *a->seg);
    if (!a->seg) return;
    a->cap_seg = 4;
    a->n_seg = 1;
    a->seg[0].lo = 0;
    a->seg[0].hi = a->size ? a->size : 1;
}

void emu_seg_free(emu_alloc *a)
{
    for (int i = 0; a->seg && i < a->n_seg; i++) free(a->seg[i].r);
    free(a->seg);
    a->seg = NULL;
    a->n_seg = a->cap_seg = 0;
}

/* Splits the segment holding byte at so that a segment starts there; the
 * index of that segment. */
static int split_at(emu_alloc *a, size_t at)
{
    int lo = 0, hi = a->n_seg - 1;
    while (lo < hi) { /* the segment with lo <= at < hi */
        int mid = (lo + hi + 1) / 2;
        if (a->seg[mid].lo <= at) lo = mid;
        else hi = mid - 1;
    }
    emu_seg *s = &a->seg[lo];
    if (s->lo == at || at >= s->hi) return s->lo == at ? lo : lo + 1;
    if (a->n_seg == a->cap_seg) {
        emu_seg *t = realloc(a->seg, 2 * (size_t)a->cap_seg * sizeof *t);
        if (!t) return -1;
        a->seg = t;
        a->cap_seg *= 2;
        s = &a->seg[lo];
    }
    memmove(&a->seg[lo + 2], &a->seg[lo + 1], (size_t)(a->n_seg - lo - 1) * sizeof *a->seg);
    a->n_seg++;
    emu_seg *t = &a->seg[lo + 1];
    *t = *s;
    t->lo = at;
    s->hi = at;
    t->r = NULL;
    t->n_r = t->cap_r = 0;
    if (s->n_r) {
        t->r = malloc((size_t)s->n_r * sizeof *t->r);
        if (t->r) {
            memcpy(t->r, s->r, (size_t)s->n_r * sizeof *t->r);
            t->n_r = t->cap_r = s->n_r;
        }
    }
    return lo + 1;
}

static int same_state(const emu_seg *a, const emu_seg *b)
{
    if (a->w_op != b->w_op || a->n_r != b->n_r || a->poisoned != b->poisoned) return 0;
    for (int i = 0; i < a->n_r; i++)
        if (a->r[i].lane != b->r[i].lane || a->r[i].seq != b->r[i].seq || a->r[i].op != b->r[i].op) return 0;
    return 1;
}

/* Merges neighbours in [from, to] that hold the same state. */
static void merge(emu_alloc *a, int from, int to)
{
    if (from < 1) from = 1;
    for (int i = to < a->n_seg - 1 ? to : a->n_seg - 1; i >= from; i--)
        if (same_state(&a->seg[i - 1], &a->seg[i])) {
            a->seg[i - 1].hi = a->seg[i].hi;
            free(a->seg[i].r);
            memmove(&a->seg[i], &a->seg[i + 1], (size_t)(a->n_seg - i - 1) * sizeof *a->seg);
            a->n_seg--;
        }
}

static void race(const char *what, int write, const emu_alloc *a, size_t lo, size_t hi, uint64_t other, int other_write)
{
    static const char *const kind[] = {"", "device", "pinned host", "managed"};
    emu_report("%s %s bytes [%zu, %zu) of %s allocation #%llu (%zu bytes) %s by %s, and nothing orders the two "
               "(no event, stream order or host synchronization between them)", what, write ? "writes" : "reads", lo,
               hi, kind[a->kind], (unsigned long long)a->id, a->size, other_write ? "written" : "read",
               op_text(other));
}

int emu_check(uint64_t id, int lane, uint32_t seq, const emu_vc *vc, const emu_access *acc, int n, int *bad)
{
    int reported = 0;
    const char *what = op_text(id);
    *bad = -1;
    for (int k = 0; k < n; k++) {
        if (!acc[k].n) continue;
        emu_alloc *a = emu_alloc_find(acc[k].addr);
        if (!a || acc[k].addr + acc[k].n > a->base + (a->size ? a->size : 1)) {
            if (*bad < 0) *bad = k;
            continue;
        }
        size_t lo = acc[k].addr - a->base, hi = lo + acc[k].n;
        int first = split_at(a, lo), last = split_at(a, hi);
        if (first < 0 || last < 0) continue; /* out of memory: this access goes unchecked */
        for (int i = first; i < last; i++) {
            emu_seg *s = &a->seg[i];
            if (!reported && s->w_op && s->w_op != id && s->w_seq > vc->c[s->w_lane]) {
                race(what, acc[k].write, a, s->lo, s->hi, s->w_op, 1);
                reported = 1;
            }
            if (!acc[k].write && !s->w_op && !s->poisoned && a->kind == EMU_MEM_DEVICE) {
                /* First read of bytes nothing wrote: poison them now. No op
                 * enqueued earlier writes them, and a later one that did
                 * would be ordered after this read or reported. */
                memset(emu.dreg.work + a->off + s->lo, EMU_POISON, s->hi - s->lo);
                s->poisoned = 1;
            }
            if (acc[k].write) {
                for (int r = 0; !reported && r < s->n_r; r++)
                    if (s->r[r].op != id && s->r[r].seq > vc->c[s->r[r].lane]) {
                        race(what, 1, a, s->lo, s->hi, s->r[r].op, 0);
                        reported = 1;
                    }
                s->w_op = id;
                s->w_lane = lane;
                s->w_seq = seq;
                s->n_r = 0;
            } else {
                int r = 0;
                while (r < s->n_r && s->r[r].lane != lane) r++;
                if (r == s->n_r) {
                    if (s->n_r == s->cap_r) {
                        int cap = s->cap_r ? 2 * s->cap_r : 2;
                        struct emu_read *t = realloc(s->r, (size_t)cap * sizeof *t);
                        if (!t) continue;
                        s->r = t;
                        s->cap_r = cap;
                    }
                    s->n_r++;
                }
                s->r[r].lane = lane;
                s->r[r].seq = seq;
                s->r[r].op = id;
            }
        }
        merge(a, first, last);
    }
    return reported;
}

int emu_ordered_before(const emu_alloc *a, const emu_vc *vc, int with_reads, char *who, size_t n)
{
    for (int i = 0; i < a->n_seg; i++) {
        const emu_seg *s = &a->seg[i];
        if (s->w_op && s->w_seq > vc->c[s->w_lane]) {
            snprintf(who, n, "%s", op_text(s->w_op));
            return 0;
        }
        for (int r = 0; with_reads && r < s->n_r; r++)
            if (s->r[r].seq > vc->c[s->r[r].lane]) {
                snprintf(who, n, "%s", op_text(s->r[r].op));
                return 0;
            }
    }
    return 1;
}
