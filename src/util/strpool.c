/* strpool.c: the string pool and string blocks of strpool.h. */
#include "strpool.h"

#include <stdint.h>
#include <string.h>

typedef struct bd_strchunk {
    struct bd_strchunk *next;
    char s[];
} bd_strchunk;

void bd_strpool_init(bd_strpool *p)
{
    pthread_mutex_init(&p->mu, NULL);
    p->head = NULL;
}

void bd_strpool_reset(bd_strpool *p)
{
    pthread_mutex_lock(&p->mu);
    bd_strchunk *c = p->head;
    p->head = NULL;
    pthread_mutex_unlock(&p->mu);
    while (c) {
        bd_strchunk *nx = c->next;
        bd_free(c);
        c = nx;
    }
}

void bd_strpool_destroy(bd_strpool *p)
{
    bd_strpool_reset(p);
    pthread_mutex_destroy(&p->mu);
}

char *bd_strpool_dup(bd_strpool *p, const char *s, size_t len)
{
    bd_strchunk *c = bd_malloc(sizeof *c + len + 1);
    if (!c) return NULL;
    if (len) memcpy(c->s, s, len);
    c->s[len] = 0;
    pthread_mutex_lock(&p->mu);
    c->next = p->head;
    p->head = c;
    pthread_mutex_unlock(&p->mu);
    return c->s;
}

void *bd_strpool_alloc(bd_strpool *p, size_t n)
{
    bd_strchunk *c = bd_malloc(sizeof *c + n + 64);
    if (!c) return NULL;
    pthread_mutex_lock(&p->mu);
    c->next = p->head;
    p->head = c;
    pthread_mutex_unlock(&p->mu);
    uintptr_t a = ((uintptr_t)c->s + 63) & ~(uintptr_t)63;
    return (void *)a;
}

void *bd_string_block(const char *const *strs, const size_t *lens, size_t n)
{
    size_t bytes = n * sizeof(char *);
    for (size_t i = 0; i < n; i++) bytes += lens[i] + 1;
    char **b = bd_malloc(bytes ? bytes : 1);
    if (!b) return NULL;
    char *q = (char *)(b + n);
    for (size_t i = 0; i < n; i++) {
        b[i] = q;
        if (lens[i]) memcpy(q, strs[i], lens[i]);
        q[lens[i]] = 0;
        q += lens[i] + 1;
    }
    return b;
}
