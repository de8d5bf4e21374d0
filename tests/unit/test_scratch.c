/* test_scratch: the CPU kernels' per-thread scratch blocks (backend/cpu/
 * scratch.h): 64-byte aligned and writable to the last byte; a block given
 * back is handed out again on the same thread for a request it holds, the
 * smallest that holds it, and not for a larger one; a block larger than
 * BD_SCRATCH_KEEP is not kept; another thread's cache is its own, and what
 * it keeps is freed when it ends (ASan's leak check would say otherwise).
 * In fault-injection builds every call is a plain bd_malloc / bd_free: only
 * the first two checks apply there. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/scratch.h"
#include "check.h"

#ifndef BRAID_FAULT_INJECTION
static void *other_thread(void *arg)
{
    void **seen = arg;
    void *p = bd_scratch_alloc(300000); /* not the main thread's block */
    seen[0] = p;
    if (p) memset(p, 1, 300000);
    bd_scratch_free(p); /* kept by this thread, freed when it ends */
    return NULL;
}
#endif

int main(void)
{
    char *a = bd_scratch_alloc(300000), *b = bd_scratch_alloc(100000);
    CHECK(a && b);
    CHECK_EQ_INT((int)((uintptr_t)a % 64), 0);
    CHECK_EQ_INT((int)((uintptr_t)b % 64), 0);
    memset(a, 7, 300000);
    memset(b, 9, 100000);
    bd_scratch_free(a);
    bd_scratch_free(b);
    bd_scratch_free(NULL);
#ifndef BRAID_FAULT_INJECTION
    CHECK(bd_scratch_alloc(90000) == b); /* the smallest block that holds it */
    CHECK(bd_scratch_alloc(200000) == a);
    char *c = bd_scratch_alloc(400000); /* neither holds it */
    CHECK(c && c != a && c != b);
    void *seen[1] = {NULL};
    pthread_t t;
    bd_scratch_free(a);
    pthread_create(&t, NULL, other_thread, seen);
    pthread_join(t, NULL);
    CHECK(seen[0] && seen[0] != a);
    CHECK(bd_scratch_alloc(300000) == a); /* still this thread's */
    bd_scratch_free(a);
    bd_scratch_free(b);
    bd_scratch_free(c);
    size_t big = BD_SCRATCH_KEEP + 64;
    char *d = bd_scratch_alloc(big);
    CHECK(d != NULL);
    bd_scratch_free(d); /* not kept: a request of that size gets a new block (or the same address by chance) */
    char *e = bd_scratch_alloc(big - 64);
    CHECK(e != NULL && e != a && e != b && e != c);
    bd_scratch_free(e);
#endif
    return check_done();
}
