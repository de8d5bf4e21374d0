/* string_family.h: the parsed attributes of the string op family
 * (StringConcat, StringSplit, StringNormalizer, RegexFullMatch). Not named
 * string.h, which would shadow the C library's header. */
#ifndef BD_STRING_FAMILY_H
#define BD_STRING_FAMILY_H

#include "ops.h"

enum { BD_CASE_NONE = 0, BD_CASE_LOWER = 1, BD_CASE_UPPER = 2 };

typedef struct bd_string_params {
    /* StringSplit */
    const char *delimiter; /* NULL or "": split at runs of whitespace */
    int64_t maxsplit;      /* -1: no limit */
    /* StringNormalizer */
    int case_change;       /* BD_CASE_* */
    int case_sensitive;
    int n_stopwords;
    char **stopwords;      /* in the params block; case-folded when !case_sensitive */
    /* RegexFullMatch: the pattern translated to POSIX ERE, anchored (in the block) */
    char *ere;
} bd_string_params;

/* StringSplit's largest count of parts per string when the input is not
 * known at plan time and maxsplit is absent. */
#define BD_SPLIT_MAX_PARTS 64

/* Translates an RE2 pattern into an anchored POSIX extended regex (glibc's
 * \w \W \b \B kept): \d \D \s \S, (?:...), \A, \z, classes with escapes.
 * Fails with UNSUPPORTED naming what has no POSIX form (lazy quantifiers,
 * lookaround, named groups, flags, \p classes, backreferences). *out is
 * bd_malloc'ed. */
braid_status bd_regex_translate(const char *re2, char **out, bd_err *e);

/* Case-changes a UTF-8 string (action BD_CASE_*) into a bd_malloc'ed copy,
 * code point by code point with the C.UTF-8 locale's towlower/towupper
 * (ASCII only when that locale is missing); invalid bytes are kept. */
char *bd_utf8_case(const char *s, int action);

/* Parts of s split as StringSplit does (delim NULL/"": whitespace runs, none
 * empty; else at each delim, empty parts kept), at most maxsplit splits (-1:
 * no limit). When parts is not NULL, the (begin, length) of each of the
 * first max parts go there. Returns the number of parts. */
int64_t bd_string_split(const char *s, const char *delim, int64_t maxsplit, int64_t max, const char **begin,
                        size_t *len);

#endif /* BD_STRING_FAMILY_H */
