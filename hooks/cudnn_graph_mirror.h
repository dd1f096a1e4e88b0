/* What the program set on its backend descriptors, by address: each
 * descriptor's type (from its creation) and the attributes the program
 * gave it (cudnnBackendSetAttribute), copied as set. cuDNN 9 does not
 * give every attribute back (an operation graph's operations and handle:
 * NOT_SUPPORTED; an operation's tensor comes back as a copy with other
 * dimensions and no unique id: docs/gpu-results.md), so the graph hook
 * reads a plan's convolution here first and asks cuDNN only what cuDNN
 * chose itself (the engine of a heuristics configuration, a plan's
 * workspace).
 *
 * The hooks of cudnn_graph.c feed it; a descriptor created while the
 * table is full, or before the shim watched, is not held, and its reads
 * go to cuDNN. Each held descriptor has a generation, so that an
 * attribute naming a descriptor since destroyed (and perhaps another
 * created at its address) is seen to be stale. Locked inside: any
 * thread. */
#ifndef AMP_CUDNN_GRAPH_MIRROR_H
#define AMP_CUDNN_GRAPH_MIRROR_H

#include "cudnn_graph_symbols.h"

#include <stdint.h>

/* Descriptors held at once: a model's tensors, operations, graphs, the
 * heuristics' configurations and plans (some ten a layer and direction,
 * and the dozens of configurations heuristics give while a plan is
 * built); about 1 KiB each, the table's pages touched as it fills. */
#define AMP_MIRROR_DESCS 16384

enum amp_mirror_answer {
    AMP_MIRROR_ABSENT = 0,  /* not held: ask cuDNN */
    AMP_MIRROR_HELD = 1,    /* answered from what the program set */
    AMP_MIRROR_REFUSED = -1 /* set as another attribute type: cuDNN
                               refuses such a read (BAD_PARAM) */
};

/* The hooks' notices: a descriptor of `type` created at d; d destroyed;
 * attribute `name` set on d (after cuDNN accepted it); and the n engine
 * configurations cuDNN's heuristics `heur` filled, which build plans of
 * the heuristics' operation graph. A descriptor's operation graph is
 * taken when its graph, engine or configuration is set (cuDNN copies
 * what it is given), so a plan knows its graph after the program
 * destroyed the descriptors between. */
void amp_mirror_created(cudnnBackendDescriptor_t d,
                        cudnnBackendDescriptorType_t type);
void amp_mirror_destroyed(cudnnBackendDescriptor_t d);
void amp_mirror_set(cudnnBackendDescriptor_t d,
                    cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t type, int64_t count,
                    const void *elements);
void amp_mirror_heur_results(cudnnBackendDescriptor_t heur,
                             const cudnnBackendDescriptor_t *cfgs, int64_t n);

/* 1 and *type when d is held. */
int amp_mirror_type(cudnnBackendDescriptor_t d,
                    cudnnBackendDescriptorType_t *type);

/* Attribute `name` of d as `type`: its element count in *n and its first
 * min(*n, max) elements in v (as cudnnBackendGetAttribute). */
enum amp_mirror_answer amp_mirror_get(cudnnBackendDescriptor_t d,
                                      cudnnBackendAttributeName_t name,
                                      cudnnBackendAttributeType_t type,
                                      int64_t max, int64_t *n, void *v);

/* One read of amp_mirror_get_all: amp_mirror_get's arguments and its
 * answer. */
struct amp_mirror_read {
    cudnnBackendAttributeName_t name;
    cudnnBackendAttributeType_t type;
    int64_t max;
    int64_t *n;
    void *v;
    enum amp_mirror_answer answer;
};

/* The `count` reads r of d, as amp_mirror_get each, with one look-up
 * (a variant pack's three attributes at every execution). */
void amp_mirror_get_all(cudnnBackendDescriptor_t d, struct amp_mirror_read *r,
                        int count);

/* The descriptors of attribute `name` of d (the program's own, each
 * still held, with its type): HELD with *n of them when every one is
 * and there are at most max; else ABSENT. */
enum amp_mirror_answer amp_mirror_children(
    cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
    int64_t max, int64_t *n, cudnnBackendDescriptor_t *child,
    cudnnBackendDescriptorType_t *type);

/* The operation graph that d (an engine, heuristics, an engine
 * configuration or a plan) builds and its generation in *gen, as the
 * program set it (a heuristics configuration: its heuristics'); NULL
 * when the shim did not see it. The graph may since have been destroyed:
 * its generation tells. */
cudnnBackendDescriptor_t amp_mirror_origin(cudnnBackendDescriptor_t d,
                                           uint64_t *gen);

/* The generation of d; 0 when not held. */
uint64_t amp_mirror_generation(cudnnBackendDescriptor_t d);

#endif
