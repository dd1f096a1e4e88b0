/* Hooks of the calls that end a context: the runtime's cudaDeviceReset and
 * the driver's primary-context reset and release and cuCtxDestroy; and of
 * the driver's graph instantiation, launch and destruction, whose
 * launches replay the calls captured into a graph (measure/replay.h). Work
 * the shim queued in the context (timings, shadow checks, non-finite
 * checks) is harvested before the context ends, and the shim's state in
 * it is dropped after, so that the calls of a later context (perhaps at
 * the same address) convert afresh. The program's call itself is made
 * unchanged and its status returned as is.
 *
 * A runtime takes the driver's entry points from cuGetProcAddress, never
 * through the dynamic linker, and a runtime linked statically into the
 * program has no cudaDeviceReset to hook: cuGetProcAddress is hooked, and
 * hands out the driver hooks here for the driver's own definitions
 * (amp_cuda_hook_for; dlsym on libcuda.so.1's handle does the same, and
 * dlsym on libcudart.so.13's hands out cudaDeviceReset's hook). A
 * stream that ends (cuStreamDestroy) lets the records of the shim's
 * delayed scales on it go. */
#include "cuda_symbols.h"

#include "base/caller.h"
#include "base/log.h"
#include "base/resolve.h"
#include "base/shim.h"
#include "device/device.h"
#include "measure/harvest.h"
#include "measure/replay.h"

#include <stddef.h>
#include <string.h>

#define AMP_EXPORT __attribute__((visibility("default")))
#define AMP_CUDART_SONAME "libcudart.so.13"
#define AMP_CUDA_SONAME "libcuda.so.1"

/* The per-thread default stream's launches: the headers declare them only
 * under CUDA_API_PER_THREAD_DEFAULT_STREAM (as cuGraphLaunch and
 * cudaGraphLaunch). */
AMP_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec,
                                       CUstream hStream);
AMP_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec,
                                            cudaStream_t stream);

/* The real `name` of `soname`, resolved on first use into *cache (every
 * thread finds the same address). */
static void *
amp_real(void **cache, const char *soname, const char *name)
{
    void *fn = __atomic_load_n(cache, __ATOMIC_RELAXED);

    if (!fn) {
        fn = amp_resolve(soname, name);
        if (!fn)
            amp_log(AMP_LOG_ERROR, "%s not found in %s", name, soname);
        __atomic_store_n(cache, fn, __ATOMIC_RELAXED);
    }
    return fn;
}

/* Before `ctx` ends: the shim's pending work in it finishes and is
 * harvested (waiting for it; other contexts' pending work too, as one
 * harvest collects everything). Nothing when the shim has no state there. */
static void
amp_context_ending(void *ctx)
{
    if (amp_dev_known(ctx))
        amp_harvest(1);
}

/* The primary context of `device` when the shim has state in it, else
 * NULL (then nothing is asked of the driver). */
static void *
amp_primary_known(int device)
{
    return amp_dev_any() ? amp_dev_primary_context(device) : NULL;
}

/* The names the runtime's routes are kept under (base/caller.h). */
static const char amp_reset_name[] = "cudaDeviceReset";
static const char amp_get_device_name[] = "cudaGetDevice";

/* The runtime function `name` for a call returning to ret: the release of
 * the runtime the caller depends on when it is another than 13 (a CUDA 12
 * extension's libcudart.so.12: the driver's contexts are the same, so the
 * shim's state in them ends all the same), else the one resolved into
 * *cache. */
static void *
amp_runtime(void **cache, const char *name, const void *ret)
{
    struct amp_route route = amp_route(AMP_LIB_CUDART, name, ret);

    if (route.other)
        return route.fn;
    return amp_real(cache, AMP_CUDART_SONAME, name);
}

AMP_EXPORT cudaError_t
cudaDeviceReset(void)
{
    static void *reset_fn, *get_device_fn;
    const void *ret = __builtin_return_address(0);
    cudaError_t (*reset)(void) = NULL;
    cudaError_t (*get_device)(int *) = NULL;
    void *ctx = NULL;
    cudaError_t e;
    int device;

    *(void **)&reset = amp_runtime(&reset_fn, amp_reset_name, ret);
    if (!reset)
        return cudaErrorSymbolNotFound;
    /* The runtime resets the primary context of the thread's device. */
    if (amp_dev_any()) {
        *(void **)&get_device = amp_runtime(&get_device_fn,
                                            amp_get_device_name, ret);
        if (get_device && get_device(&device) == cudaSuccess)
            ctx = amp_primary_known(device);
    }
    amp_context_ending(ctx);
    e = reset();
    if (e == cudaSuccess)
        amp_dev_retire(ctx);
    return e;
}

AMP_EXPORT CUresult
cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    static void *fn;
    CUresult (*reset)(CUdevice) = NULL;
    void *ctx;
    CUresult r;

    *(void **)&reset = amp_real(&fn, AMP_CUDA_SONAME,
                                "cuDevicePrimaryCtxReset_v2");
    if (!reset)
        return CUDA_ERROR_NOT_FOUND;
    ctx = amp_primary_known(dev);
    amp_context_ending(ctx);
    r = reset(dev);
    if (r == CUDA_SUCCESS)
        amp_dev_retire(ctx);
    return r;
}

AMP_EXPORT CUresult
cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    static void *fn;
    CUresult (*release)(CUdevice) = NULL;
    void *ctx;
    CUresult r;

    *(void **)&release = amp_real(&fn, AMP_CUDA_SONAME,
                                  "cuDevicePrimaryCtxRelease_v2");
    if (!release)
        return CUDA_ERROR_NOT_FOUND;
    /* Whether this release is the last one cannot be known before it:
     * the shim's work is harvested in case it is. */
    ctx = amp_primary_known(dev);
    amp_context_ending(ctx);
    r = release(dev);
    if (r == CUDA_SUCCESS && ctx && amp_dev_primary_active(dev) == 0)
        amp_dev_retire(ctx);
    return r;
}

AMP_EXPORT CUresult
cuCtxDestroy_v2(CUcontext ctx)
{
    static void *fn;
    CUresult (*destroy)(CUcontext) = NULL;
    CUresult r;

    *(void **)&destroy = amp_real(&fn, AMP_CUDA_SONAME, "cuCtxDestroy_v2");
    if (!destroy)
        return CUDA_ERROR_NOT_FOUND;
    amp_context_ending(ctx);
    r = destroy(ctx);
    if (r == CUDA_SUCCESS)
        amp_dev_retire(ctx);
    return r;
}

AMP_EXPORT CUresult
cuStreamDestroy_v2(CUstream stream)
{
    static void *fn;
    CUresult (*destroy)(CUstream) = NULL;

    *(void **)&destroy = amp_real(&fn, AMP_CUDA_SONAME, "cuStreamDestroy_v2");
    if (!destroy)
        return CUDA_ERROR_NOT_FOUND;
    /* Before the stream goes, while work can still be queued on it. */
    if (amp_dev_any())
        amp_dev_stream_ending(stream);
    return destroy(stream);
}

/* A graph's calls are carried over to each executable graph made from it
 * (the driver's own status returned as is). */
AMP_EXPORT CUresult
cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                            unsigned long long flags)
{
    static void *fn;
    CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long) =
        NULL;
    CUresult r;

    *(void **)&instantiate = amp_real(&fn, AMP_CUDA_SONAME,
                                      "cuGraphInstantiateWithFlags");
    if (!instantiate)
        return CUDA_ERROR_NOT_FOUND;
    r = instantiate(phGraphExec, hGraph, flags);
    if (r == CUDA_SUCCESS && phGraphExec && amp_replay_any())
        amp_replay_instantiated(hGraph, *phGraphExec);
    return r;
}

AMP_EXPORT CUresult
cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                             CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    static void *fn;
    CUresult (*instantiate)(CUgraphExec *, CUgraph,
                            CUDA_GRAPH_INSTANTIATE_PARAMS *) = NULL;
    CUresult r;

    *(void **)&instantiate = amp_real(&fn, AMP_CUDA_SONAME,
                                      "cuGraphInstantiateWithParams");
    if (!instantiate)
        return CUDA_ERROR_NOT_FOUND;
    r = instantiate(phGraphExec, hGraph, instantiateParams);
    if (r == CUDA_SUCCESS && phGraphExec && amp_replay_any())
        amp_replay_instantiated(hGraph, *phGraphExec);
    return r;
}

/* An update gives the executable graph the calls of the graph it takes
 * its parameters from (a framework that records a step again with new
 * buffers and updates its executable graph in place). */
AMP_EXPORT CUresult
cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                     CUgraphExecUpdateResultInfo *resultInfo)
{
    static void *fn;
    CUresult (*update)(CUgraphExec, CUgraph,
                       CUgraphExecUpdateResultInfo *) = NULL;
    CUresult r;

    *(void **)&update = amp_real(&fn, AMP_CUDA_SONAME, "cuGraphExecUpdate_v2");
    if (!update)
        return CUDA_ERROR_NOT_FOUND;
    r = update(hGraphExec, hGraph, resultInfo);
    if (r == CUDA_SUCCESS && amp_replay_any())
        amp_replay_updated(hGraph, hGraphExec);
    else if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE && amp_replay_any())
        amp_replay_update_failed(hGraph, hGraphExec);
    return r;
}

/* A child graph node clones the child: the parent gains its calls. */
AMP_EXPORT CUresult
cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                         const CUgraphNode *dependencies,
                         size_t numDependencies, CUgraph childGraph)
{
    static void *fn;
    CUresult (*add)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                    CUgraph) = NULL;
    CUresult r;

    *(void **)&add = amp_real(&fn, AMP_CUDA_SONAME, "cuGraphAddChildGraphNode");
    if (!add)
        return CUDA_ERROR_NOT_FOUND;
    r = add(phGraphNode, hGraph, dependencies, numDependencies, childGraph);
    if (r == CUDA_SUCCESS && amp_replay_any())
        amp_replay_child(hGraph, childGraph);
    return r;
}

/* A launch replays the executable graph's captured calls: counted. The
 * driver's launch `name`, its real function cached in *fn. */
static CUresult
amp_graph_launch(void **fn, const char *name, CUgraphExec exec,
                 CUstream stream)
{
    CUresult (*launch)(CUgraphExec, CUstream) = NULL;
    CUresult r;

    *(void **)&launch = amp_real(fn, AMP_CUDA_SONAME, name);
    if (!launch)
        return CUDA_ERROR_NOT_FOUND;
    r = launch(exec, stream);
    if (r == CUDA_SUCCESS && amp_replay_any())
        amp_replay_launched(exec);
    return r;
}

AMP_EXPORT CUresult
cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    static void *fn;

    return amp_graph_launch(&fn, "cuGraphLaunch", hGraphExec, hStream);
}

/* The same for a program built with --default-stream per-thread (or a
 * runtime that asked cuGetProcAddress for per-thread versions). */
AMP_EXPORT CUresult
cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    static void *fn;

    return amp_graph_launch(&fn, "cuGraphLaunch_ptsz", hGraphExec, hStream);
}

/* A clone is a copy of the graph as it is: it has the graph's calls. */
AMP_EXPORT CUresult
cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    static void *fn;
    CUresult (*clone)(CUgraph *, CUgraph) = NULL;
    CUresult r;

    *(void **)&clone = amp_real(&fn, AMP_CUDA_SONAME, "cuGraphClone");
    if (!clone)
        return CUDA_ERROR_NOT_FOUND;
    r = clone(phGraphClone, originalGraph);
    if (r == CUDA_SUCCESS && phGraphClone && amp_replay_any())
        amp_replay_cloned(*phGraphClone, originalGraph);
    return r;
}

AMP_EXPORT CUresult
cuGraphDestroy(CUgraph hGraph)
{
    static void *fn;
    CUresult (*destroy)(CUgraph) = NULL;
    CUresult r;

    *(void **)&destroy = amp_real(&fn, AMP_CUDA_SONAME, "cuGraphDestroy");
    if (!destroy)
        return CUDA_ERROR_NOT_FOUND;
    r = destroy(hGraph);
    if (r == CUDA_SUCCESS && amp_replay_any())
        amp_replay_gone(hGraph);
    return r;
}

AMP_EXPORT CUresult
cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    static void *fn;
    CUresult (*destroy)(CUgraphExec) = NULL;
    CUresult r;

    *(void **)&destroy = amp_real(&fn, AMP_CUDA_SONAME, "cuGraphExecDestroy");
    if (!destroy)
        return CUDA_ERROR_NOT_FOUND;
    r = destroy(hGraphExec);
    if (r == CUDA_SUCCESS && amp_replay_any())
        amp_replay_gone(hGraphExec);
    return r;
}

/* The shared runtime's graph calls (it takes the driver's own functions
 * as it loads, never the hooks above), each routed as cudaDeviceReset. */
static const char amp_instantiate_name[] = "cudaGraphInstantiate";
static const char amp_instantiate_flags_name[] =
    "cudaGraphInstantiateWithFlags";
static const char amp_instantiate_params_name[] =
    "cudaGraphInstantiateWithParams";
static const char amp_update_name[] = "cudaGraphExecUpdate";
static const char amp_child_name[] = "cudaGraphAddChildGraphNode";
static const char amp_launch_name[] = "cudaGraphLaunch";
static const char amp_launch_ptsz_name[] = "cudaGraphLaunch_ptsz";
static const char amp_clone_name[] = "cudaGraphClone";
static const char amp_graph_destroy_name[] = "cudaGraphDestroy";
static const char amp_exec_destroy_name[] = "cudaGraphExecDestroy";

AMP_EXPORT cudaError_t
cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                     unsigned long long flags)
{
    static void *fn;
    cudaError_t (*instantiate)(cudaGraphExec_t *, cudaGraph_t,
                               unsigned long long) = NULL;
    cudaError_t e;

    *(void **)&instantiate = amp_runtime(&fn, amp_instantiate_name,
                                         __builtin_return_address(0));
    if (!instantiate)
        return cudaErrorSymbolNotFound;
    e = instantiate(pGraphExec, graph, flags);
    if (e == cudaSuccess && pGraphExec && amp_replay_any())
        amp_replay_instantiated(graph, *pGraphExec);
    return e;
}

/* PyTorch's CUDAGraph::capture_end instantiates with flags
 * (cudaGraphInstantiateFlagAutoFreeOnLaunch). */
AMP_EXPORT cudaError_t
cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                              unsigned long long flags)
{
    static void *fn;
    cudaError_t (*instantiate)(cudaGraphExec_t *, cudaGraph_t,
                               unsigned long long) = NULL;
    cudaError_t e;

    *(void **)&instantiate = amp_runtime(&fn, amp_instantiate_flags_name,
                                         __builtin_return_address(0));
    if (!instantiate)
        return cudaErrorSymbolNotFound;
    e = instantiate(pGraphExec, graph, flags);
    if (e == cudaSuccess && pGraphExec && amp_replay_any())
        amp_replay_instantiated(graph, *pGraphExec);
    return e;
}

AMP_EXPORT cudaError_t
cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                               cudaGraphInstantiateParams *instantiateParams)
{
    static void *fn;
    cudaError_t (*instantiate)(cudaGraphExec_t *, cudaGraph_t,
                               cudaGraphInstantiateParams *) = NULL;
    cudaError_t e;

    *(void **)&instantiate = amp_runtime(&fn, amp_instantiate_params_name,
                                         __builtin_return_address(0));
    if (!instantiate)
        return cudaErrorSymbolNotFound;
    e = instantiate(pGraphExec, graph, instantiateParams);
    if (e == cudaSuccess && pGraphExec && amp_replay_any())
        amp_replay_instantiated(graph, *pGraphExec);
    return e;
}

AMP_EXPORT cudaError_t
cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                    cudaGraphExecUpdateResultInfo *resultInfo)
{
    static void *fn;
    cudaError_t (*update)(cudaGraphExec_t, cudaGraph_t,
                          cudaGraphExecUpdateResultInfo *) = NULL;
    cudaError_t e;

    *(void **)&update = amp_runtime(&fn, amp_update_name,
                                    __builtin_return_address(0));
    if (!update)
        return cudaErrorSymbolNotFound;
    e = update(hGraphExec, hGraph, resultInfo);
    if (e == cudaSuccess && amp_replay_any())
        amp_replay_updated(hGraph, hGraphExec);
    else if (e == cudaErrorGraphExecUpdateFailure && amp_replay_any())
        amp_replay_update_failed(hGraph, hGraphExec);
    return e;
}

AMP_EXPORT cudaError_t
cudaGraphAddChildGraphNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                           const cudaGraphNode_t *pDependencies,
                           size_t numDependencies, cudaGraph_t childGraph)
{
    static void *fn;
    cudaError_t (*add)(cudaGraphNode_t *, cudaGraph_t,
                       const cudaGraphNode_t *, size_t, cudaGraph_t) = NULL;
    cudaError_t e;

    *(void **)&add = amp_runtime(&fn, amp_child_name,
                                 __builtin_return_address(0));
    if (!add)
        return cudaErrorSymbolNotFound;
    e = add(pGraphNode, graph, pDependencies, numDependencies, childGraph);
    if (e == cudaSuccess && amp_replay_any())
        amp_replay_child(graph, childGraph);
    return e;
}

/* The runtime's launch `name` (cached in *fn) for the hook called from
 * `caller`: counted as the driver's. */
static cudaError_t
amp_runtime_graph_launch(void **fn, const char *name, const void *caller,
                         cudaGraphExec_t exec, cudaStream_t stream)
{
    cudaError_t (*launch)(cudaGraphExec_t, cudaStream_t) = NULL;
    cudaError_t e;

    *(void **)&launch = amp_runtime(fn, name, caller);
    if (!launch)
        return cudaErrorSymbolNotFound;
    e = launch(exec, stream);
    if (e == cudaSuccess && amp_replay_any())
        amp_replay_launched(exec);
    return e;
}

AMP_EXPORT cudaError_t
cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    static void *fn;

    return amp_runtime_graph_launch(&fn, amp_launch_name,
                                    __builtin_return_address(0), graphExec,
                                    stream);
}

AMP_EXPORT cudaError_t
cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    static void *fn;

    return amp_runtime_graph_launch(&fn, amp_launch_ptsz_name,
                                    __builtin_return_address(0), graphExec,
                                    stream);
}

AMP_EXPORT cudaError_t
cudaGraphClone(cudaGraph_t *pGraphClone, cudaGraph_t originalGraph)
{
    static void *fn;
    cudaError_t (*clone)(cudaGraph_t *, cudaGraph_t) = NULL;
    cudaError_t e;

    *(void **)&clone = amp_runtime(&fn, amp_clone_name,
                                   __builtin_return_address(0));
    if (!clone)
        return cudaErrorSymbolNotFound;
    e = clone(pGraphClone, originalGraph);
    if (e == cudaSuccess && pGraphClone && amp_replay_any())
        amp_replay_cloned(*pGraphClone, originalGraph);
    return e;
}

AMP_EXPORT cudaError_t
cudaGraphDestroy(cudaGraph_t graph)
{
    static void *fn;
    cudaError_t (*destroy)(cudaGraph_t) = NULL;
    cudaError_t e;

    *(void **)&destroy = amp_runtime(&fn, amp_graph_destroy_name,
                                     __builtin_return_address(0));
    if (!destroy)
        return cudaErrorSymbolNotFound;
    e = destroy(graph);
    if (e == cudaSuccess && amp_replay_any())
        amp_replay_gone(graph);
    return e;
}

AMP_EXPORT cudaError_t
cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    static void *fn;
    cudaError_t (*destroy)(cudaGraphExec_t) = NULL;
    cudaError_t e;

    *(void **)&destroy = amp_runtime(&fn, amp_exec_destroy_name,
                                     __builtin_return_address(0));
    if (!destroy)
        return cudaErrorSymbolNotFound;
    e = destroy(graphExec);
    if (e == cudaSuccess && amp_replay_any())
        amp_replay_gone(graphExec);
    return e;
}

/* The driver's entry points that have a hook here, with the driver's own
 * definition of each (resolved on first use). */
static struct {
    const char *name;
    void (*hook)(void);
    void *real;
} amp_driver_hooks[] = {
#define AMP_DRIVER_HOOK_ENTRY(name) {#name, (void (*)(void))name, NULL},
    AMP_CUDA_DRIVER_HOOKED(AMP_DRIVER_HOOK_ENTRY)
#undef AMP_DRIVER_HOOK_ENTRY
};

/* The runtime's functions that dlsym on its handle answers with a hook. */
static const struct {
    const char *name;
    void (*hook)(void);
} amp_runtime_hooks[] = {
#define AMP_RUNTIME_HOOK_ENTRY(name) {#name, (void (*)(void))name},
    AMP_CUDA_RUNTIME_HOOKED(AMP_RUNTIME_HOOK_ENTRY)
#undef AMP_RUNTIME_HOOK_ENTRY
};

#define AMP_DRIVER_NHOOKS (sizeof amp_driver_hooks / sizeof *amp_driver_hooks)

static void *
amp_hook_address(size_t i)
{
    void *hook;

    memcpy(&hook, &amp_driver_hooks[i].hook, sizeof hook);
    return hook;
}

void *amp_cuda_hook_of(const char *name, const void *fn)
    __attribute__((visibility("hidden")));

/* 1 when fn is defined in the object whose soname is `soname`. */
static int
amp_defined_in(const void *fn, const char *soname)
{
    const char *in = amp_object_soname_at(fn);

    return in && strcmp(in, soname) == 0;
}

/* The hook of the driver's function `name` (its exported, versioned name)
 * when fn is the driver's definition (in libcuda.so.1), or of the
 * runtime's when fn is the runtime's (libcudart.so.13, the release the
 * shim hooks; another release's is its own), else NULL. For dlsym on
 * their handles, which decides whether the caller gets it (this starts
 * nothing: it is asked on every lookup). */
void *
amp_cuda_hook_of(const char *name, const void *fn)
{
    void *hook;
    size_t i;

    if (!name || !fn)
        return NULL;
    for (i = 0; i < AMP_DRIVER_NHOOKS; i++)
        if (strcmp(amp_driver_hooks[i].name, name) == 0)
            return amp_defined_in(fn, AMP_CUDA_SONAME) ? amp_hook_address(i)
                                                       : NULL;
    for (i = 0; i < sizeof amp_runtime_hooks / sizeof *amp_runtime_hooks;
         i++) {
        if (strcmp(amp_runtime_hooks[i].name, name) != 0)
            continue;
        if (!amp_defined_in(fn, AMP_CUDART_SONAME))
            return NULL;
        memcpy(&hook, &amp_runtime_hooks[i].hook, sizeof hook);
        return hook;
    }
    return NULL;
}

/* What cuGetProcAddress hands out for `symbol` (a base name, as the
 * driver takes it) found at fn: the hook when fn is the driver's own
 * definition of a hooked function's version, else fn. */
static void *
amp_cuda_hook_for(const char *symbol, void *fn)
{
    size_t i, n = strlen(symbol);

    if (amp_shim_config()->disabled)
        return fn;
    for (i = 0; i < AMP_DRIVER_NHOOKS; i++) {
        const char *name = amp_driver_hooks[i].name;

        if (strncmp(name, symbol, n) != 0 ||
            (name[n] != '\0' && name[n] != '_'))
            continue;
        if (amp_real(&amp_driver_hooks[i].real, AMP_CUDA_SONAME, name) == fn)
            return amp_hook_address(i);
    }
    return fn;
}

/* cuGetProcAddress: the driver's answer, with the driver's definitions of
 * the hooked functions replaced by their hooks (the documented contract
 * otherwise: CUDA_SUCCESS with *pfn NULL when the symbol is not found). */
AMP_EXPORT CUresult
cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                    cuuint64_t flags,
                    CUdriverProcAddressQueryResult *symbolStatus)
{
    static void *fn;
    CUresult (*get)(const char *, void **, int, cuuint64_t,
                    CUdriverProcAddressQueryResult *) = NULL;
    CUresult r;

    *(void **)&get = amp_real(&fn, AMP_CUDA_SONAME, "cuGetProcAddress_v2");
    if (!get)
        return CUDA_ERROR_NOT_FOUND;
    r = get(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && symbol && pfn && *pfn)
        *pfn = amp_cuda_hook_for(symbol, *pfn);
    return r;
}
