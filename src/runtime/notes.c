/* notes.c: a session's notes (notes.h): fixed storage under a mutex, equal
 * texts kept once, and a last slot that counts what did not fit. */
#include "runtime/notes.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void bd_notes_init(bd_notes *ns)
{
    memset(ns, 0, sizeof *ns);
    pthread_mutex_init(&ns->mu, NULL);
}

void bd_notes_destroy(bd_notes *ns) { pthread_mutex_destroy(&ns->mu); }

int bd_notes_add(bd_notes *ns, const char *fmt, ...)
{
    if (!ns) return 0;
    char buf[BD_NOTE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    int added = 0;
    pthread_mutex_lock(&ns->mu);
    int have = 0;
    for (int i = 0; i < ns->n && !have; i++) have = !strcmp(ns->text[i], buf);
    if (!have) {
        if (ns->n < BD_NOTES_MAX - 1) {
            memcpy(ns->text[ns->n], buf, sizeof buf);
            __atomic_store_n(&ns->n, ns->n + 1, __ATOMIC_RELEASE);
            added = 1;
        } else {
            /* The last slot is written once; what follows is only counted. */
            ns->dropped++;
            if (ns->n == BD_NOTES_MAX - 1) {
                snprintf(ns->text[ns->n], BD_NOTE_LEN, "(more notes than the %d braid keeps: the rest are dropped)",
                         BD_NOTES_MAX - 1);
                __atomic_store_n(&ns->n, ns->n + 1, __ATOMIC_RELEASE);
            }
        }
    }
    pthread_mutex_unlock(&ns->mu);
    return added;
}

int bd_notes_count(bd_notes *ns) { return ns ? __atomic_load_n(&ns->n, __ATOMIC_ACQUIRE) : 0; }

const char *bd_notes_get(bd_notes *ns, int i)
{
    if (!ns || i < 0 || i >= bd_notes_count(ns)) return "";
    return ns->text[i];
}
