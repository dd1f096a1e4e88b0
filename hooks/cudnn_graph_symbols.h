/* The one list of cuDNN backend (graph) API symbols the shim knows: the
 * ones it hooks (and exports) and the ones it only calls. Each
 * X(ret, name, params) names the exported symbol of libcudnn.so.9. */
#ifndef AMP_CUDNN_GRAPH_SYMBOLS_H
#define AMP_CUDNN_GRAPH_SYMBOLS_H

/* Names-only users (the ABI and preload tests) never expand prototypes. */
#ifndef AMP_SYMBOL_NAMES_ONLY
#include <cudnn.h>
#endif

/* Hooked: exported by libampshim.so, checked by the ABI test. Creation,
 * setting attributes and destruction keep the shim's copy of what the
 * program built (cudnn_graph_mirror.h); a plan is read at its
 * finalization; getting attributes is watched only for the engine
 * configurations of heuristics; execution is where a plan is converted. */
#define AMP_CUDNN_GRAPH_HOOKED(X)                                            \
    X(cudnnStatus_t, cudnnBackendCreateDescriptor,                           \
      (cudnnBackendDescriptorType_t descriptorType,                          \
       cudnnBackendDescriptor_t * descriptor))                               \
    X(cudnnStatus_t, cudnnBackendFinalize,                                   \
      (cudnnBackendDescriptor_t descriptor))                                 \
    X(cudnnStatus_t, cudnnBackendDestroyDescriptor,                          \
      (cudnnBackendDescriptor_t descriptor))                                 \
    X(cudnnStatus_t, cudnnBackendExecute,                                    \
      (cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,         \
       cudnnBackendDescriptor_t variantPack))                                \
    X(cudnnStatus_t, cudnnBackendSetAttribute,                               \
      (cudnnBackendDescriptor_t descriptor,                                  \
       cudnnBackendAttributeName_t attributeName,                            \
       cudnnBackendAttributeType_t attributeType, int64_t elementCount,      \
       const void *arrayOfElements))                                         \
    X(cudnnStatus_t, cudnnBackendGetAttribute,                               \
      (cudnnBackendDescriptor_t const descriptor,                            \
       cudnnBackendAttributeName_t attributeName,                            \
       cudnnBackendAttributeType_t attributeType,                            \
       int64_t requestedElementCount, int64_t *elementCount,                 \
       void *arrayOfElements))

/* Called only: the shim's own handle for its twin plans. */
#define AMP_CUDNN_GRAPH_CALLED(X)                                            \
    X(cudnnStatus_t, cudnnCreate, (cudnnHandle_t * handle))                  \
    X(cudnnStatus_t, cudnnDestroy, (cudnnHandle_t handle))                   \
    X(cudnnStatus_t, cudnnSetStream,                                         \
      (cudnnHandle_t handle, cudaStream_t streamId))                         \
    X(cudnnStatus_t, cudnnGetStream,                                         \
      (cudnnHandle_t handle, cudaStream_t * streamId))

#define AMP_CUDNN_GRAPH_SYMBOLS(X)                                           \
    AMP_CUDNN_GRAPH_HOOKED(X) AMP_CUDNN_GRAPH_CALLED(X)

#endif
