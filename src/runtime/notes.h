/* notes.h: a session's list of notes: what a backend did other than what it
 * was asked, in a sentence each (a CUDA graph it could not capture, a cuDNN
 * algorithm refused, an I/O mode the device cannot do), so that no fallback is
 * silent. Fixed storage, no allocation: adding a note never fails a run. The
 * API lists them (braid_session_note); the command line prints them. */
#ifndef BD_NOTES_H
#define BD_NOTES_H

#include <pthread.h>

#define BD_NOTES_MAX 32  /* notes kept per session; the last slot says how many more were dropped */
#define BD_NOTE_LEN 400  /* bytes per note, terminator included (longer notes are cut) */

typedef struct bd_notes {
    pthread_mutex_t mu;
    int n;          /* notes kept, at most BD_NOTES_MAX */
    long dropped;   /* notes not kept for want of room */
    char text[BD_NOTES_MAX][BD_NOTE_LEN];
} bd_notes;

void bd_notes_init(bd_notes *ns);
void bd_notes_destroy(bd_notes *ns);
/* Adds a note unless one with the same text is kept already; ns may be NULL
 * (nothing happens). Returns 1 when the note was added. Thread-safe. */
int bd_notes_add(bd_notes *ns, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int bd_notes_count(bd_notes *ns);
/* Note i (0 = the oldest), or "" past the end; stable until bd_notes_destroy
 * (notes are never removed or rewritten once counted). */
const char *bd_notes_get(bd_notes *ns, int i);

#endif
