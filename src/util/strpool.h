/* strpool.h: the owner of the strings that string tensors point at while a
 * plan runs. A STRING tensor's element is a `const char *` (braid.h); data
 * movement copies the pointers, and the strings themselves are immutable and
 * owned elsewhere: by a constant's block (bd_string_block), by the caller for
 * run inputs, or by a pool like this one for what kernels make. A pool is
 * thread-safe (streams run at once) and frees everything at reset. */
#ifndef BD_STRPOOL_H
#define BD_STRPOOL_H

#include <pthread.h>

#include "common.h"

typedef struct bd_strpool {
    pthread_mutex_t mu;
    struct bd_strchunk *head;
} bd_strpool;

void bd_strpool_init(bd_strpool *p);
/* Frees every string of the pool; the pool stays usable. */
void bd_strpool_reset(bd_strpool *p);
void bd_strpool_destroy(bd_strpool *p);
/* A NUL-terminated copy of s[0..len) owned by p; NULL when out of memory. */
char *bd_strpool_dup(bd_strpool *p, const char *s, size_t len);

/* n bytes (64-byte aligned, uninitialized) owned by p; NULL when out of memory.
 * Kernels make sequence and optional values here (common.h). */
void *bd_strpool_alloc(bd_strpool *p, size_t n);

/* One bd_malloc'ed block holding n string pointers followed by the bytes
 * they point at (so one bd_free frees the tensor): strs[i] of lens[i] bytes. */
void *bd_string_block(const char *const *strs, const size_t *lens, size_t n);

#endif /* BD_STRPOOL_H */
