/* The CUDA runtime and driver functions the shim hooks: the ones that end
 * a context or stream the shim may have work and state in, the graph
 * calls that carry captured calls from graph to graph (instantiation,
 * update, child graph nodes, clones), launch (the per-thread default
 * stream's too) and destruction (a graph's launches
 * replay the calls captured into it: measure/replay.h), and the driver's
 * cuGetProcAddress, which hands out those hooks. Each X(ret, name, params)
 * names the exported symbol (the driver's versioned names, as CUDA 13's
 * cuda.h maps cuCtxDestroy to cuCtxDestroy_v2). */
#ifndef AMP_CUDA_SYMBOLS_H
#define AMP_CUDA_SYMBOLS_H

/* Names-only users (the ABI and preload tests) never expand prototypes. */
#ifndef AMP_SYMBOL_NAMES_ONLY
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

/* Hooked: exported by libampshim.so, checked by the ABI test. */
#define AMP_CUDA_HOOKED(X)                                                   \
    X(cudaError_t, cudaDeviceReset, (void))                                  \
    X(cudaError_t, cudaGraphInstantiate,                                     \
      (cudaGraphExec_t * pGraphExec, cudaGraph_t graph,                      \
       unsigned long long flags))                                            \
    X(cudaError_t, cudaGraphInstantiateWithFlags,                            \
      (cudaGraphExec_t * pGraphExec, cudaGraph_t graph,                      \
       unsigned long long flags))                                            \
    X(cudaError_t, cudaGraphInstantiateWithParams,                           \
      (cudaGraphExec_t * pGraphExec, cudaGraph_t graph,                      \
       cudaGraphInstantiateParams * instantiateParams))                      \
    X(cudaError_t, cudaGraphExecUpdate,                                      \
      (cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,                       \
       cudaGraphExecUpdateResultInfo * resultInfo))                          \
    X(cudaError_t, cudaGraphAddChildGraphNode,                               \
      (cudaGraphNode_t * pGraphNode, cudaGraph_t graph,                      \
       const cudaGraphNode_t *pDependencies, size_t numDependencies,         \
       cudaGraph_t childGraph))                                              \
    X(cudaError_t, cudaGraphLaunch,                                          \
      (cudaGraphExec_t graphExec, cudaStream_t stream))                      \
    X(cudaError_t, cudaGraphLaunch_ptsz,                                     \
      (cudaGraphExec_t graphExec, cudaStream_t stream))                      \
    X(cudaError_t, cudaGraphClone,                                           \
      (cudaGraph_t * pGraphClone, cudaGraph_t originalGraph))                \
    X(cudaError_t, cudaGraphDestroy, (cudaGraph_t graph))                    \
    X(cudaError_t, cudaGraphExecDestroy, (cudaGraphExec_t graphExec))        \
    X(CUresult, cuDevicePrimaryCtxReset_v2, (CUdevice dev))                  \
    X(CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice dev))                \
    X(CUresult, cuCtxDestroy_v2, (CUcontext ctx))                            \
    X(CUresult, cuStreamDestroy_v2, (CUstream stream))                       \
    X(CUresult, cuGraphInstantiateWithFlags,                                 \
      (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags)) \
    X(CUresult, cuGraphInstantiateWithParams,                                \
      (CUgraphExec * phGraphExec, CUgraph hGraph,                            \
       CUDA_GRAPH_INSTANTIATE_PARAMS * instantiateParams))                   \
    X(CUresult, cuGraphExecUpdate_v2,                                        \
      (CUgraphExec hGraphExec, CUgraph hGraph,                               \
       CUgraphExecUpdateResultInfo * resultInfo))                            \
    X(CUresult, cuGraphAddChildGraphNode,                                    \
      (CUgraphNode * phGraphNode, CUgraph hGraph,                            \
       const CUgraphNode *dependencies, size_t numDependencies,              \
       CUgraph childGraph))                                                  \
    X(CUresult, cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream))   \
    X(CUresult, cuGraphLaunch_ptsz,                                          \
      (CUgraphExec hGraphExec, CUstream hStream))                            \
    X(CUresult, cuGraphClone, (CUgraph * phGraphClone, CUgraph originalGraph)) \
    X(CUresult, cuGraphDestroy, (CUgraph hGraph))                            \
    X(CUresult, cuGraphExecDestroy, (CUgraphExec hGraphExec))                \
    X(CUresult, cuGetProcAddress_v2,                                         \
      (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,    \
       CUdriverProcAddressQueryResult *symbolStatus))

/* The driver's hooks that cuGetProcAddress and dlsym on libcuda.so.1's
 * handle hand out in place of the driver's own definitions: the calls a
 * runtime linked into the program (which takes every driver function
 * from cuGetProcAddress) makes to end a context or a stream. */
#define AMP_CUDA_DRIVER_HOOKED(X)                                            \
    X(cuDevicePrimaryCtxReset_v2)                                            \
    X(cuDevicePrimaryCtxRelease_v2)                                          \
    X(cuCtxDestroy_v2)                                                       \
    X(cuStreamDestroy_v2)                                                    \
    X(cuGraphInstantiateWithFlags)                                           \
    X(cuGraphInstantiateWithParams)                                          \
    X(cuGraphExecUpdate_v2)                                                  \
    X(cuGraphAddChildGraphNode)                                              \
    X(cuGraphLaunch)                                                         \
    X(cuGraphLaunch_ptsz)                                                    \
    X(cuGraphClone)                                                          \
    X(cuGraphDestroy)                                                        \
    X(cuGraphExecDestroy)                                                    \
    X(cuGetProcAddress_v2)

/* The runtime's hooks that dlsym on libcudart.so.13's handle hands out in
 * place of the runtime's own definitions: a program that opens the
 * runtime itself and takes its reset from the handle (a framework's
 * loader) ends the context through the hook all the same. The shared
 * runtime takes the driver's own functions as it loads, so its graph
 * calls are hooked here, as the runtime's. */
#define AMP_CUDA_RUNTIME_HOOKED(X)                                           \
    X(cudaDeviceReset)                                                       \
    X(cudaGraphInstantiate)                                                  \
    X(cudaGraphInstantiateWithFlags)                                         \
    X(cudaGraphInstantiateWithParams)                                        \
    X(cudaGraphExecUpdate)                                                   \
    X(cudaGraphAddChildGraphNode)                                            \
    X(cudaGraphLaunch)                                                       \
    X(cudaGraphLaunch_ptsz)                                                  \
    X(cudaGraphClone)                                                        \
    X(cudaGraphDestroy)                                                      \
    X(cudaGraphExecDestroy)

#endif
