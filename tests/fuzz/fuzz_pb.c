/* fuzz_pb.c: libFuzzer target for the .pb readers: the ONNX TensorProto
 * reader, and the same bytes read as a SequenceProto and an OptionalProto
 * (of float tensors, and of a sequence of them). */
#include <stdint.h>

#include "onnx/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bd_tensor t;
    char *name = NULL;
    bd_err e = {0};
    if (bd_onnx_parse_tensor(data, size, &t, &name, &e) == BRAID_OK) {
        bd_free(t.data);
        bd_free(name);
    } else if (!e.msg[0]) {
        __builtin_trap();
    }
    static const int kinds[] = {BD_DT_SEQ | BRAID_DTYPE_FLOAT, BD_DT_OPT | BRAID_DTYPE_FLOAT,
                                BD_DT_OPT | BD_DT_SEQ | BRAID_DTYPE_FLOAT};
    for (int k = 0; k < 3; k++) {
        bd_err e2 = {0};
        if (bd_onnx_parse_value(data, size, kinds[k], &t, &e2) == BRAID_OK) bd_onnx_value_free(&t);
        else if (!e2.msg[0]) __builtin_trap();
    }
    return 0;
}
