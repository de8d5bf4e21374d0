/* scratch.h: scratch buffers of the CPU kernels (packed weights, padded
 * strips, Winograd tiles, a recurrence's state), kept per thread between
 * calls. A kernel that mallocs and frees a buffer of hundreds of KB on every
 * call gets fresh pages each time whenever malloc hands the memory back to
 * the OS in between (glibc trims the heap's top; Python's outputs move it):
 * inception through the Python package took 258 page faults a run. */
#ifndef BD_CPU_SCRATCH_H
#define BD_CPU_SCRATCH_H

#include <stddef.h>

/* n bytes, 64-byte aligned, or NULL when out of memory. A block freed by
 * bd_scratch_free on this thread earlier, of at least n bytes, is handed out
 * again (its contents are whatever the last user left). */
void *bd_scratch_alloc(size_t n);

/* Gives p (from bd_scratch_alloc, on any thread; NULL is ignored) back: kept
 * for this thread's next calls (the largest few, BD_SCRATCH_KEEP bytes at
 * most) or freed. Blocks a thread keeps are freed when it ends. */
void bd_scratch_free(void *p);

#define BD_SCRATCH_SLOTS 6                   /* blocks a thread keeps */
#define BD_SCRATCH_KEEP ((size_t)64 << 20)   /* bytes a thread keeps at most */

#endif /* BD_CPU_SCRATCH_H */
