/* scratch.c: bd_scratch_alloc / bd_scratch_free (scratch.h): a few freed
 * blocks kept per thread, each with a 64-byte header holding its capacity.
 * In fault-injection builds every call goes to bd_malloc / bd_free, so that
 * the allocation-failure tests still reach every failure path and count
 * every block. */
#include "backend/cpu/scratch.h"

#include <pthread.h>
#include <stdint.h>

#include "util/common.h"

#ifdef BRAID_FAULT_INJECTION
void *bd_scratch_alloc(size_t n) { return bd_malloc(n); }
void bd_scratch_free(void *p) { bd_free(p); }
#else
#define HEAD 64

typedef struct cache {
    void *blk[BD_SCRATCH_SLOTS]; /* header addresses; NULL: empty slot */
    size_t cap[BD_SCRATCH_SLOTS];
    size_t held;
    int armed; /* cache_end is registered for this thread */
} cache;

static __thread cache tl_cache;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* Frees the block kept in slot i. */
static void release(cache *c, int i)
{
    bd_free(((void **)c->blk[i])[0]);
    c->held -= c->cap[i];
    c->blk[i] = NULL;
}

/* At a thread's end: frees what it kept. */
static void cache_end(void *arg)
{
    cache *c = arg;
    for (int i = 0; i < BD_SCRATCH_SLOTS; i++)
        if (c->blk[i]) release(c, i);
}

static void key_make(void) { pthread_key_create(&key, cache_end); }

void *bd_scratch_alloc(size_t n)
{
    cache *c = &tl_cache;
    int best = -1;
    for (int i = 0; i < BD_SCRATCH_SLOTS; i++)
        if (c->blk[i] && c->cap[i] >= n && (best < 0 || c->cap[i] < c->cap[best])) best = i;
    char *h;
    if (best >= 0) {
        h = c->blk[best];
        c->held -= c->cap[best];
        c->blk[best] = NULL;
    } else {
        if (n > SIZE_MAX - 2 * HEAD) return NULL;
        size_t cap = (n + HEAD - 1) / HEAD * HEAD;
        void *raw = bd_malloc(cap + 2 * HEAD);
        if (!raw) return NULL;
        h = (char *)(((uintptr_t)raw + HEAD - 1) / HEAD * HEAD); /* aligned, at most HEAD - 1 past raw */
        ((void **)h)[0] = raw;
        ((size_t *)h)[1] = cap;
    }
    return h + HEAD;
}

void bd_scratch_free(void *p)
{
    if (!p) return;
    char *h = (char *)p - HEAD;
    size_t cap = ((size_t *)h)[1];
    cache *c = &tl_cache;
    /* an empty slot, else the smallest block kept when this one is larger */
    int slot = -1, small = 0;
    for (int i = 0; i < BD_SCRATCH_SLOTS; i++) {
        if (!c->blk[i]) {
            slot = i;
            break;
        }
        if (c->cap[i] < c->cap[small]) small = i;
    }
    if (slot < 0 && c->cap[small] < cap) slot = small;
    if (slot < 0 || cap > BD_SCRATCH_KEEP) {
        bd_free(((void **)h)[0]);
        return;
    }
    if (c->blk[slot]) release(c, slot);
    while (c->held + cap > BD_SCRATCH_KEEP) { /* over the budget: the smallest others go */
        int s = -1;
        for (int i = 0; i < BD_SCRATCH_SLOTS; i++)
            if (c->blk[i] && (s < 0 || c->cap[i] < c->cap[s])) s = i;
        release(c, s);
    }
    if (!c->armed) { /* the first block this thread keeps: cache_end frees them when it ends */
        pthread_once(&key_once, key_make);
        c->armed = pthread_setspecific(key, c) == 0;
    }
    c->blk[slot] = h;
    c->cap[slot] = cap;
    c->held += cap;
}
#endif
