/* emu_mem.c: the emulated device's memory. Two regions, each one memfd
 * mapped twice: device memory, whose view braid gets is PROT_NONE (any host
 * read or write faults at once) while the workers use the second, writable
 * view at the same offset; and pinned and managed memory, whose view braid
 * gets is opened and closed page-wise: closed while queued work may still
 * write it, read-only while queued work may still read it, open once the
 * host has synchronized past that work. Fresh memory reads as poison. A host
 * fault in either region is explained on stderr before the process dies. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/cuda/emu/emu.h"

#define HOST_REGION ((size_t)64 << 30) /* pinned and managed memory, virtual */
#define PAGE 4096
#define PUNCH_MIN ((size_t)1 << 30)    /* freed blocks at least this large give their pages back; smaller
                                        * ones keep them for the next allocation there (first fit reuses
                                        * the same offsets), which then costs a memset, not page faults */

/* Free space of one region: sorted, merged [off, off + len). */
typedef struct hole {
    size_t off, len;
} hole;
typedef struct space {
    hole *h;
    int n, cap;
} space;
static space dspace, hspace;

static int space_init(space *s, size_t size)
{
    s->h = malloc(64 * sizeof *s->h);
    if (!s->h) return -1;
    s->cap = 64;
    s->n = 1;
    s->h[0] = (hole){0, size};
    return 0;
}

/* First fit of len bytes aligned to align; SIZE_MAX when nothing fits. */
static size_t space_take(space *s, size_t len, size_t align)
{
    for (int i = 0; i < s->n; i++) {
        size_t start = (s->h[i].off + align - 1) / align * align, end = s->h[i].off + s->h[i].len;
        if (start + len > end || start + len < start) continue;
        hole rest = {start + len, end - start - len};
        if (start > s->h[i].off) { /* a head remains */
            s->h[i].len = start - s->h[i].off;
            if (rest.len) {
                if (s->n == s->cap) {
                    hole *t = realloc(s->h, 2 * (size_t)s->cap * sizeof *t);
                    if (!t) return SIZE_MAX;
                    s->h = t;
                    s->cap *= 2;
                }
                memmove(&s->h[i + 2], &s->h[i + 1], (size_t)(s->n - i - 1) * sizeof *s->h);
                s->h[i + 1] = rest;
                s->n++;
            }
        } else if (rest.len) {
            s->h[i] = rest;
        } else {
            memmove(&s->h[i], &s->h[i + 1], (size_t)(s->n - i - 1) * sizeof *s->h);
            s->n--;
        }
        return start;
    }
    return SIZE_MAX;
}

static void space_give(space *s, size_t off, size_t len)
{
    int i = 0;
    while (i < s->n && s->h[i].off < off) i++;
    if (s->n == s->cap) {
        hole *t = realloc(s->h, 2 * (size_t)s->cap * sizeof *t);
        if (!t) return; /* the block is lost, not reused: harmless */
        s->h = t;
        s->cap *= 2;
    }
    memmove(&s->h[i + 1], &s->h[i], (size_t)(s->n - i) * sizeof *s->h);
    s->h[i] = (hole){off, len};
    s->n++;
    if (i + 1 < s->n && s->h[i].off + s->h[i].len == s->h[i + 1].off) { /* merge with the next */
        s->h[i].len += s->h[i + 1].len;
        memmove(&s->h[i + 1], &s->h[i + 2], (size_t)(s->n - i - 2) * sizeof *s->h);
        s->n--;
    }
    if (i > 0 && s->h[i - 1].off + s->h[i - 1].len == s->h[i].off) { /* and the previous */
        s->h[i - 1].len += s->h[i].len;
        memmove(&s->h[i], &s->h[i + 1], (size_t)(s->n - i - 1) * sizeof *s->h);
        s->n--;
    }
}

static int region_init(emu_region *r, size_t size, int user_prot)
{
    r->size = size;
    r->fd = memfd_create("braid-cuda-emulator", MFD_CLOEXEC);
    if (r->fd < 0 || ftruncate(r->fd, (off_t)size) != 0) return -1;
    r->user = mmap(NULL, size, user_prot, MAP_SHARED | MAP_NORESERVE, r->fd, 0);
    r->work = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, r->fd, 0);
    return r->user == MAP_FAILED || r->work == MAP_FAILED ? -1 : 0;
}

/* ---- the fault handler ------------------------------------------------------------------ */

static struct sigaction old_segv;

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr;
    char msg[1024];
    int ours = 0;
    if (emu_in_device_region(a)) {
        char where[200];
        emu_describe(a, where, sizeof where);
        snprintf(msg, sizeof msg, "braid CUDA emulator: the host touched emulated device memory at %p (%s): a device "
                 "pointer was used as a host pointer\n", (void *)a, where);
        ours = 1;
    } else if (a >= (uintptr_t)emu.hreg.user && a < (uintptr_t)emu.hreg.user + emu.hreg.size) {
        char where[200];
        emu_describe(a, where, sizeof where);
        snprintf(msg, sizeof msg, "braid CUDA emulator: the host touched pinned or managed memory at %p (%s) while "
                 "queued device work may still use it: no synchronization (cudaStreamSynchronize, "
                 "cudaEventSynchronize, a synchronous copy) orders the host after that work\n", (void *)a, where);
        ours = 1;
    }
    if (ours) {
        say(msg);
        signal(SIGSEGV, SIG_DFL); /* the faulting access runs again and ends the process */
        return;
    }
    if (old_segv.sa_flags & SA_SIGINFO) {
        if (old_segv.sa_sigaction) old_segv.sa_sigaction(sig, si, uc);
        return;
    }
    if (old_segv.sa_handler == SIG_IGN) return;
    if (old_segv.sa_handler != SIG_DFL) { old_segv.sa_handler(sig); return; }
    signal(SIGSEGV, SIG_DFL);
}

cudaError_t emu_mem_init(void)
{
    if (region_init(&emu.dreg, emu.dev.mem, PROT_NONE) || region_init(&emu.hreg, HOST_REGION, PROT_READ | PROT_WRITE) ||
        space_init(&dspace, emu.dreg.size) || space_init(&hspace, emu.hreg.size)) {
        fprintf(stderr, "braid CUDA emulator: cannot map its memory regions: %s\n", strerror(errno));
        return cudaErrorInitializationError;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
    return cudaSuccess;
}

/* ---- allocations ---------------------------------------------------------------------- */

int emu_in_device_region(uintptr_t a)
{
    return emu.dreg.user && a >= (uintptr_t)emu.dreg.user && a < (uintptr_t)emu.dreg.user + emu.dreg.size;
}

emu_alloc *emu_alloc_find(uintptr_t a)
{
    int lo = 0, hi = emu.n_allocs - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        emu_alloc *x = emu.allocs[mid];
        if (a < x->base) hi = mid - 1;
        else if (a >= x->base + (x->size ? x->size : 1)) lo = mid + 1;
        else return x;
    }
    return NULL;
}

void *emu_work_ptr(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (emu_in_device_region(a)) return emu.dreg.work + (a - (uintptr_t)emu.dreg.user);
    if (emu.hreg.user && a >= (uintptr_t)emu.hreg.user && a < (uintptr_t)emu.hreg.user + emu.hreg.size)
        return emu.hreg.work + (a - (uintptr_t)emu.hreg.user);
    return (void *)p;
}

static const char *kind_name(int k)
{
    return k == EMU_MEM_DEVICE ? "device" : k == EMU_MEM_PINNED ? "pinned host" : "managed";
}

void emu_describe(uintptr_t a, char *buf, size_t n)
{
    emu_alloc *x = emu_alloc_find(a);
    if (x) snprintf(buf, n, "%s allocation #%llu of %zu bytes, at byte %zu", kind_name(x->kind),
                    (unsigned long long)x->id, x->size, (size_t)(a - x->base));
    else if (emu_in_device_region(a)) snprintf(buf, n, "device memory that is not allocated");
    else snprintf(buf, n, "not emulated device, pinned or managed memory");
}

cudaError_t emu_alloc_new(int kind, size_t n, void **out)
{
    int dev = kind == EMU_MEM_DEVICE;
    size_t align = dev ? EMU_ALIGN : PAGE;
    size_t span = (n ? n : 1) + align - 1;
    span -= span % align;
    if (dev && emu.dev_used + span > emu.dev.mem) return cudaErrorMemoryAllocation;
    if (emu.n_allocs == emu.cap_allocs) {
        int cap = emu.cap_allocs ? 2 * emu.cap_allocs : 256;
        emu_alloc **t = realloc(emu.allocs, (size_t)cap * sizeof *t);
        if (!t) return cudaErrorMemoryAllocation;
        emu.allocs = t;
        emu.cap_allocs = cap;
    }
    emu_alloc *x = calloc(1, sizeof *x);
    if (!x) return cudaErrorMemoryAllocation;
    size_t off = space_take(dev ? &dspace : &hspace, span, align);
    if (off == SIZE_MAX) { free(x); return cudaErrorMemoryAllocation; }
    emu_region *r = dev ? &emu.dreg : &emu.hreg;
    x->base = (uintptr_t)r->user + off;
    x->size = n;
    x->span = span;
    x->kind = kind;
    x->off = off;
    x->id = ++emu.next_alloc_id;
    x->prot = PROT_READ | PROT_WRITE;
    if (!dev) { /* the host reads it directly: poisoned now (device memory when first read, emu_check.c) */
        memset(r->work + off, EMU_POISON, span);
        mprotect(r->user + off, span, PROT_READ | PROT_WRITE);
    }
    emu_seg_reset(x);
    if (!x->seg) {
        space_give(dev ? &dspace : &hspace, off, span);
        free(x);
        return cudaErrorMemoryAllocation;
    }
    int i = emu.n_allocs;
    while (i > 0 && emu.allocs[i - 1]->base > x->base) {
        emu.allocs[i] = emu.allocs[i - 1];
        i--;
    }
    emu.allocs[i] = x;
    emu.n_allocs++;
    if (dev) emu.dev_used += span;
    *out = (void *)x->base;
    return cudaSuccess;
}

cudaError_t emu_alloc_free(void *p, int kind_mask)
{
    uintptr_t a = (uintptr_t)p;
    emu_alloc *x = emu_alloc_find(a);
    if (!x || x->base != a || !((1 << x->kind) & kind_mask)) return cudaErrorInvalidValue;
    int dev = x->kind == EMU_MEM_DEVICE;
    char who[200];
    if (!emu_ordered_before(x, emu_host_vc(), 1, who, sizeof who)) {
        char where[200];
        emu_describe(a, where, sizeof where);
        emu_report("%s freed %s while %s may still use it: synchronize first", dev ? "cudaFree" : "cudaFreeHost",
                   where, who);
        emu_device_sync(); /* nothing may run on freed memory */
    }
    emu_region *r = dev ? &emu.dreg : &emu.hreg;
    if (!dev) mprotect(r->user + x->off, x->span, PROT_READ | PROT_WRITE);
    if (x->span >= PUNCH_MIN) fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)x->off, (off_t)x->span);
    space_give(dev ? &dspace : &hspace, x->off, x->span);
    if (dev) emu.dev_used -= x->span;
    int i = 0;
    while (emu.allocs[i] != x) i++;
    memmove(&emu.allocs[i], &emu.allocs[i + 1], (size_t)(emu.n_allocs - i - 1) * sizeof *emu.allocs);
    emu.n_allocs--;
    emu_seg_free(x);
    free(x);
    return cudaSuccess;
}

/* ---- the host view of pinned and managed memory ------------------------------------------- */

void emu_mem_protect(emu_alloc *a)
{
    if (a->kind == EMU_MEM_DEVICE) return;
    char who[200];
    int prot = PROT_READ | PROT_WRITE;
    if (!emu_ordered_before(a, emu_host_vc(), 0, who, sizeof who)) prot = PROT_NONE;
    else if (!emu_ordered_before(a, emu_host_vc(), 1, who, sizeof who)) prot = PROT_READ;
    if (prot != a->prot) {
        mprotect(emu.hreg.user + a->off, a->span, prot);
        a->prot = prot;
    }
}

void emu_mem_reprotect_all(void)
{
    for (int i = 0; i < emu.n_allocs; i++)
        if (emu.allocs[i]->kind != EMU_MEM_DEVICE && emu.allocs[i]->prot != (PROT_READ | PROT_WRITE))
            emu_mem_protect(emu.allocs[i]);
}
