/* check.h: the unit tests' small harness. CHECK records a failure with its
 * file and line and goes on; check_done() prints "N passed, N failed" and
 * gives the exit code, so a failed check always fails the test program. */
#ifndef BD_CHECK_H
#define BD_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) check_passed++;                                                                  \
        else { check_failed++; fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); } \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        if (va_ == vb_) check_passed++;                                                            \
        else { check_failed++; fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b, va_, vb_); } \
    } while (0)

/* |a - b| <= atol + rtol * |b| */
#define CHECK_NEAR(a, b, atol, rtol)                                                               \
    do {                                                                                           \
        double va_ = (double)(a), vb_ = (double)(b);                                               \
        if (fabs(va_ - vb_) <= (atol) + (rtol)*fabs(vb_)) check_passed++;                          \
        else { check_failed++; fprintf(stderr, "%s:%d: %s ~= %s failed: %.9g vs %.9g\n", __FILE__, __LINE__, #a, #b, va_, vb_); } \
    } while (0)

/* The string s contains the substring sub. */
#define CHECK_CONTAINS(s, sub)                                                                     \
    do {                                                                                           \
        const char *vs_ = (s);                                                                     \
        if (vs_ && strstr(vs_, (sub))) check_passed++;                                             \
        else { check_failed++; fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, vs_ ? vs_ : "(null)", (sub)); } \
    } while (0)

static inline int check_done(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
