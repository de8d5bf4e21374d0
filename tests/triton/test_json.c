/* test_json.c: the Triton backend's JSON reader and writer (src/triton/json.c)
 * on what model configurations hold and on malformed text: round trips,
 * escapes and surrogate pairs, int64 values as numbers and as strings,
 * editing, and the errors (with their byte offsets) for bad input. */
#include <stdio.h>
#include <string.h>

#include "triton/json.h"
#include "util/common.h"

static int failures;
#define CHECK(cond, ...)                                                                                       \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                        \
            printf(__VA_ARGS__);                                                                               \
            printf("\n");                                                                                      \
            failures++;                                                                                        \
        }                                                                                                      \
    } while (0)

static bj *parse(const char *s, char *err, size_t n) { return bj_parse(s, strlen(s), err, n); }

/* text parses, and writes back as `want` (compact form). */
static void round_trip(const char *text, const char *want)
{
    char err[200];
    bj *v = parse(text, err, sizeof err);
    CHECK(v != NULL, "parse %s: %s", text, err);
    if (!v) return;
    size_t n = 0;
    char *out = bj_write(v, &n);
    CHECK(out && strcmp(out, want) == 0 && n == strlen(want), "%s wrote %s, want %s", text, out ? out : "NULL", want);
    bd_free(out);
    bj_free(v);
}

static void refused(const char *text, const char *want)
{
    char err[200] = "";
    bj *v = parse(text, err, sizeof err);
    CHECK(v == NULL && strstr(err, want) != NULL, "%s: got error '%s', want '%s'", text, err, want);
    bj_free(v);
}

int main(void)
{
    round_trip(" { \"a\" : [ 1 , -2.5e3, true, false, null ], \"b\": {} , \"c\": [] } ",
               "{\"a\":[1,-2.5e3,true,false,null],\"b\":{},\"c\":[]}");
    round_trip("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t\"", "\"q\\\" b\\\\ s/ \\u0008\\u000c\\u000a\\u000d\\u0009\"");
    /* \u escapes to UTF-8: é (2 bytes), € (3), 😀 (a surrogate pair, 4) */
    round_trip("\"\\u00e9\\u20ac\\ud83d\\ude00\"", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
    round_trip("9223372036854775807", "9223372036854775807");

    char err[200];
    bj *cfg = parse("{\"max_batch_size\":8,\"input\":[{\"name\":\"x\",\"dims\":[\"16\",-1,\"9223372036854775807\"]}],"
                    "\"parameters\":{\"streams\":{\"string_value\":\"2\"}}}",
                    err, sizeof err);
    CHECK(cfg != NULL, "config: %s", err);
    int64_t x = 0;
    CHECK(bj_int(bj_get(cfg, "max_batch_size"), &x) && x == 8, "max_batch_size %lld", (long long)x);
    const bj *dims = bj_get(bj_at(bj_get(cfg, "input"), 0), "dims");
    CHECK(bj_len(dims) == 3, "3 dims");
    CHECK(bj_int(bj_at(dims, 0), &x) && x == 16, "a dim as a string");
    CHECK(bj_int(bj_at(dims, 1), &x) && x == -1, "a dim as a number");
    CHECK(bj_int(bj_at(dims, 2), &x) && x == INT64_MAX, "int64's largest as a string");
    CHECK(!bj_int(bj_get(cfg, "input"), &x), "an array is no integer");
    CHECK(bj_get(cfg, "output") == NULL && bj_at(dims, 3) == NULL && bj_str(bj_at(dims, 0)) != NULL, "absent values");
    CHECK(strcmp(bj_str(bj_get(bj_get(bj_get(cfg, "parameters"), "streams"), "string_value")), "2") == 0,
          "a parameter's string value");
    /* editing: replace a key, add keys, push elements */
    CHECK(bj_set(cfg, "max_batch_size", bj_new_int(4)), "set");
    bj *arr = bj_new(BJ_ARR);
    CHECK(bj_push(arr, bj_new_str("a\"b")) && bj_push(arr, bj_new_int(-7)), "push");
    CHECK(bj_set(cfg, "output", arr) && bj_set(cfg, "dynamic_batching", bj_new(BJ_OBJ)), "set new");
    CHECK(!bj_push(cfg, bj_new_int(1)) && !bj_set(arr, "k", bj_new_int(1)), "push to an object, set on an array: refused");
    char *out = bj_write(cfg, NULL);
    CHECK(out && strcmp(out, "{\"max_batch_size\":4,\"input\":[{\"name\":\"x\",\"dims\":[\"16\",-1,\"9223372036854775807\"]}],"
                             "\"parameters\":{\"streams\":{\"string_value\":\"2\"}},\"output\":[\"a\\\"b\",-7],"
                             "\"dynamic_batching\":{}}") == 0,
          "edited: %s", out ? out : "NULL");
    bd_free(out);
    bj_free(cfg);

    refused("", "unexpected end at byte 0");
    refused("{\"a\":1,}", "expected a key at byte 7");
    refused("{\"a\" 1}", "expected ':' at byte 5");
    refused("[1 2]", "expected ',' or ']' at byte 3");
    refused("\"abc", "unterminated string");
    refused("\"a\\qb\"", "bad escape");
    refused("\"\\ud83d\"", "unpaired surrogate");
    refused("\"\\ude00\"", "unpaired surrogate");
    refused("\"\\u12g4\"", "bad \\u escape");
    refused("\"a\nb\"", "control character");
    refused("1.2.3", "bad number at byte 0");
    refused("1x", "text after the value at byte 1");
    refused("-", "bad number");
    refused("tru", "unexpected character 't'");
    refused("{} {}", "text after the value at byte 3");
    char deep[200];
    memset(deep, '[', 100);
    deep[100] = '\0';
    refused(deep, "nested deeper than 64");

    printf("%s\n", failures ? "FAILED" : "json: all checks passed");
    return failures ? 1 : 0;
}
