/* host_nodes.h: which nodes of a CUDA plan run on the host (strings,
 * sequences, optionals), and what `braid plan` says of them. Part of the
 * CUDA backend's host code that needs no GPU, compiled into braid's core
 * (and into libbraid_cuda.so, which links the core), so that the CPU tests
 * check it. No CUDA header here. */
#ifndef BD_CUDA_HOST_NODES_H
#define BD_CUDA_HOST_NODES_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* 1 when node n of instance x runs on the host inside a CUDA plan
 * (src/backend/cuda/cuda_host.c): its op works on host values (BD_OPF_HOST:
 * strings, sequences, optionals), or one of its inputs or outputs is a
 * string tensor, a sequence or an optional, whose contents live in host
 * memory on every backend (a CUDA plan holds only their pointers). Control
 * flow (If, Loop, Scan, SequenceMap) is never a host node: the nest engine
 * runs it on the node's stream. */
int bd_cuda_host_node(const bd_node *n, const bd_inst *x);
/* What `braid plan` says of such a node, and of SequenceMap (bd_backend.node_note); NULL for others. */
const char *bd_cuda_node_note(const bd_node *n, const bd_inst *x);

#endif
