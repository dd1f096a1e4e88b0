/* What the backend API's hooks (cudnn_graph.c) and the twin plans
 * (cudnn_graph_plans.c) share: a plan's one convolution as the hooks read
 * it, the backend's reading helpers over the real functions, and the
 * issuer the hooks give the shared convolution path. */
#ifndef AMP_CUDNN_GRAPH_PLANS_H
#define AMP_CUDNN_GRAPH_PLANS_H

#include "cudnn_graph_symbols.h"

#include "conv_hook.h"
#include "measure/stats.h"
#include "run/conv.h"

#include <stdint.h>

#define AMP_GRAPH_MAX_SPATIAL (AMP_CONV_MAX_DIMS - 2)

enum amp_graph_kind {
    AMP_GRAPH_FP32 = 0,        /* one FP32 convolution, Tensor Core engine */
    AMP_GRAPH_NO_TC_ENGINE,    /* the same on an engine without Tensor
                                  Cores: the program kept to FP32 math */
    AMP_GRAPH_FUSED,           /* one FP32 forward convolution fused with
                                  pointwise operations (a bias, an
                                  activation): run as the program built
                                  it, counted */
    AMP_GRAPH_OTHER,           /* another graph, or other types */
    AMP_GRAPH_INVALID,         /* not a plan cuDNN can read back */
};

/* A plan's one convolution: x, w and y in their forward roles (for
 * backward data x is dx and y dy; for backward filter w is dw). */
struct amp_graph_conv {
    enum amp_graph_kind kind;
    enum amp_conv_dir dir;
    struct amp_conv_layout l[3];        /* by AMP_CONV_X, _W, _Y */
    int64_t uid[3], align[3];
    int64_t groups, nsp;
    int64_t pre[AMP_GRAPH_MAX_SPATIAL], post[AMP_GRAPH_MAX_SPATIAL];
    int64_t stride[AMP_GRAPH_MAX_SPATIAL], dil[AMP_GRAPH_MAX_SPATIAL];
    int32_t mode;                       /* cudnnConvolutionMode_t */
    float alpha, beta;
    int64_t workspace;                  /* the program's plan's */
    int conv;                           /* one convolution, read whole */
    int32_t x_type;                     /* cudnnDataType_t of x */
    int y_virtual;                      /* y joins the convolution to the
                                           fused operations after it */
};

/* The issuer's record of one call: the program's convolution and the
 * twin plan `ready` found; the program's call itself (its handle, plan,
 * variant pack and the real cudnnBackendExecute), for a shadow run that
 * makes it first. */
struct amp_graph_call {
    const struct amp_graph_conv *conv;
    struct amp_twin *twin;
    cudnnHandle_t handle;
    cudnnBackendDescriptor_t plan, pack;
    cudnnStatus_t (*execute)(cudnnHandle_t, cudnnBackendDescriptor_t,
                             cudnnBackendDescriptor_t);
};

/* The operation descriptor type of each direction, and per direction its
 * attributes: alpha, beta, the convolution, then x, w, y. */
extern const cudnnBackendDescriptorType_t amp_op_types[3];
extern const cudnnBackendAttributeName_t amp_op_attrs[3][6];

/* The hooks' counters (cudnn_graph.c): the twin plans count their
 * heuristic queries and the plans they build there. */
extern struct amp_api_stats amp_graph_stats;

/* Reading descriptors (cudnn_graph.c), what the program set from the
 * shim's copy first (cudnn_graph_mirror.h): up to max elements of
 * attribute `name` into v, their number in *n; one element, exactly; the
 * descriptor attribute `name` of d, of `type` (the program's own, or a
 * new one cuDNN fills, *owned 1: the caller destroys it; NULL when d has
 * none of that type); and destroying the n descriptors of d that are not
 * NULL. */
int amp_bk_get(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
               cudnnBackendAttributeType_t type, int64_t max, int64_t *n,
               void *v);
int amp_bk_one(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
               cudnnBackendAttributeType_t type, void *v);
cudnnBackendDescriptor_t amp_bk_child(cudnnBackendDescriptor_t d,
                                      cudnnBackendAttributeName_t name,
                                      cudnnBackendDescriptorType_t type,
                                      int *owned);
void amp_bk_destroy(cudnnBackendDescriptor_t *d, int n);

/* Whether the engine carries numerical note `want`. */
int amp_graph_engine_note(cudnnBackendDescriptor_t engine,
                          cudnnBackendNumericalNote_t want);

/* The backend issuer of the shared convolution path (cudnn_graph_plans.c):
 * the shim's own handle and twin plans; its call is a struct
 * amp_graph_call. */
extern const struct amp_conv_vendor amp_graph_vendor;

#endif
