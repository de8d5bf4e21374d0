/* tensor.c: TensorProto to bd_tensor: raw_data, every typed field, and
 * external data resolved against the model's folder (never outside it). */
#include "onnx_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int dtype_supported(int dt)
{
    return dt != BRAID_DTYPE_UNDEFINED && dt != BRAID_DTYPE_STRING && bd_dtype_size(dt) != 0;
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
    case BRAID_DTYPE_UINT16: case BRAID_DTYPE_FLOAT16:
        for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = (uint16_t)tp->int32_data[i];
        break;
    case BRAID_DTYPE_INT8: for (i = 0; i < n; i++) ((int8_t *)dst)[i] = (int8_t)tp->int32_data[i]; break;
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_BOOL:
        for (i = 0; i < n; i++) ((uint8_t *)dst)[i] = (uint8_t)tp->int32_data[i];
        break;
    default: break;
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

braid_status bd_onnx_tensor(const Onnx__TensorProto *tp, const char *base_dir, bd_tensor *t, bd_err *e)
{
    const char *tname = tp->name ? tp->name : "";
    int dt = tp->has_data_type ? tp->data_type : 0;
    memset(t, 0, sizeof *t);
    if (!dtype_supported(dt))
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "tensor '%s' has dtype %s, which braid does not support",
                       tname, dt == 16 ? "bfloat16" : bd_dtype_name(dt));
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
    size_t n = (size_t)bd_numel(t), esize = bd_dtype_size(dt);
    int external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    /* Refuse sizes the message cannot hold before allocating anything. */
    if (!external) {
        size_t have = tp->has_raw_data ? tp->raw_data.len : typed_count(tp, dt) * esize;
        if (have != nbytes)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                           "tensor '%s' declares %zu elements (%zu bytes) but holds %zu bytes", tname,
                           n, nbytes, have);
    }
    FILE *f = NULL;
    if (external && (st = open_external_checked(tp, base_dir, nbytes, &f, e))) return st;
    t->data = bd_malloc(nbytes);
    if (!t->data) {
        if (f) fclose(f);
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory for tensor '%s'", tname);
    }
    if (external) {
        if (nbytes && fread(t->data, 1, nbytes, f) != nbytes)
            st = BD_FAIL(e, BRAID_ERR_IO, "tensor '%s': cannot read its external data", tname);
        fclose(f);
    } else if (tp->has_raw_data && nbytes) {
        memcpy(t->data, tp->raw_data.data, nbytes);
    } else {
        copy_typed(tp, dt, t->data, n);
    }
    if (st) { bd_free(t->data); t->data = NULL; }
    return st;
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
