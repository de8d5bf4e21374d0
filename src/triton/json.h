/* json.h: the small JSON tree the Triton backend reads and writes model
 * configurations with (Triton hands them over as JSON text). Numbers keep
 * their text, so int64 values (Triton writes dims as strings or numbers)
 * round-trip exactly. */
#ifndef BRAID_TRITON_JSON_H
#define BRAID_TRITON_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum bj_type { BJ_NULL, BJ_BOOL, BJ_NUM, BJ_STR, BJ_ARR, BJ_OBJ } bj_type;

typedef struct bj {
    bj_type t;
    int b;          /* BJ_BOOL */
    char *s;        /* BJ_STR: the string; BJ_NUM: the number's text */
    int n, cap;     /* BJ_ARR, BJ_OBJ: element count and capacity */
    struct bj **v;  /* elements */
    char **k;       /* BJ_OBJ: keys, one per element */
} bj;

/* Parses text[0..n); NULL on failure with the reason (and offset) in err. */
bj *bj_parse(const char *text, size_t n, char *err, size_t errn);
void bj_free(bj *v);
/* Writes v as compact JSON; a NUL-terminated bd_malloc'ed string, or NULL. */
char *bj_write(const bj *v, size_t *len);

/* Reading: each accepts NULL and returns NULL/0 for the wrong type. */
bj *bj_get(const bj *obj, const char *key);
int bj_len(const bj *v); /* elements of an array or object, else 0 */
bj *bj_at(const bj *v, int i);
const char *bj_str(const bj *v);
/* An integer from a number or a string holding one ("16"); 0 when v is
 * neither or does not hold an integer. */
int bj_int(const bj *v, int64_t *out);

/* Building: constructors return NULL when out of memory. bj_set and bj_push
 * take val (freed on failure) and return 0 when out of memory. */
bj *bj_new(bj_type t);
bj *bj_new_str(const char *s);
bj *bj_new_int(int64_t x);
int bj_set(bj *obj, const char *key, bj *val); /* replaces an existing key */
int bj_push(bj *arr, bj *val);

#endif /* BRAID_TRITON_JSON_H */
