/* test_string.c: the string family's helpers on the edge cases the ONNX node
 * tests miss: StringSplit's whitespace and delimiter rules with maxsplit and
 * empty parts, Unicode case changes (StringNormalizer lowercases code points,
 * not bytes), the RE2-to-POSIX translation of RegexFullMatch and its errors. */
#include <regex.h>
#include <stdlib.h>

#include "check.h"
#include "ops/string_family.h"
#include "util/strpool.h"

static int64_t split(const char *s, const char *d, int64_t maxsplit, const char **b, size_t *l)
{
    return bd_string_split(s, d, maxsplit, 8, b, l);
}

static int part_is(const char *b, size_t l, const char *want) { return strlen(want) == l && !strncmp(b, want, l); }

static int full_match(const char *re2, const char *s)
{
    bd_err e = {0};
    char *ere = NULL;
    if (bd_regex_translate(re2, &ere, &e)) return -1;
    regex_t re;
    int rc = regcomp(&re, ere, REG_EXTENDED | REG_NOSUB);
    bd_free(ere);
    if (rc) return -2;
    int m = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

int main(void)
{
    const char *b[8];
    size_t l[8];
    /* whitespace splitting: no empty parts, leading/trailing runs ignored */
    CHECK_EQ_INT(split("  a \t b  ", NULL, -1, b, l), 2);
    CHECK(part_is(b[0], l[0], "a") && part_is(b[1], l[1], "b"));
    CHECK_EQ_INT(split("", NULL, -1, b, l), 0);
    CHECK_EQ_INT(split("   ", "", -1, b, l), 0);
    /* maxsplit with whitespace: the rest is one part, trailing space stripped (Python's rule) */
    CHECK_EQ_INT(split("a b c  ", NULL, 1, b, l), 2);
    CHECK(part_is(b[1], l[1], "b c"));
    /* a delimiter keeps empty parts, at both ends too */
    CHECK_EQ_INT(split("-a--", "-", -1, b, l), 4);
    CHECK(part_is(b[0], l[0], "") && part_is(b[1], l[1], "a") && part_is(b[3], l[3], ""));
    CHECK_EQ_INT(split("", "-", -1, b, l), 1); /* "".split("-") == [""] */
    CHECK_EQ_INT(split("a--b--c", "--", 1, b, l), 2);
    CHECK(part_is(b[1], l[1], "b--c"));
    CHECK_EQ_INT(split("abc", ",", 0, b, l), 1);

    /* Unicode case changes: code points, not bytes (Ä, Σ, Ж); invalid bytes kept */
    char *s = bd_utf8_case("ÄBCΣЖ", BD_CASE_LOWER);
    CHECK(s && !strcmp(s, "äbcσж"));
    bd_free(s);
    s = bd_utf8_case("straße ñ", BD_CASE_UPPER);
    CHECK(s && !strcmp(s, "STRAßE Ñ")); /* ß has no one-code-point upper case: kept */
    bd_free(s);
    s = bd_utf8_case("A\xff" "B", BD_CASE_LOWER);
    CHECK(s && !strcmp(s, "a\xff" "b"));
    bd_free(s);
    s = bd_utf8_case("", BD_CASE_UPPER);
    CHECK(s && !strcmp(s, ""));
    bd_free(s);

    /* RE2 patterns: full match, classes with escapes, \d \s, (?:...) */
    CHECK_EQ_INT(full_match("a+", "aaa"), 1);
    CHECK_EQ_INT(full_match("a+", "aab"), 0); /* full match, not search */
    CHECK_EQ_INT(full_match("\\d{3}-\\d{4}", "555-1234"), 1);
    CHECK_EQ_INT(full_match("[\\w.-]+@x\\.com", "a.b-c@x.com"), 1);
    CHECK_EQ_INT(full_match("[\\w.-]+@x\\.com", "a\\b@x.com"), 0); /* \ is not in the class */
    CHECK_EQ_INT(full_match("(?:ab)+", "abab"), 1);
    CHECK_EQ_INT(full_match("\\s*x\\S", " \tx!"), 1);
    CHECK_EQ_INT(full_match("[^\\d]+", "abc"), 1);
    CHECK_EQ_INT(full_match("[^\\d]+", "a1"), 0);
    CHECK_EQ_INT(full_match("", ""), 1);
    /* what has no POSIX form is refused by name, not mis-run */
    bd_err e = {0};
    char *ere = NULL;
    CHECK_EQ_INT(bd_regex_translate("a*?", &ere, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "lazy quantifier");
    CHECK_EQ_INT(bd_regex_translate("(?=a)", &ere, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_EQ_INT(bd_regex_translate("(?i)abc", &ere, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_EQ_INT(bd_regex_translate("\\pL", &ere, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "\\p");
    CHECK_EQ_INT(bd_regex_translate("ab\\", &ere, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_EQ_INT(bd_regex_translate("[ab", &ere, &e), BRAID_ERR_INVALID_MODEL);
    CHECK(ere == NULL);
    CHECK_EQ_INT(full_match("(ab", "ab"), -2); /* unbalanced: regcomp refuses */

    /* the pool and string blocks */
    bd_strpool p;
    bd_strpool_init(&p);
    char *a = bd_strpool_dup(&p, "hello", 3);
    CHECK(a && !strcmp(a, "hel"));
    bd_strpool_reset(&p);
    a = bd_strpool_dup(&p, "", 0);
    CHECK(a && !strcmp(a, ""));
    bd_strpool_destroy(&p);
    const char *strs[2] = {"x", ""};
    size_t lens[2] = {1, 0};
    char **blk = bd_string_block(strs, lens, 2);
    CHECK(blk && !strcmp(blk[0], "x") && !strcmp(blk[1], ""));
    bd_free(blk);
    return check_done();
}
