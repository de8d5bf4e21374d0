/* tensor.c: TensorProto to bd_tensor: raw_data, every typed field, and
 * external data resolved against the model's folder (never outside it). */
#include "onnx_internal.h"
#include "util/strpool.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A TensorProto's data_type: an element type (under 0x100: braid's
 * SEQUENCE and OPTIONAL flags are no TensorProto type) that braid holds. */
static int dtype_supported(int dt)
{
    return dt > BRAID_DTYPE_UNDEFINED && dt < 0x100 && bd_dtype_size(dt) != 0;
}

/* Copies n typed-field values into dst with the tensor's element type. */
static void copy_typed(const Onnx__TensorProto *tp, int dt, void *dst, size_t n)
{
    size_t i;
    if (n == 0) return; /* the typed field may be NULL */
    switch (dt) {
    case BRAID_DTYPE_FLOAT: memcpy(dst, tp->float_data, n * 4); break;
    case BRAID_DTYPE_DOUBLE: memcpy(dst, tp->double_data, n * 8); break;
    case BRAID_DTYPE_INT64: memcpy(dst, tp->int64_data, n * 8); break;
    case BRAID_DTYPE_UINT64: memcpy(dst, tp->uint64_data, n * 8); break;
    case BRAID_DTYPE_UINT32: for (i = 0; i < n; i++) ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i]; break;
    case BRAID_DTYPE_INT32: memcpy(dst, tp->int32_data, n * 4); break;
    case BRAID_DTYPE_INT16: for (i = 0; i < n; i++) ((int16_t *)dst)[i] = (int16_t)tp->int32_data[i]; break;
    case BRAID_DTYPE_UINT16: case BRAID_DTYPE_FLOAT16: case BRAID_DTYPE_BFLOAT16:
        for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = (uint16_t)tp->int32_data[i];
        break;
    case BRAID_DTYPE_INT8: for (i = 0; i < n; i++) ((int8_t *)dst)[i] = (int8_t)tp->int32_data[i]; break;
    default: /* the one-byte types, and the packed bytes of the sub-byte ones */
        for (i = 0; i < n; i++) ((uint8_t *)dst)[i] = (uint8_t)tp->int32_data[i];
        break;
    }
}

static size_t typed_count(const Onnx__TensorProto *tp, int dt)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return tp->n_float_data;
    case BRAID_DTYPE_DOUBLE: return tp->n_double_data;
    case BRAID_DTYPE_INT64: return tp->n_int64_data;
    case BRAID_DTYPE_UINT64: case BRAID_DTYPE_UINT32: return tp->n_uint64_data;
    default: return tp->n_int32_data;
    }
}

/* Elements per stored byte of a packed sub-byte type (ONNX packs INT4,
 * UINT4 and FLOAT4E2M1 two to a byte, INT2 and UINT2 four; FLOAT6 packs four
 * elements into three bytes: returned as 0), or 1 for a type stored whole. */
static int per_byte(int dt)
{
    switch (dt) {
    case BRAID_DTYPE_INT4: case BRAID_DTYPE_UINT4: case BRAID_DTYPE_FLOAT4E2M1: return 2;
    case BRAID_DTYPE_INT2: case BRAID_DTYPE_UINT2: return 4;
    case BRAID_DTYPE_FLOAT6E2M3: case BRAID_DTYPE_FLOAT6E3M2: return 0;
    default: return 1;
    }
}

/* Bytes that n elements take in ONNX's stored (packed) form. */
static size_t stored_bytes(int dt, size_t n)
{
    int k = per_byte(dt);
    if (k == 0) return (n * 6 + 7) / 8;
    return k == 1 ? n * bd_dtype_size(dt) : (n + (size_t)k - 1) / (size_t)k;
}

/* Unpacks n elements from src (stored form) into one byte each in dst,
 * sign-extending INT4 and INT2, least significant bits first as ONNX packs. */
static void unpack(int dt, const uint8_t *src, uint8_t *dst, size_t n)
{
    int k = per_byte(dt);
    int sign = dt == BRAID_DTYPE_INT4 || dt == BRAID_DTYPE_INT2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (k == 0) { /* 6-bit codes, LSB first across three bytes per four */
            size_t bit = i * 6, b = bit / 8;
            unsigned lo = src[b], hi = (bit % 8) > 2 ? src[b + 1] : 0;
            v = ((lo | hi << 8) >> (bit % 8)) & 0x3f;
        } else {
            unsigned w = 8 / (unsigned)k;
            v = (src[i / (size_t)k] >> (w * (i % (size_t)k))) & ((1u << w) - 1u);
            if (sign && (v >> (w - 1))) v |= ~0u << w; /* sign-extend */
        }
        dst[i] = (uint8_t)v;
    }
}

/* Opens location under base_dir, refusing absolute paths and any path whose
 * real location leaves the folder. */
static braid_status open_external(const char *base_dir, const char *loc, const char *tname, FILE **out,
                                  bd_err *e)
{
    char path[PATH_MAX], real_base[PATH_MAX], real_path[PATH_MAX];
    if (!base_dir)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                       "tensor '%s': external data '%s' cannot be used for a model loaded from memory",
                       tname, loc);
    if (loc[0] == '/' || strstr(loc, ".."))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                       "tensor '%s': external data path '%s' leaves the model's folder", tname, loc);
    if (snprintf(path, sizeof path, "%s/%s", base_dir, loc) >= (int)sizeof path)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "tensor '%s': external data path too long", tname);
    if (!realpath(base_dir, real_base) || !realpath(path, real_path))
        return BD_FAIL(e, BRAID_ERR_IO, "tensor '%s': cannot open external data '%s': %s", tname, path,
                       strerror(errno));
    size_t nb = strlen(real_base);
    if (strncmp(real_path, real_base, nb) != 0 || (real_path[nb] != '/' && real_path[nb] != 0))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                       "tensor '%s': external data path '%s' leaves the model's folder", tname, loc);
    *out = fopen(real_path, "rb");
    if (!*out)
        return BD_FAIL(e, BRAID_ERR_IO, "tensor '%s': cannot open external data '%s': %s", tname, path,
                       strerror(errno));
    return BRAID_OK;
}

/* Opens tp's external data and checks that offset + nbytes lie inside the
 * file, before anything is allocated. On success *f is positioned there. */
static braid_status open_external_checked(const Onnx__TensorProto *tp, const char *base_dir, size_t nbytes,
                                          FILE **out, bd_err *e)
{
    const char *loc = NULL, *tname = tp->name ? tp->name : "";
    long long offset = 0, length = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = tp->external_data[i];
        if (!kv->key || !kv->value) continue;
        if (!strcmp(kv->key, "location")) loc = kv->value;
        else if (!strcmp(kv->key, "offset")) offset = strtoll(kv->value, NULL, 10);
        else if (!strcmp(kv->key, "length")) length = strtoll(kv->value, NULL, 10);
    }
    if (!loc) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "tensor '%s': external data has no location", tname);
    if (offset < 0 || (length >= 0 && (size_t)length != nbytes))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                       "tensor '%s': external data length %lld does not match its shape (%zu bytes)",
                       tname, length, nbytes);
    FILE *f = NULL;
    braid_status st = open_external(base_dir, loc, tname, &f, e);
    if (st) return st;
    long long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (end < 0 || (unsigned long long)end < (unsigned long long)offset + nbytes) {
        fclose(f);
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                       "tensor '%s': external data file '%s' is shorter than offset %lld + %zu bytes",
                       tname, loc, offset, nbytes);
    }
    if (fseek(f, (long)offset, SEEK_SET) != 0) {
        fclose(f);
        return BD_FAIL(e, BRAID_ERR_IO, "tensor '%s': cannot read external data '%s'", tname, loc);
    }
    *out = f;
    return BRAID_OK;
}

static braid_status tensor(const Onnx__TensorProto *tp, Onnx__TensorProto *take, const char *base_dir, bd_tensor *t,
                           bd_err *e)
{
    const char *tname = tp->name ? tp->name : "";
    int dt = tp->has_data_type ? tp->data_type : 0;
    memset(t, 0, sizeof *t);
    if (!dtype_supported(dt))
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "tensor '%s' has dtype %s, which braid does not support",
                       tname, bd_dtype_name(dt));
    if (tp->n_dims > BD_MAX_RANK)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "tensor '%s' has rank %zu; braid supports up to %d", tname,
                       tp->n_dims, BD_MAX_RANK);
    if (tp->segment) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "tensor '%s' is segmented", tname);
    t->dtype = dt;
    t->rank = (int)tp->n_dims;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "tensor '%s' has negative dim %lld", tname,
                           (long long)tp->dims[i]);
        t->dims[i] = tp->dims[i];
    }
    size_t nbytes;
    braid_status st = bd_tensor_nbytes(t, &nbytes, e);
    if (st) { bd_err_prefix(e, "tensor '%s': ", tname); return st; }
    if (dt == BRAID_DTYPE_STRING) { /* string_data: one block of pointers and bytes (strpool.h) */
        size_t n = (size_t)bd_numel(t);
        if (tp->n_string_data != n)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "tensor '%s' declares %zu strings but holds %zu", tname,
                           n, tp->n_string_data);
        const char **strs = bd_malloc((n ? n : 1) * sizeof *strs);
        size_t *lens = bd_malloc((n ? n : 1) * sizeof *lens);
        if (strs && lens)
            for (size_t i = 0; i < n; i++) {
                strs[i] = (const char *)tp->string_data[i].data;
                lens[i] = tp->string_data[i].len;
            }
        t->data = strs && lens ? bd_string_block(strs, lens, n) : NULL;
        bd_free(strs);
        bd_free(lens);
        if (!t->data) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory for tensor '%s'", tname);
        return BRAID_OK;
    }
    size_t n = (size_t)bd_numel(t), esize = bd_dtype_size(dt);
    /* stored: the bytes of the data as ONNX stores it (packed for sub-byte
     * types; float6's int32_data holds one element per entry). */
    size_t stored = stored_bytes(dt, n);
    int packed = per_byte(dt) != 1;
    int external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    int typed_whole = per_byte(dt) == 0 && !tp->has_raw_data && !external; /* float6 in int32_data */
    /* Refuse sizes the message cannot hold before allocating anything. */
    if (!external) {
        size_t want = typed_whole ? n : stored;
        size_t have = tp->has_raw_data ? tp->raw_data.len : typed_count(tp, dt) * (packed ? 1 : esize);
        if (have != want)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                           "tensor '%s' declares %zu elements (%zu bytes) but holds %zu bytes", tname,
                           n, want, have);
    }
    if (take && !external && !packed && tp->has_raw_data && stored && stored == nbytes && tp->raw_data.data) {
        t->data = take->raw_data.data; /* bd_malloc'ed by bd_pb_allocator: the tensor owns it now */
        take->raw_data.data = NULL;
        take->raw_data.len = 0;
        return BRAID_OK;
    }
    FILE *f = NULL;
    if (external && (st = open_external_checked(tp, base_dir, stored, &f, e))) return st;
    t->data = bd_malloc(nbytes ? nbytes : 1);
    uint8_t *tmp = packed && !typed_whole ? bd_malloc(stored ? stored : 1) : NULL;
    if (!t->data || (packed && !typed_whole && !tmp)) {
        if (f) fclose(f);
        bd_free(t->data);
        bd_free(tmp);
        t->data = NULL;
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory for tensor '%s'", tname);
    }
    void *dst = tmp ? (void *)tmp : t->data;
    if (external) {
        if (stored && fread(dst, 1, stored, f) != stored)
            st = BD_FAIL(e, BRAID_ERR_IO, "tensor '%s': cannot read its external data", tname);
        fclose(f);
    } else if (tp->has_raw_data && stored) {
        memcpy(dst, tp->raw_data.data, stored);
    } else {
        copy_typed(tp, dt, dst, typed_whole ? n : packed ? stored : n);
        if (typed_whole)
            for (size_t i = 0; i < n; i++) ((uint8_t *)t->data)[i] &= 0x3f;
    }
    if (tmp) {
        if (!st) unpack(dt, tmp, t->data, n);
        bd_free(tmp);
    }
    if (st) { bd_free(t->data); t->data = NULL; }
    return st;
}

braid_status bd_onnx_tensor(const Onnx__TensorProto *tp, const char *base_dir, bd_tensor *t, bd_err *e)
{
    return tensor(tp, NULL, base_dir, t, e);
}

braid_status bd_onnx_tensor_take(Onnx__TensorProto *tp, const char *base_dir, bd_tensor *t, bd_err *e)
{
    return tensor(tp, tp, base_dir, t, e);
}

braid_status bd_onnx_parse_tensor(const void *bytes, size_t size, bd_tensor *t, char **name, bd_err *e)
{
    braid_status st = BRAID_OK;
    memset(t, 0, sizeof *t);
    if (name) *name = NULL;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&bd_pb_allocator, size, bytes);
    if (!tp) return BD_FAIL(e, BRAID_ERR_PARSE, "not a valid ONNX TensorProto (%zu bytes)", size);
    BD_TRY(bd_onnx_tensor(tp, NULL, t, e));
    if (name) {
        *name = bd_strdup(tp->name ? tp->name : "");
        if (!*name) {
            bd_free(t->data);
            t->data = NULL;
            st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
fail:
    onnx__tensor_proto__free_unpacked(tp, &bd_pb_allocator);
    return st;
}

braid_status bd_onnx_read_tensor_file(const char *path, bd_tensor *t, char **name, bd_err *e)
{
    void *bytes = NULL;
    size_t size = 0;
    braid_status st = bd_read_file(path, &bytes, &size, e);
    if (st) return st;
    st = bd_onnx_parse_tensor(bytes, size, t, name, e);
    if (st) bd_err_prefix(e, "%s: ", path);
    bd_free(bytes);
    return st;
}
