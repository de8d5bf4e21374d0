/* fuzz_pb.c: libFuzzer target for the ONNX TensorProto (.pb) reader. */
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
    return 0;
}
